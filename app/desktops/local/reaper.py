"""Nothing left behind: find and kill every process of a local desktop, remove its files.

Every process a local desktop starts carries a marker in its environment
(`DESKLOOP_DESKTOP=<id>`) plus the pid and start time of the DeskLoop process that
owns it. That survives double forks and `setsid`, which process groups do not.

Run as a script (``python reaper.py --marker ID --dir SESSION_DIR``) this module is
the per-desktop watchdog: it blocks reading stdin, a pipe whose only writer is the
owning DeskLoop process. When the owner dies — even by SIGKILL — the kernel closes
that pipe, the read returns EOF, and the watchdog kills every marked process and
removes the session directory.

This file must import only the standard library and `app.core.procfs` (itself
standard library only): it runs with `python -I` by path, so it starts fast and does
not depend on how `app` is installed. Run so, it finds `app` three folders up.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

if not __package__:  # run by path as the watchdog: `app` is three folders up
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from app.core.procfs import (
    OWNER_FILE,
    all_pids,
    process_environ,
    process_parent,
    process_start_time,
)

MARKER_ENV = "DESKLOOP_DESKTOP"
OWNER_PID_ENV = "DESKLOOP_OWNER_PID"
OWNER_START_ENV = "DESKLOOP_OWNER_START"
SESSION_DIR_ENV = "DESKLOOP_SESSION_DIR"
SESSION_PREFIX = "deskloop-"


def marked_processes(marker: str) -> list[int]:
    """Pids of live processes whose environment carries `DESKLOOP_DESKTOP=marker`, and
    of every descendant of one: a program may write over its own environment
    (Chromium writes its process titles there), and its children inherit that."""
    me = os.getpid()
    pids = all_pids()
    marked = {pid for pid in pids if pid != me and process_environ(pid).get(MARKER_ENV) == marker}
    children: dict[int, list[int]] = {}
    for pid in pids:
        parent = process_parent(pid)
        if parent is not None:
            children.setdefault(parent, []).append(pid)
    found = set(marked)
    todo = list(marked)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found and child != me:
                found.add(child)
                todo.append(child)
    return sorted(found)


def _signal_all(pids: Iterable[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def kill_marked(marker: str, grace: float = 1.0, deadline: float = 10.0) -> list[int]:
    """Kill every process carrying `marker`: SIGTERM, then SIGKILL after `grace` seconds.

    Repeats until none is left (a dying process may have forked) or `deadline`
    seconds have passed. Returns every pid that was signalled.
    """
    killed: set[int] = set()
    # Unmarked descendants, once seen, are followed by pid and start time: when their
    # marked parent dies first they are re-parented and no longer look like ours.
    seen: dict[int, str] = {}

    def ours() -> list[int]:
        pids = set(marked_processes(marker))
        for pid in pids:
            start = process_start_time(pid)
            if start is not None:
                seen.setdefault(pid, start)
        pids |= {pid for pid, start in seen.items() if process_start_time(pid) == start}
        return sorted(pids)

    end = time.monotonic() + deadline
    while time.monotonic() < end:
        pids = ours()
        if not pids:
            break
        killed.update(pids)
        _signal_all(pids, signal.SIGTERM)
        grace_end = min(end, time.monotonic() + grace)
        while time.monotonic() < grace_end:
            pids = ours()
            if not pids:
                break
            time.sleep(0.02)
        _signal_all(pids, signal.SIGKILL)
    return sorted(killed)


def remove_session_dir(path: Path) -> None:
    """Remove a desktop's session directory; only one that looks like ours."""
    if path.name.startswith(SESSION_PREFIX) and (path / OWNER_FILE).exists():
        shutil.rmtree(path, ignore_errors=True)


def _owner_alive(pid_text: str, start: str) -> bool:
    try:
        pid = int(pid_text)
    except ValueError:
        return False
    return process_start_time(pid) == start


def reap_orphans(root: Path | None = None) -> list[int]:
    """Kill leftovers of DeskLoop processes that died, and remove their session dirs.

    A leftover is a process with a desktop marker whose owner (pid + start time in
    its environment) no longer exists. Session directories under `root` (default:
    the system temp dir) whose owner file names a dead process are removed too.
    Returns the pids that were signalled.
    """
    orphan_markers: dict[str, str] = {}
    for pid in all_pids():
        env = process_environ(pid)
        marker = env.get(MARKER_ENV)
        if marker is None:
            continue
        if not _owner_alive(env.get(OWNER_PID_ENV, ""), env.get(OWNER_START_ENV, "")):
            orphan_markers[marker] = env.get(SESSION_DIR_ENV, "")
    killed: list[int] = []
    for marker, session_dir in orphan_markers.items():
        killed.extend(kill_marked(marker))
        if session_dir:
            remove_session_dir(Path(session_dir))
    base = root if root is not None else Path(tempfile.gettempdir())
    try:
        candidates = list(base.glob(SESSION_PREFIX + "*"))
    except OSError:
        candidates = []
    for path in candidates:
        try:
            pid_text, start = (path / OWNER_FILE).read_text().split()
        except (OSError, ValueError):
            continue
        if not _owner_alive(pid_text, start):
            remove_session_dir(path)
    return killed


def _watch(marker: str, session_dir: Path) -> None:
    # Terminal signals (Ctrl-C to the whole foreground group) must not stop the
    # watchdog before the owner is gone: only EOF on stdin ends the wait.
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    stdin = sys.stdin.buffer
    while stdin.read(4096):
        pass
    kill_marked(marker)
    remove_session_dir(session_dir)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="DeskLoop local desktop watchdog")
    parser.add_argument("--marker", required=True)
    parser.add_argument("--dir", required=True, type=Path)
    args = parser.parse_args(argv)
    _watch(args.marker, args.dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
