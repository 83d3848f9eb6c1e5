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
