"""Who last wrote each file of a local desktop's home (integrity flags).

A fanotify watch on the home's filesystem reports every file closed after writing,
with the writer's pid, whichever mount namespace it wrote through (the sandbox's
bind mount of the home included). Files are told apart by device and inode, not
by name, so a program that writes a temporary file and renames it over the target
(as Blender saves) is still the writer of what is there at the end. Paired with the
exec trace (app.desktops.local.exec_trace), the pid names the program that wrote it.

Events identify files by their file handle (FAN_REPORT_FID), never by an open file
descriptor: a descriptor the kernel opened in this process on the episode database
would, once closed, drop SQLite's POSIX locks on it (closing any descriptor of a file
drops the process's locks on that file), and that broke the store's commits.

Needs root (CAP_SYS_ADMIN) and Linux 5.1; without them, `start` says why and nothing is
watched. A file written in a folder of another filesystem and moved in is not seen
(the sandbox's /tmp is a tmpfs of its own, so a move from there fails; a copy is seen).
"""

from __future__ import annotations

import ctypes
import os
import select
import struct
import threading
import time
from dataclasses import dataclass

_FAN_REPORT_FID = 0x200
_FAN_EVENT_INFO_TYPE_FID = 1
_MAX_HANDLE = 128
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
# struct fanotify_event_info_header (u8 type, u8 pad, u16 len), then for FID: the fsid
# (2 × s32) and a struct file_handle (u32 handle_bytes, s32 handle_type, bytes).
_INFO = struct.Struct("=BBH")
_HANDLE = struct.Struct("=Ii")


class _FileHandle(ctypes.Structure):
    _fields_ = [
        ("handle_bytes", ctypes.c_uint),
        ("handle_type", ctypes.c_int),
        ("f_handle", ctypes.c_ubyte * _MAX_HANDLE),
    ]


HandleKey = tuple[int, bytes]


def file_handle(path: str) -> HandleKey | None:
    """The kernel's handle of `path` (type and bytes), as fanotify reports it."""
    libc = ctypes.CDLL(None, use_errno=True)
    handle = _FileHandle()
    handle.handle_bytes = _MAX_HANDLE
    mount_id = ctypes.c_int()
    if libc.name_to_handle_at(
        _AT_FDCWD, path.encode(), ctypes.byref(handle), ctypes.byref(mount_id), 0
    ):
        return None
    return handle.handle_type, bytes(handle.f_handle[: handle.handle_bytes])


@dataclass(frozen=True)
class Write:
    pid: int
    time: float


class WriteWatch:
    """Last writer (pid, time) of every file closed after writing, by file handle."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.problem: str | None = None
        self._last: dict[HandleKey, Write] = {}
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
                _FAN_CLASS_NOTIF | _FAN_REPORT_FID | _FAN_CLOEXEC | _FAN_NONBLOCK,
                os.O_RDONLY | os.O_LARGEFILE,
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

    def last_write(self, path: str) -> Write | None:
        """The last write seen of the file now at host path `path`."""
        key = file_handle(path)
        if key is None:
            return None
        with self._lock:
            return self._last.get(key)

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
                length, _, _, meta_len, mask, fd, pid = _META.unpack_from(data, offset)
                end = offset + max(length, _META.size)
                if fd >= 0:  # not in FID mode; never keep a descriptor open here
                    os.close(fd)
                info = offset + meta_len
                while mask & _FAN_CLOSE_WRITE and info + _INFO.size <= end:
                    kind, _, info_len = _INFO.unpack_from(data, info)
                    if info_len == 0:
                        break
                    if kind == _FAN_EVENT_INFO_TYPE_FID:
                        start = info + _INFO.size + 8  # past the fsid
                        size, handle_type = _HANDLE.unpack_from(data, start)
                        raw = data[start + _HANDLE.size : start + _HANDLE.size + size]
                        with self._lock:
                            self._last[(handle_type, bytes(raw))] = Write(pid, now)
                        break
                    info += info_len
                offset = end
