"""What a VM guest recorded of the programs started in it and of who wrote which file,
read after an episode (integrity flags on the libvirt backend).

The image (vm_images/) turns on the kernel's process accounting at boot
(`deskloop-watch`: `accton /var/log/deskloop/pacct`) and runs `fatrace` as root, logging
every file write with the writer's pid (`/var/log/deskloop/writes.log`). Both logs are
readable, not writable, by the session user, and both are part of a saved start state
(memory and disk), so they carry on after a restore. After the agent ends, DeskLoop
reads them over the guest channel (SFTP and argv commands: `ps`, `find`), and this
module turns them into the `ExecRecord`s and `LastWrite`s the local backend gives, so
the same rules (app.episode.integrity) raise the same flags.

What the kernel records differs from the local exec trace:

- A record is written when a process **exits**, with its command name (`comm`, at
  most 15 characters), pid, parent pid, uid and start time (whole seconds), not its
  arguments. Processes still running at the end come from `ps`, with their command
  lines. A program is named by its path where its name is unambiguous: an executable
  of the task's app (`/usr/lib/gimp/...`, found with `find`) or one on the PATH.
- Only the session user's processes count (uid 1000): root's services are not the
  agent's. Processes descending from sshd are DeskLoop's own guest commands
  (xdotool, the scoring probes, an oracle's program) and are left out, as the local
  trace leaves out DeskLoop's.
- A process that forked and never exec'd (a subshell) is not a program start.
- Times are the guest's clock, moved onto the host's by the difference of the two
  when the logs are read (a restored guest's clock may run behind).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

from app.core.integrity import ExecLog, ExecRecord, LastWrite

PACCT = "/var/log/deskloop/pacct"
WRITES_LOG = "/var/log/deskloop/writes.log"
SESSION_UID = 1000
"""The guest's `user` (vm_images/configure.sh)."""
COMM_LEN = 15
PATH_DIRS = ("/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin")

# struct acct_v3 (linux/acct.h): flag, version, tty, exitcode, uid, gid, pid, ppid,
# btime (Unix seconds), etime (float), 8 comp_t counters, comm[16]: 64 bytes.
_ACCT_V3 = struct.Struct("<BBHIIIIIIf8H16s")
_AFORK = 0x01


@dataclass(frozen=True)
class AcctRecord:
    """One process that ended, as the kernel's accounting wrote it."""

    pid: int
    ppid: int
    uid: int
    start: float
    """Unix time the process began (whole seconds)."""
    comm: str
    forked_only: bool
    """It forked and never exec'd: not a program start of its own."""


@dataclass(frozen=True)
class LiveProcess:
    pid: int
    ppid: int
    uid: int
    start: float
    comm: str
    argv: tuple[str, ...]


def parse_pacct(data: bytes) -> list[AcctRecord]:
    """The v3 records of a process accounting file (a trailing partial record, being
    written as the file was read, is left out).

    Raises:
        ValueError: a record is not version 3 (the guest kernel writes v3).
    """
    records = []
    for offset in range(0, len(data) - _ACCT_V3.size + 1, _ACCT_V3.size):
        flag, version, _tty, _exit, uid, _gid, pid, ppid, btime, _etime, *rest = (
            _ACCT_V3.unpack_from(data, offset)
        )
        if version & 0x0F != 3:
            raise ValueError(f"process accounting record at byte {offset} is version {version}")
        comm = rest[-1].split(b"\0", 1)[0].decode("utf-8", "replace")
        records.append(AcctRecord(pid, ppid, uid, float(btime), comm, bool(flag & _AFORK)))
    return records


def parse_ps(stat: str, args: str, now: float) -> list[LiveProcess]:
    """`ps -e -o pid=,ppid=,uid=,etimes=,comm=` and `ps -e -o pid=,args=` together."""
    argv: dict[int, tuple[str, ...]] = {}
    for line in args.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and parts[0].isdigit():
            argv[int(parts[0])] = tuple(parts[1].split())
    live = []
    for line in stat.splitlines():
        parts = line.split(None, 4)
        if len(parts) != 5 or not all(p.isdigit() for p in parts[:4]):
            continue
        pid, ppid, uid, elapsed = (int(p) for p in parts[:4])
        live.append(
            LiveProcess(pid, ppid, uid, now - elapsed, parts[4], argv.get(pid, (parts[4],)))
        )
    return live


@dataclass(frozen=True)
class WriteEvent:
    time: float
    pid: int
    comm: str
    path: str


def parse_writes(text: str) -> list[WriteEvent]:
    """fatrace's `-tt` lines: `1733131234.123456 comm(1234): W   /path`."""
    events = []
    for line in text.splitlines():
        head, sep, path = line.partition(": ")
        if not sep:
            continue
        stamp, _, who = head.partition(" ")
        name, _, pid = who.rpartition("(")
        # The kinds are padded to a column: `W   /path`, `CWO /path`.
        kinds, _, target = path.partition(" ")
        target = target.lstrip(" ")
        if "W" not in kinds or not target or not pid.endswith(")"):
            continue
        try:
            events.append(WriteEvent(float(stamp), int(pid[:-1]), name, target))
        except ValueError:
            continue
    return events


