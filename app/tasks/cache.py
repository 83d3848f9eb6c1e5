"""The task cache: parsed, validated tasks kept between processes, so that a library of
a thousand tasks loads in a fraction of a second instead of being parsed again (YAML
parsing and the model's validation were nearly all of `tasks list`'s time).

What `load_task` reads, and how each part is covered:

- the task file's bytes and its path as given (the id must equal the file name, the
  app its folder; the task's `source` and `folder` are the path): an entry is named by
  the SHA-256 of the bytes, the path as given, the absolute path and the code key, so a
  changed byte, another path or another working folder finds no entry;
- the code that parses and validates (the model, the check trees and their parameter
  models, triggers, the YAML reader): the code key hashes the source of `app/tasks`,
  `app/checks` and `app/core`, and Python's and pydantic's versions, so an edited model
  invalidates every entry;
- the files the task names (upload sources, check assets, the reference, a web app's
  folder): validation only looks them up (that each exists inside the task folder and
  is a file; a web app's files and sizes), never reads them, and the loader does those
  lookups again on every load, hit or miss (once per library in `load_tasks`), so a
  removed, moved or escaping asset is reported exactly as without the cache.

Only tasks whose document and path have no problem are stored; a file with a problem
is parsed again each time, so its error is the loader's own, word for word. Entries
are pickles written to a temporary file and renamed into place (concurrent writers
leave one whole entry); an entry that cannot be read back, or does not hold what its
name promises, is ignored and written again. Entries live in
$DESKLOOP_CACHE/tasks (default ~/.cache/deskloop/tasks), a folder only its owner may
write: unpickling runs what the file names, so an entry is read only from such a folder
and only when this user wrote it. DESKLOOP_TASK_CACHE=off turns the cache off.
Nothing prunes old entries; the folder may be removed at any time.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import sys
from pathlib import Path

from app.core.files import write_atomic
from app.core.settings import read_settings
from app.tasks.model import Task

FORMAT = 1
"""Raised by hand when an entry's layout changes (the code key covers the rest)."""

CODE_PACKAGES = ("tasks", "checks", "core")
"""The packages under `app/` whose source decides what a task file loads as."""


def cache_root() -> Path:
    """The folder VM images use too (app/core/settings.py: Settings.cache_root)."""
    return read_settings().cache_root


@functools.cache
def code_key() -> str:
    """A hash of the code a task's loading depends on (see the module's docstring)."""
    return code_digest(Path(__file__).resolve().parents[1])


def code_digest(app_dir: Path) -> str:
    """The hash `code_key` computes, over the CODE_PACKAGES folders of `app_dir`."""
    import pydantic
    import yaml

    digest = hashlib.sha256(
        f"{FORMAT}\0{sys.version}\0{pydantic.VERSION}\0{yaml.__version__}".encode()
    )
    for package in CODE_PACKAGES:
        for path in sorted((app_dir / package).rglob("*.py")):
            digest.update(f"\0{path.relative_to(app_dir)}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


class TaskCache:
    """Tasks stored in `folder`, one file per (task file bytes, path, code)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def key(self, source: Path, data: bytes) -> str:
        """The entry's name for the task file `source` holding `data`."""
        parts = (
            code_key(),
            str(source),
            os.path.abspath(source),
            hashlib.sha256(data).hexdigest(),
        )
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    def path(self, key: str) -> Path:
        return self.folder / f"{key}.pickle"

    def get(self, source: Path, data: bytes) -> Task | None:
        """The cached task for `source` holding `data`; None when there is none or the
        entry cannot be used (unreadable, corrupt, or for another key)."""
        key = self.key(source, data)
        try:
            with open(self.path(key), "rb") as file:
                # Unpickling runs code the file names: only entries this user wrote, in
                # a folder no one else may write to, are read.
                if os.fstat(file.fileno()).st_uid != os.getuid() or not self._private():
                    return None
                stored = pickle.load(file)
        except FileNotFoundError:
            return None
        except Exception:  # a corrupt or foreign entry: rebuilt by the next put
            return None
        if (
            not isinstance(stored, tuple)
            or len(stored) != 2
            or stored[0] != key
            or not isinstance(stored[1], Task)
        ):
            return None
        task: Task = stored[1]
        return task

    def _private(self) -> bool:
        """Whether the folder is this user's and no one else may write to it (mkdir
        makes it so; a folder that existed before may be another's or shared)."""
        info = os.stat(self.folder)
        return info.st_uid == os.getuid() and not info.st_mode & 0o022

    def put(self, source: Path, data: bytes, task: Task) -> None:
        """Store `task`, loaded from `source` holding `data`. Never fails: a cache that
        cannot be written only makes the next load slower."""
        key = self.key(source, data)
        try:
            payload = pickle.dumps((key, task), protocol=pickle.HIGHEST_PROTOCOL)
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            if not self._private():
                return  # get() would never read it
            write_atomic(self.path(key), payload, mode=0o600)
        except Exception:  # a read-only or full disk: load without caching
            pass


def default_cache() -> TaskCache | None:
    """The user's task cache (DESKLOOP_TASK_CACHE: on, off, or a folder); None when off."""
    folder = read_settings().task_cache
    return None if folder is None else TaskCache(folder)
