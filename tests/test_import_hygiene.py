"""Only the UI package may import Textual, and not its services: the domain and the
screens' services run headless."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import app

ROOT = Path(__file__).resolve().parent.parent


def headless_modules() -> list[str]:
    """Every module outside app.ui, and app.ui's services (the screens' headless part)."""
    names = [
        info.name
        for info in pkgutil.walk_packages(app.__path__, prefix="app.")
        if not info.name.endswith("__main__")
        and (not info.name.startswith("app.ui") or info.name.startswith("app.ui.services"))
    ]
    assert "app.episode.runner" in names and "app.cli" in names
    assert "app.ui.services.episode" in names and "app.ui.app" not in names
    return names


def test_no_headless_module_imports_textual() -> None:
    modules = headless_modules()
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]", f"textual imported by a headless module: {out.stdout}"


def loaded_after(statement: str, names: list[str]) -> list[str]:
    """Which of the top-level modules `names` a fresh interpreter holds after `statement`."""
    code = f"import sys\n{statement}\nprint(*(n for n in {names!r} if n in sys.modules))\n"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return out.stdout.split()


def test_the_tui_starts_without_what_its_first_screen_does_not_use() -> None:
    # The TUI's first screen (and `tasks list`) imported pandas through sqlite-utils and
    # the libvirt backend through the desktop listing: 0.4 s of CPU before any task
    # showed. They load when used (a listing, an action), never at start; so do the
    # other screens, the episode runner and the model clients (0.35 s more).
    heavy = ["pandas", "libvirt", "paramiko"]
    later = ["app.ui.screens.live", "app.ui.screens.author", "app.episode.runner", "httpx"]
    assert loaded_after("import app.ui.app", heavy + later) == []
    assert loaded_after("import app.cli.tasks_cmd, app.tasks.loader", heavy) == []
    # The store's way of keeping pandas out leaves it importable.
    assert loaded_after("import app.store, pandas", heavy) == ["pandas"]
