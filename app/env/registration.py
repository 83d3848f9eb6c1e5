"""Gymnasium ids for tasks: ``DeskLoop/<task id>-v0``.

`register_tasks()` registers every task file of a folder, by default the library
this checkout ships (``tasks/``); importing `app.env` registers the library, so
``gymnasium.make("DeskLoop/gimp-flip-export-v0")`` works after ``import app.env``,
and ``gymnasium.make("app.env:DeskLoop/gimp-flip-export-v0")`` works without it.
Only file names are read here: a task is loaded and validated when it is made.
"""

from __future__ import annotations

from pathlib import Path

import gymnasium
from gymnasium.envs.registration import registry

from app.tasks.loader import task_files

NAMESPACE = "DeskLoop"
VERSION = 0
LIBRARY = Path(__file__).resolve().parents[2] / "tasks"
"""The task library next to the `app` package (absent from an installed wheel)."""
ENTRY_POINT = "app.env:DeskLoopEnv"


def env_id(task_id: str) -> str:
    """The Gymnasium id of a task: ``DeskLoop/gimp-flip-export-v0``."""
    return f"{NAMESPACE}/{task_id}-v{VERSION}"


def register_tasks(tasks_dir: Path | str = LIBRARY) -> list[str]:
    """Register each task under `tasks_dir` (a library folder, an app folder or one
    file) with Gymnasium; return their ids.

    Registering a file again does nothing; another file with an id already taken
    replaces it (Gymnasium warns that it overrides the id).

    Raises:
        TaskError: `tasks_dir` does not exist.
    """
    ids = []
    for path in task_files(tasks_dir):
        name = env_id(path.stem)  # the loader holds every task's id to its file name
        kwargs = {"task": str(path.resolve())}
        known = registry.get(name)
        if known is None or known.entry_point != ENTRY_POINT or known.kwargs != kwargs:
            gymnasium.register(
                name,
                entry_point=ENTRY_POINT,
                # A live desktop: two resets with one seed differ in a clock, a cursor
                # blink or an episode id, so Gymnasium must not expect equal results.
                nondeterministic=True,
                kwargs=kwargs,
            )
        ids.append(name)
    return ids
