"""The start state a demonstration is recorded from, written as a task's setup.

Either an existing task's start state (`--from TASK`: its setup steps, its upload
sources copied along), or the app opened on some files (`--assets FILE...`: each file
uploaded to the app's usual folder, then the app launched on the ones it opens). The
start state is kept in the recording folder as ``start/<id>.yaml``, a task file with
its assets beside it, so the recording can be replayed and drafted into a task later
without the files it came from.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from app.core.validation import read_yaml
from app.tasks.loader import parse_task, resolve_asset
from app.tasks.model import APPS, Task, UploadStep

START_DIR = "start"

# Where each app's files go in the home, and how the app is started on them. The same
# command lines as the library's tasks (FIELD_NOTES: software GL for Blender).
ASSET_FOLDER = {"gimp": "~/Desktop", "blender": "~/Desktop", "kdenlive": "~/Videos"}
AUTHOR_APPS = tuple(ASSET_FOLDER)
"""The apps a task can be authored for by demonstration (web tasks are written by hand)."""
OPENS = {
    "gimp": (".png", ".jpg", ".jpeg", ".xcf", ".tif", ".tiff", ".webp", ".bmp", ".gif"),
    "blender": (".blend",),
    "kdenlive": (".kdenlive",),
}
LAUNCH = {
    "gimp": ["gimp", "-n", "--no-splash"],
    "blender": ["env", "LIBGL_ALWAYS_SOFTWARE=1", "blender", "--factory-startup"],
    "kdenlive": ["kdenlive"],
}
WINDOW = {
    "gimp": {"name": "GIMP$|^GNU Image Manipulation Program$", "timeout": 90},
    "blender": {"name": "^Blender", "timeout": 120},
    "kdenlive": {"class": "kdenlive", "timeout": 90},
}
# Placeholder checks of the start file: it is a task only so that setup can run.
_PLACEHOLDER_EVALUATE = {"check": "file_not_exists", "path": "~/.deskloop-start-state"}


class StartStateError(ValueError):
    """A start state cannot be made: the message names the file or option."""


@dataclass(frozen=True)
class StartState:
    task: Task
    """The start file as a task (its setup is the start state)."""
    assets: tuple[str, ...]
    """The uploaded files' names in the home (``~/Desktop/photo.png``)."""


def _safe_name(name: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name) or ".." in name:
        raise StartStateError(
            f"{name!r}: asset names may hold letters, digits, '.', '_' and '-' only"
        )
    return name


def assets_setup(app: str, assets: list[Path]) -> tuple[list[dict[str, Any]], list[str]]:
    """Setup steps that upload `assets` and open the app on those it opens, and the
    assets' places in the home. Sources are named ``assets/<file name>``."""
    if app not in ASSET_FOLDER:
        # Web tasks (app: web) are written by hand: their page is a folder, not a file.
        raise StartStateError(
            f"--app: {app!r} is not one of {', '.join(ASSET_FOLDER)} (authoring by "
            f"demonstration; known apps: {', '.join(APPS)})"
        )
    folder = ASSET_FOLDER[app]
    steps: list[dict[str, Any]] = []
    opened: list[str] = []
    homes: list[str] = []
    names = [_safe_name(path.name) for path in assets]
    if len(set(names)) != len(names):
        raise StartStateError("--assets: two files have the same name")
    for name in names:
        dest = f"{folder}/{name}"
        steps.append({"upload": {"src": f"assets/{name}", "dest": dest}})
        homes.append(dest)
        if name.lower().endswith(OPENS[app]):
            opened.append(dest)
    if app != "gimp":
        opened = opened[:1]  # Blender and Kdenlive open one file
    steps.append({"launch": [*LAUNCH[app], *opened]})
    steps.append({"wait_window": dict(WINDOW[app])})
    return steps, homes


def write_start_state(
    folder: Path,
    *,
    task_id: str,
    app: str | None = None,
    assets: list[Path] | None = None,
    from_task: Task | None = None,
) -> StartState:
    """Write ``start/<task_id>.yaml`` (and its assets) into the recording `folder`.

    Raises:
        StartStateError: a missing asset, a bad name, no app.
    """
    start = folder / START_DIR
    (start / "assets").mkdir(parents=True, exist_ok=True)
    if from_task is not None:
        setup, homes = _copy_task_setup(from_task, start)
        app = from_task.app
    else:
        if app is None:
            raise StartStateError("--app is needed unless --from names a task")
        for path in assets or []:
            if not path.is_file():
                raise StartStateError(f"--assets: {path}: no such file")
        setup, homes = assets_setup(app, list(assets or []))
        for path in assets or []:
            shutil.copyfile(path, start / "assets" / path.name)
    raw = {
        "id": task_id,
        "app": app,
        "level": "L3",
        "title": f"start state of {task_id}",
        "instruction": "(being recorded)",
        "setup": setup,
        "evaluate": _PLACEHOLDER_EVALUATE,
    }
    path = start / f"{task_id}.yaml"
    text = yaml.safe_dump(raw, sort_keys=False, allow_unicode=True)
    path.write_text(text, encoding="utf-8")
    return StartState(parse_task(raw, path, text.encode()), tuple(homes))


def read_start_state(folder: Path) -> StartState:
    """The start state a recording was made from (``start/<id>.yaml``).

    Raises:
        StartStateError: the recording has no start file, or more than one.
        TaskError: the start file is not a valid task.
    """
    files = sorted((folder / START_DIR).glob("*.yaml"))
    if len(files) != 1:
        raise StartStateError(f"{folder / START_DIR}: expected one start file, found {len(files)}")
    path = files[0]
    raw, data = read_yaml(path, "start state")
    task = parse_task(raw, path, data)
    homes = tuple(s.upload.dest for s in task.setup if isinstance(s, UploadStep))
    return StartState(task, homes)


def _copy_task_setup(task: Task, start: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """`task`'s setup as raw steps, each upload's source copied into `start/assets`."""
    raw, _ = read_yaml(task.source, "task")
    steps: list[dict[str, Any]] = []
    homes: list[str] = []
    for step, raw_step in zip(task.setup, raw.get("setup") or [], strict=True):
        if isinstance(step, UploadStep):
            source = resolve_asset(task.folder, step.upload.src, "upload.src")
            name = _safe_name(source.name)
            if (start / "assets" / name).exists():
                raise StartStateError(f"{task.source}: two uploads are named {name}")
            shutil.copyfile(source, start / "assets" / name)
            raw_step = {"upload": {**raw_step["upload"], "src": f"assets/{name}"}}
            homes.append(step.upload.dest)
        steps.append(raw_step)
    return steps, homes
