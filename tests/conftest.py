"""The suite's own plugin (timing every run and spreading it over the workers), and the
suite's own parsed-task cache."""

import atexit
import os
import shutil
import tempfile

pytest_plugins = ["tests.suite_plugin"]

# The suite's parsed-task cache is its own, made for the run and removed after it:
# tests load task files from thousands of temporary folders, whose entries would pile
# up in the user's cache. Set before xdist starts its workers, which inherit it; a
# test of the cache sets its own.
if "DESKLOOP_TASK_CACHE" not in os.environ:
    _task_cache = tempfile.mkdtemp(prefix="dl-test-task-cache-")
    os.environ["DESKLOOP_TASK_CACHE"] = _task_cache
    atexit.register(shutil.rmtree, _task_cache, True)
