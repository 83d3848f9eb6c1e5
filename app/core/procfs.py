"""Processes as Linux's /proc shows them: start times (a pid plus its start time names
one process for good) and the DESKLOOP_* variables a process was started with.

Standard library only: the desktop watchdog (app/desktops/reaper.py) runs by path
with `python -I` and imports this module (and the two package docstrings above it).
"""

from __future__ import annotations

import os
from pathlib import Path


def process_start_time(pid: int) -> str | None:
    """The kernel's start time of `pid` (clock ticks since boot), or None if it is gone.

    Together with the pid it names one process for good: a recycled pid gets a new
    start time.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses: split after its ')'.
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


def process_environ(pid: int) -> dict[str, str]:
    """The environment `pid` was started with; {} for zombies and unreadable processes."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    env: dict[str, str] = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep and key.startswith(b"DESKLOOP_"):
            env[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    return env


def all_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]