class ProgramIndex:
    """Command names back to executable paths: the task's app's own programs (which
    the integrity rules recognise by their folder) and the PATH's."""

    def __init__(self, app_programs: Iterable[str], path_names: Iterable[str]) -> None:
        self._paths: dict[str, str] = {}
        for path in path_names:
            # The first directory of PATH_DIRS that has it, as the shell finds it.
            self._paths.setdefault(PurePosixPath(path).name[:COMM_LEN], path)
        # The app's own win over the PATH: a plug-in named like a tool is the plug-in.
        for path in app_programs:
            self._paths[PurePosixPath(path).name[:COMM_LEN]] = path

    def path(self, comm: str) -> str:
        return self._paths.get(comm, comm)

    def knows(self, comm: str) -> bool:
        return comm in self._paths


@dataclass(frozen=True)
class GuestWatchLog:
    """One reading of a guest's logs, turned into the local backend's shapes."""

    execs: tuple[ExecRecord, ...]
    writes: tuple[WriteEvent, ...]
    by_pid: Mapping[int, ExecRecord]

    def exec_log(self) -> ExecLog:
        return ExecLog(
            self.execs,
            True,
            "every program that ran in the guest as the session user, from the kernel's "
            "process accounting (names, not arguments, for programs that ended) and ps",
        )

    def last_write(self, path: str) -> LastWrite | None:
        for event in reversed(self.writes):
            if event.path == path:
                return LastWrite(event.time, event.pid, self.by_pid.get(event.pid))
        return None


def _descends_from_sshd(pid: int, parents: Mapping[int, tuple[int, str]]) -> bool:
    seen: set[int] = set()
    while pid in parents and pid not in seen:
        seen.add(pid)
        ppid, comm = parents[pid]
        if comm == "sshd":
            return True
        pid = ppid
    return False


def parse_threads(text: str) -> dict[int, int]:
    """`ps -e -L -o lwp=,pid=`: each live thread's id → its process's id."""
    threads: dict[int, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and all(p.isdigit() for p in parts):
            threads[int(parts[0])] = int(parts[1])
    return threads


def build_log(
    records: Iterable[AcctRecord],
    live: Iterable[LiveProcess],
    writes: Iterable[WriteEvent],
    index: ProgramIndex,
    clock_offset: float = 0.0,
    threads: Mapping[int, int] | None = None,
) -> GuestWatchLog:
    """The session user's program starts (DeskLoop's own commands left out) and the
    writes, each write's pid resolved to its program where known. `clock_offset`
    (host time minus the guest's) puts the guest's times on the host's clock: a
    restored guest whose clock was not set (the guest agent is best effort) runs
    behind by as long as its state was saved, and the flags compare with host time.
    `threads` (thread id → process id) names a write's process when fatrace gave the
    id of the thread that wrote (GIMP exports from its `gmain` thread)."""
    records = [replace(r, start=r.start + clock_offset) for r in records]
    threads = threads or {}
    writes = [replace(w, time=w.time + clock_offset, pid=threads.get(w.pid, w.pid)) for w in writes]
    live = list(live)
    parents: dict[int, tuple[int, str]] = {}
    for r in records:
        parents[r.pid] = (r.ppid, r.comm)
    for p in live:
        parents[p.pid] = (p.ppid, p.comm)
    execs: list[ExecRecord] = []
    by_pid: dict[int, ExecRecord] = {}
    ours: dict[int, bool] = {}

    def counted(pid: int, uid: int) -> bool:
        if uid != SESSION_UID:
            return False
        if pid not in ours:
            ours[pid] = _descends_from_sshd(pid, parents)
        return not ours[pid]

    # The accounting names a process by its last thread to exit: a GIMP plug-in whose
    # GLib `gmain` thread ended last is "gmain", a name no program has. Such a process
    # is taken for its parent's program (a plug-in for the app, a child for a shell).
    known = {r.pid: index.path(r.comm) for r in records}
    known.update({p.pid: index.path(p.comm) for p in live})

    def path_of(r: AcctRecord) -> str:
        if index.knows(r.comm) or r.ppid not in known:
            return index.path(r.comm)
        return known[r.ppid]

    for r in records:
        if r.forked_only or not counted(r.pid, r.uid):
            continue
        record = ExecRecord(r.start, r.pid, path_of(r), (r.comm,), r.ppid)
        execs.append(record)
        by_pid[r.pid] = record
    for p in live:
        if not counted(p.pid, p.uid):
            continue
        record = ExecRecord(p.start, p.pid, index.path(p.comm), p.argv, p.ppid)
        execs.append(record)
        by_pid[p.pid] = record
    execs.sort(key=lambda e: e.time)
    return GuestWatchLog(tuple(execs), tuple(writes), by_pid)
