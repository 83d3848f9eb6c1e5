"""A libvirt desktop's integrity watch: the guest's process accounting and write log,
read after the agent ended (app.desktops.libvirt.guest_watch says what they hold)."""

from __future__ import annotations

import posixpath
import time

from app.core.errors import GuestError
from app.core.integrity import ExecLog, LastWrite
from app.desktops.libvirt.guest_watch import (
    PACCT,
    PATH_DIRS,
    WRITES_LOG,
    GuestWatchLog,
    ProgramIndex,
    build_log,
    parse_pacct,
    parse_ps,
    parse_threads,
    parse_writes,
)
from app.desktops.remote.ssh_guest import SSHGuest

MAX_LOG_BYTES = 64 * 1024 * 1024
"""A process record is 64 bytes: a million programs; a write line ~80 bytes."""


class GuestWatching:
    """`WatchesPrograms`, `WatchesWrites` and `ReadsGuestWatch` for a desktop whose
    `guest` is the VM's SSH channel."""

    _watch_log: GuestWatchLog | None = None
    _watch_problem: str | None = None
    _writes_problem: str | None = None

    @property
    def guest(self) -> SSHGuest:
        raise NotImplementedError

    async def read_watch(self, app: str) -> None:
        """Read the guest's logs now (the agent has ended), for `app`'s task.

        Raises:
            GuestError: the guest did not answer a command.
        """
        self._watch_log = None
        self._watch_problem = self._writes_problem = None
        guest = self.guest
        try:
            pacct = await guest.read_file(PACCT, MAX_LOG_BYTES)
        except GuestError as exc:
            self._watch_problem = (
                f"not watched: the guest has no process accounting ({exc}); its image "
                "predates it: rebuild the image"
            )
            return
        try:
            writes = await guest.read_file(WRITES_LOG, MAX_LOG_BYTES)
        except GuestError as exc:
            writes = b""
            self._writes_problem = f"not watched: the guest has no write log ({exc})"
        before = time.time()
        clock = await guest.run(["date", "+%s.%N"], timeout=30)
        after = time.time()
        try:
            offset = (before + after) / 2 - float(clock.stdout_text().strip())
        except ValueError:
            offset = 0.0
        now = time.time()
        stat = await guest.run(["ps", "-e", "-o", "pid=,ppid=,uid=,etimes=,comm="], timeout=30)
        args = await guest.run(["ps", "-e", "-o", "pid=,args="], timeout=30)
        threads = await guest.run(["ps", "-e", "-L", "-o", "lwp=,pid="], timeout=30)
        dirs = [f"/usr/lib/{app}", f"/usr/share/{app}", f"/usr/libexec/{app}"]
        # A folder the app does not have makes find exit 1; what it found still counts.
        own = await guest.run(["find", *dirs, "-type", "f", "-perm", "/111"], timeout=60)
        on_path = await guest.run(["find", *PATH_DIRS, "-maxdepth", "1", "-mindepth", "1"])
        try:
            records = parse_pacct(pacct)
        except ValueError as exc:
            self._watch_problem = f"not watched: {PACCT}: {exc}"
            return
        self._watch_log = build_log(
            records,
            parse_ps(stat.stdout_text(), args.stdout_text(), now),
            parse_writes(writes.decode("utf-8", "replace")),
            ProgramIndex(own.stdout_text().split(), on_path.stdout_text().split()),
            offset,
            parse_threads(threads.stdout_text()),
        )

    def exec_log(self) -> ExecLog:
        if self._watch_log is None:
            why = self._watch_problem or "not watched: the guest's logs were not read"
            return ExecLog((), False, why)
        return self._watch_log.exec_log()

    @property
    def writes_note(self) -> str:
        if self._watch_log is None:
            return self._watch_problem or "not watched: the guest's logs were not read"
        if self._writes_problem is not None:
            return self._writes_problem
        return (
            "every write in the guest's root filesystem, from fatrace's log (a file "
            "written under another name and renamed over the checked one is not seen)"
        )

    def last_write(self, path: str) -> LastWrite | None:
        if self._watch_log is None:
            return None
        if path == "~" or path.startswith("~/"):
            path = posixpath.join(self.guest.home, path[2:])
        return self._watch_log.last_write(path)
