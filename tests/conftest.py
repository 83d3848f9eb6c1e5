"""The suite's own plugin: timing every run and spreading it over two workers."""

pytest_plugins = ["tests.suite_plugin"]
