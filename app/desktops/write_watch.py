"""Who last wrote each file of a local desktop's home (issue 17: integrity flags).

A fanotify watch on the home's filesystem reports every file closed after writing,
with the writer's pid, whichever mount namespace it wrote through (the sandbox's
bind mount of the home included). Files are told apart by device and inode, not
by name, so a program that writes a temporary file and renames it over the target
(as Blender saves) is still the writer of what is there at the end. Paired with the
exec trace (app.desktops.exec_trace), the pid names the program that wrote it.

Needs root (CAP_SYS_ADMIN); without it, `start` says why and nothing is watched.
When DeskLoop drops privileges for the desktop, only files owned by the lab user
are kept, so the rest of the machine's writes cost a stat each and no memory.
A file written in a folder of another filesystem and moved in is not seen (the
sandbox's /tmp is a tmpfs of its own, so a move from there fails; a copy is seen).
"""

from __future__ import annotations

import ctypes
import os
import select
import struct
import threading
import time
from dataclasses import dataclass

_FAN_CLOEXEC = 0x1
_FAN_NONBLOCK = 0x2
_FAN_CLASS_NOTIF = 0x0
_FAN_CLOSE_WRITE = 0x8
_FAN_MARK_ADD = 0x1
_FAN_MARK_FILESYSTEM = 0x100
_FAN_NOFD = -1
_AT_FDCWD = -100
# struct fanotify_event_metadata: u32 event_len, u8 vers, u8 reserved, u16 metadata_len,
# u64 mask, s32 fd, s32 pid.
_META = struct.Struct("=IBBHQii")


@dataclass(frozen=True)
class Write:
    pid: int
    time: float


class WriteWatch:
    """Last writer (pid, time) of every file closed after writing, by (device, inode)."""

    def __init__(self, path: str, owner_uid: int | None) -> None:
        self.path = path
        self.owner_uid = owner_uid
        self.problem: str | None = None
        self._last: dict[tuple[int, int], Write] = {}
        self._lock = threading.Lock()
        self._fd = -1
        self._stop_r, self._stop_w = -1, -1
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start watching; on failure `problem` says why (never raises)."""
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.fanotify_mark.argtypes = [
                ctypes.c_int,
                ctypes.c_uint,
                ctypes.c_uint64,
                ctypes.c_int,
                ctypes.c_char_p,
            ]
            fd = libc.fanotify_init(
                _FAN_CLASS_NOTIF | _FAN_CLOEXEC | _FAN_NONBLOCK, os.O_RDONLY | os.O_LARGEFILE
            )
            if fd < 0:
                raise OSError(ctypes.get_errno(), "fanotify_init")
            if (
                libc.fanotify_mark(
                    fd,
                    _FAN_MARK_ADD | _FAN_MARK_FILESYSTEM,
                    _FAN_CLOSE_WRITE,
                    _AT_FDCWD,
                    self.path.encode(),
                )
                != 0
            ):
                error = ctypes.get_errno()
                os.close(fd)
                raise OSError(error, "fanotify_mark")
        except (OSError, AttributeError) as exc:
            why = os.strerror(exc.errno) if isinstance(exc, OSError) and exc.errno else str(exc)
            self.problem = f"fanotify is not available here ({why})"
            return
        self._fd = fd
        self._stop_r, self._stop_w = os.pipe()
        self._thread = threading.Thread(target=self._run, name="deskloop-writes", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            os.write(self._stop_w, b"x")
            self._thread.join(5)
            self._thread = None
        for fd in (self._fd, self._stop_r, self._stop_w):
            if fd >= 0:
                os.close(fd)
        self._fd = self._stop_r = self._stop_w = -1

    def last_write(self, device: int, inode: int) -> Write | None:
        with self._lock:
            return self._last.get((device, inode))

    def _run(self) -> None:
        while True:
            ready, _, _ = select.select([self._fd, self._stop_r], [], [])
            if self._stop_r in ready:
                return
            try:
                data = os.read(self._fd, 64 * 1024)
            except BlockingIOError:
                continue
            except OSError:
                return
            now = time.time()
            offset = 0
            while offset + _META.size <= len(data):
                length, _, _, _, mask, fd, pid = _META.unpack_from(data, offset)
                offset += max(length, _META.size)
                if fd == _FAN_NOFD or fd < 0:
                    continue
                try:
                    info = os.fstat(fd)
                except OSError:
                    continue
                finally:
                    os.close(fd)
                if not mask & _FAN_CLOSE_WRITE:
                    continue
                if self.owner_uid is not None and info.st_uid != self.owner_uid:
                    continue
                with self._lock:
                    self._last[(info.st_dev, info.st_ino)] = Write(pid, now)
