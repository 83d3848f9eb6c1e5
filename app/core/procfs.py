"""Processes as Linux's /proc shows them: start times (a pid plus its start time names
one process for good) and the DESKLOOP_* variables a process was started with.

Standard library only: the desktop watchdog (app/desktops/local/reaper.py) runs by path
with `python -I` and imports this module (and the two package docstrings above it).
"""

from __future__ import annotations

import os
from pathlib import Path


def process_start_time(pid: int) -> str | None:
    """The kernel's start time of `pid` (clock ticks since boot), or None if it is gone.

    Together with the pid it names one process for good: a recycled pid gets a new
    start time. A zombie (dead, its exit status not yet collected by its parent) is
    gone: it holds nothing but its pid, and waiting for its reaping (up to 0.8 s,
    measured, for a killed desktop's processes) waits for nothing.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses: split after its ')'.
    fields = stat[stat.rfind(")") + 2 :].split()
    if not fields or fields[0] in ("Z", "X"):
        return None
    return fields[19] if len(fields) > 19 else None


OWNER_FILE = "owner"
"""In a folder DeskLoop leaves in the temporary directory: `PID START`, the process that
owns it. `deskloop desktops cleanup` removes the folder once that process is gone."""


def write_owner_file(folder: Path, pid: int | None = None) -> None:
    """Name the process that owns `folder` (this one by default), so a crash that skips
    its clean-up still leaves nothing for good."""
    owner = os.getpid() if pid is None else pid
    (folder / OWNER_FILE).write_text(f"{owner} {process_start_time(owner)}\n")


def process_parent(pid: int) -> int | None:
    """The parent pid of `pid`, or None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    return int(fields[1]) if len(fields) > 1 else None


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


def process_name(pid: int) -> str | None:
    """The command name of `pid` (/proc/PID/comm), or None if it is gone."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip() or None
    except OSError:
        return None


def write_lock_holders(path: Path | str, offset: int) -> list[int]:
    """The pids that hold a POSIX write lock over byte `offset` of the file at `path`.

    Read from /proc/locks, which names each lock's file by device and inode. Empty
    when the file is gone, nobody holds such a lock, or the holder is in another pid
    namespace (it shows there as pid 0 or -1, or not at all).
    """
    try:
        stat = os.stat(path)
        table = Path("/proc/locks").read_text()
    except OSError:
        return []
    where = f"{os.major(stat.st_dev):02x}:{os.minor(stat.st_dev):02x}:{stat.st_ino}"
    holders: list[int] = []
    for line in table.splitlines():
        # "1: POSIX  ADVISORY  WRITE 1234 fe:00:2147010 120 120"; a waiter's line
        # has "->" after the number and holds nothing.
        fields = line.split()
        if len(fields) < 8 or fields[1] == "->":
            continue
        _, kind, _, mode, pid, file, start, end = fields[:8]
        if kind != "POSIX" or mode != "WRITE" or file != where:
            continue
        try:
            first, last = int(start), (None if end == "EOF" else int(end))
            owner = int(pid)
        except ValueError:
            continue
        if owner > 0 and first <= offset and (last is None or offset <= last):
            holders.append(owner)
    return sorted(set(holders))


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def process_cpu_seconds(pid: int) -> float | None:
    """CPU time `pid` has used so far, user + system (seconds), or None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    # utime and stime are fields 14 and 15 of stat(5); 12 and 13 after the name.
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS if len(fields) > 12 else None


def process_rss_bytes(pid: int) -> int | None:
    """The resident memory of `pid` (bytes), or None if it is gone."""
    try:
        statm = Path(f"/proc/{pid}/statm").read_text().split()
    except OSError:
        return None
    return int(statm[1]) * PAGE_SIZE if len(statm) > 1 else None
