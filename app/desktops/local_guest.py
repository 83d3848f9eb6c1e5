"""The guest channel of a local desktop: local subprocesses and files confined to its HOME.

Commands run as this user with the session's environment (DISPLAY, throw-away
HOME, TMPDIR, the desktop marker). File access is confined to the throw-away HOME:
paths are resolved with symlinks followed, and the file actually opened is checked
again through /proc/self/fd, so a symlink swapped in between check and open cannot
lead outside.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import itertools
import os
import signal
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from app.core.commands import CommandResult
from app.core.errors import FileTooLarge, GuestError

_T = TypeVar("_T")

_PR_SET_PDEATHSIG = 1
_libc: ctypes.CDLL | None
try:
    _libc = ctypes.CDLL(None, use_errno=True)
except OSError:  # pragma: no cover - every Linux libc loads; keep going without it
    _libc = None


def _die_with_parent() -> None:
    """Runs in the child between fork and exec: SIGTERM it when the parent goes.

    Belt and braces only: the reaper is what guarantees cleanup (PDEATHSIG follows
    the forking thread, not the process, and is reset by setuid programs).
    """
    if _libc is not None:
        _libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)


# File operations are local disk I/O; this bounds them when a path sits on a hung
# mount or a FIFO someone made.
FILE_TIMEOUT = 30.0


class LocalGuest:
    """`Guest` for a local desktop session. Made by LocalDesktop per session."""

    def __init__(self, home: Path, env: Mapping[str, str], log_dir: Path) -> None:
        self._home = Path(os.path.realpath(home))
        self._env = dict(env)
        self._log_dir = log_dir
        self._launch_counter = itertools.count(1)
        self._launched: list[asyncio.subprocess.Process] = []
        self._closed = False

    def close(self) -> None:
        """Refuse every later call: the session is gone, and a program started now
        would outlive the cleanup that already ran."""
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise GuestError(f"the local desktop session of {str(self._home)!r} has ended")

    @property
    def home(self) -> str:
        return str(self._home)

    @property
    def env(self) -> dict[str, str]:
        """The session environment (a copy)."""
        return dict(self._env)

    @property
    def launched_pids(self) -> list[int]:
        return [p.pid for p in self._launched]

    def expand(self, arg: str) -> str:
        """`~` and a leading `~/` name the throw-away home; everything else is unchanged."""
        if arg == "~":
            return str(self._home)
        if arg.startswith("~/"):
            return str(self._home / arg[2:])
        return arg

    def _argv(self, argv: list[str]) -> list[str]:
        self._check_open()
        if not argv or not all(isinstance(a, str) for a in argv):
            raise GuestError(f"a command must be a non-empty list of strings, got {argv!r}")
        return [self.expand(a) for a in argv]

    async def run(self, argv: list[str], timeout: float = 30.0) -> CommandResult:
        args = self._argv(argv)
        try:
            proc = await asyncio.create_subprocess_exec(
                *args,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self._env,
                cwd=self._home,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        except OSError as exc:
            raise GuestError(f"cannot start {args[0]!r} in the local desktop: {exc}") from exc
        try:
            stdout, stderr = await asyncio.wait_for(proc.communicate(), timeout)
        except TimeoutError:
            await _kill_group(proc)
            raise GuestError(f"{args!r} ran past its {timeout:g} s timeout; killed") from None
        except asyncio.CancelledError:
            await _kill_group(proc)
            raise
        assert proc.returncode is not None
        return CommandResult(tuple(args), proc.returncode, stdout, stderr)

    async def launch(self, argv: list[str]) -> None:
        args = self._argv(argv)
        name = "".join(c if c.isalnum() or c in "-_." else "_" for c in Path(args[0]).name)
        log_path = self._log_dir / f"launch-{next(self._launch_counter):03d}-{name}.log"
        try:
            with open(log_path, "ab") as log:
                proc = await asyncio.create_subprocess_exec(
                    *args,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    env=self._env,
                    cwd=self._home,
                    start_new_session=True,
                    preexec_fn=_die_with_parent,
                )
        except OSError as exc:
            raise GuestError(f"cannot launch {args[0]!r} in the local desktop: {exc}") from exc
        self._launched.append(proc)

    def resolve(self, path: str) -> Path:
        """The real path `path` names, which must lie inside the home.

        `~`, `~/x` and relative paths are under the home; absolute paths must be
        inside it. Symlinks are followed before the check.

        Raises:
            GuestError: the path leads outside the home.
        """
        self._check_open()
        if not isinstance(path, str) or not path:
            raise GuestError(f"a guest path must be a non-empty string, got {path!r}")
        expanded = Path(self.expand(path))
        candidate = expanded if expanded.is_absolute() else self._home / expanded
        real = Path(os.path.realpath(candidate))
        if not _inside(real, self._home):
            raise GuestError(
                f"path {path!r} resolves to {str(real)!r}, outside the desktop home "
                f"{str(self._home)!r}; refused"
            )
        return real

    async def read_file(self, path: str, max_bytes: int = 64 * 1024 * 1024) -> bytes:
        real = self.resolve(path)
        return await self._bounded(f"reading {path!r}", lambda: self._read(path, real, max_bytes))

    async def write_file(self, path: str, data: bytes) -> None:
        real = self.resolve(path)
        await self._bounded(f"writing {path!r}", lambda: self._write(path, real, data))

    async def exists(self, path: str) -> bool:
        real = self.resolve(path)
        return await self._bounded(f"checking {path!r}", lambda: os.path.exists(real))

    async def _bounded(self, what: str, work: Callable[[], _T]) -> _T:
        try:
            return await asyncio.wait_for(asyncio.to_thread(work), FILE_TIMEOUT)
        except TimeoutError:
            raise GuestError(f"{what} in the local desktop took over {FILE_TIMEOUT:g} s") from None

    def _check_opened(self, path: str, fd: int) -> None:
        opened = Path(os.readlink(f"/proc/self/fd/{fd}"))
        if not _inside(opened, self._home):
            raise GuestError(
                f"path {path!r} led to {str(opened)!r}, outside the desktop home; refused"
            )

    def _read(self, path: str, real: Path, max_bytes: int) -> bytes:
        try:
            # O_NONBLOCK: opening a FIFO must not hang; it is refused below.
            fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            raise GuestError(f"cannot read {path!r} in the local desktop: {exc.strerror}") from exc
        try:
            self._check_opened(path, fd)
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise GuestError(f"{path!r} in the local desktop is not a regular file")
            if info.st_size > max_bytes:
                raise FileTooLarge(
                    f"{path!r} in the local desktop is {info.st_size} bytes, over the "
                    f"{max_bytes}-byte limit",
                    size=info.st_size,
                    limit=max_bytes,
                )
            os.set_blocking(fd, True)
            chunks: list[bytes] = []
            total = 0
            # The file may grow after fstat: read at most one byte past the cap.
            while total <= max_bytes:
                chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
            if total > max_bytes:
                raise FileTooLarge(
                    f"{path!r} in the local desktop grew over the {max_bytes}-byte limit",
                    size=None,
                    limit=max_bytes,
                )
            return b"".join(chunks)
        finally:
            os.close(fd)

    def _write(self, path: str, real: Path, data: bytes) -> None:
        try:
            real.parent.mkdir(parents=True, exist_ok=True)
            # No O_TRUNC: the file is truncated only after the opened file is known
            # to be inside the home.
            fd = os.open(real, os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise GuestError(f"cannot write {path!r} in the local desktop: {exc.strerror}") from exc
        try:
            self._check_opened(path, fd)
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise GuestError(f"{path!r} in the local desktop is not a regular file")
            os.set_blocking(fd, True)
            os.ftruncate(fd, 0)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        except OSError as exc:
            raise GuestError(f"cannot write {path!r} in the local desktop: {exc.strerror}") from exc
        finally:
            os.close(fd)


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


async def _kill_group(proc: asyncio.subprocess.Process) -> None:
    """SIGKILL the process group `proc` leads (its own session) and reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(proc.wait(), 5.0)
