"""What a local desktop session watches for the integrity flags: every exec
of its programs (app.desktops.local.exec_trace) and who last wrote each file of its home
(app.desktops.local.write_watch). One per session, made with it, stopped with it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from app.core.integrity import ExecLog, LastWrite
from app.desktops.local.exec_trace import STRACE, find_strace, read_exec_log, strace_argv
from app.desktops.local.lab_user import LabUser
from app.desktops.local.write_watch import WriteWatch


class SessionWatch:
    """The exec trace folder and tracer command line of a session, and its write watch."""

    def __init__(self, session_dir: Path, home: Path, user: LabUser) -> None:
        self.trace_dir = session_dir / "trace"
        self.trace_dir.mkdir(mode=0o700)
        self.dropped = user.dropped
        strace = find_strace()
        self.tracer: tuple[str, ...] = (
            () if strace is None else tuple(strace_argv(strace, self.trace_dir, user))
        )
        """Put before bubblewrap for a traced program; empty without strace."""
        self.writes = WriteWatch(str(home))

    def start(self) -> None:
        self.writes.start()

    def stop(self) -> None:
        self.writes.stop()

    def exec_log(self) -> ExecLog:
        if not self.tracer:
            return ExecLog((), False, f"not watched: {STRACE} is not installed")
        how = "root tracer" if self.dropped else "tracer of the desktop's own user"
        records = tuple(read_exec_log(self.trace_dir))
        return ExecLog(records, True, f"every exec of the session's programs ({STRACE}, {how})")

    @property
    def writes_note(self) -> str:
        if self.writes.problem is not None:
            return f"not watched: {self.writes.problem}"
        return "every file closed after writing (fanotify), its writer named by the exec trace"

    def last_write(self, path: str, resolve: Callable[[str], Path]) -> LastWrite | None:
        """The last write of guest path `path` (made a host path by `resolve`)."""
        if self.writes.problem is not None:
            return None
        try:
            host = resolve(path)
        except ValueError:
            return None
        write = self.writes.last_write(str(host))
        if write is None:
            return None
        program = None
        for record in read_exec_log(self.trace_dir) if self.tracer else []:
            if record.pid == write.pid and record.time <= write.time:
                program = record  # the last exec before the write wins
        return LastWrite(write.time, write.pid, program)
