"""The guest channel of a local desktop: local subprocesses and files confined to its HOME.

Commands run in the session's sandbox (app/desktops/local/sandbox.py: as the lab user,
with the HOME the only writable place) with the session's environment (DISPLAY,
throw-away HOME, TMPDIR, the desktop marker). File access, which DeskLoop does
itself (as root, when it runs so), is confined to the throw-away HOME: paths are
resolved with symlinks followed, the file actually opened is checked again through
/proc/self/fd, so a symlink swapped in between check and open cannot lead outside,
and writes walk the folders with O_NOFOLLOW and hand what they create over to the
lab user. (A hard link to an outside file cannot appear in the home: the sandbox's
home is a mount of its own, and link() across mounts fails.)
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import itertools
import os
import signal
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, TypeVar

from app.core.commands import CommandResult
from app.core.errors import FileTooLarge, GuestError
from app.desktops.local.sandbox import Sandbox, die_with_parent
from app.desktops.local.xvnc import log_tail
from app.desktops.web.cdp import WebPage
from app.desktops.web.kiosk import Browser, chromium_argv, start_browser, wait_contract

_T = TypeVar("_T")

# A launched program that exits with an error within this time failed to start (a
# missing file, a refused permission): setup fails with its output instead of going
# on without it. A program still running by then is left to run. Waiting costs
# every launch this long; apps take seconds to show a window anyway.
LAUNCH_EXIT_WATCH = 0.5


# File operations are local disk I/O; this bounds them when a path sits on a hung
# mount or a FIFO someone made.
FILE_TIMEOUT = 30.0


class LocalGuest:
    """`Guest` for a local desktop session. Made by LocalDesktop per session."""

    def __init__(
        self,
        home: Path,
        env: Mapping[str, str],
        log_dir: Path,
        sandbox: Sandbox | None,
        screen: tuple[int, int] = (1280, 800),
    ) -> None:
        """`sandbox` None runs commands as this process, unconfined: only for a guest
        over a plain folder (tests of probes and scripts), never a desktop's."""
        self._screen = screen
        self._browser: Browser | None = None
        self._browsers = itertools.count(1)
        self._home = Path(os.path.realpath(home))
        self._env = dict(env)
        self._log_dir = log_dir
        self._sandbox = sandbox
        self._launch_counter = itertools.count(1)
        self._launched: list[asyncio.subprocess.Process] = []
        self._closed = False

    def close(self) -> None:
        """Refuse every later call: the session is gone, and a program started now
        would outlive the cleanup that already ran."""
        self._closed = True
        if self._browser is not None:
            self._browser.close()

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
        """The pids `launch` started: bubblewrap's, whose child is the program."""
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

    async def _start(
        self,
        args: list[str],
        stdout: int | IO[bytes],
        stderr: int | IO[bytes],
        traced: bool = False,
    ) -> asyncio.subprocess.Process:
        if self._sandbox is not None:
            return await self._sandbox.spawn(
                args, env=self._env, stdout=stdout, stderr=stderr, traced=traced
            )
        return await asyncio.create_subprocess_exec(
            *args,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            env=self._env,
            cwd=self._home,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )

    async def run(self, argv: list[str], timeout: float = 30.0) -> CommandResult:
        args = self._argv(argv)
        try:
            proc = await self._start(args, asyncio.subprocess.PIPE, asyncio.subprocess.PIPE)
        except OSError as exc:
            raise GuestError(f"cannot start {args[0]!r} in the local desktop: {exc}") from exc
        try:
            # asyncio.timeout, not wait_for: 3.11's wait_for loses a cancellation that
            # arrives as the command ends, and a cancelled caller would run on.
            async with asyncio.timeout(timeout):
                stdout, stderr = await proc.communicate()
        except TimeoutError:
            await _kill_group(proc)
            raise GuestError(f"{args!r} ran past its {timeout:g} s timeout; killed") from None
        except asyncio.CancelledError:
            await _kill_group(proc)
            raise
        assert proc.returncode is not None
        return CommandResult(tuple(args), proc.returncode, stdout, stderr)

    async def stream(self, argv: list[str]) -> asyncio.subprocess.Process:
        """Start `argv` as DeskLoop's own long-running reader of the desktop (untraced,
        like `run`), its stdout a pipe for the caller; the caller ends it.

        Raises:
            GuestError: it could not start.
        """
        args = self._argv(argv)
        try:
            return await self._start(args, asyncio.subprocess.PIPE, asyncio.subprocess.DEVNULL)
        except OSError as exc:
            raise GuestError(f"cannot start {args[0]!r} in the local desktop: {exc}") from exc

    async def launch(self, argv: list[str]) -> None:
        args = self._argv(argv)
        name = "".join(c if c.isalnum() or c in "-_." else "_" for c in Path(args[0]).name)
        log_path = self._log_dir / f"launch-{next(self._launch_counter):03d}-{name}.log"
        try:
            with open(log_path, "ab") as log:
                # Traced: what an app starts during the episode is integrity evidence
                # (app.desktops.local.exec_trace); `run` is DeskLoop's own and is not.
                proc = await self._start(args, log, log, traced=True)
        except OSError as exc:
            raise GuestError(f"cannot launch {args[0]!r} in the local desktop: {exc}") from exc
        self._launched.append(proc)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(LAUNCH_EXIT_WATCH):
                await asyncio.shield(proc.wait())
        if proc.returncode is not None and proc.returncode != 0:
            output = log_tail(log_path) or "no output"
            # The output, not the log's path: the log goes with the session.
            raise GuestError(
                f"{args!r} exited with status {proc.returncode} right after its launch: {output}"
            )

    # ------------------------------------------------------------ web pages

    @property
    def web_page(self) -> WebPage | None:
        return self._browser.page if self._browser is not None else None

    async def open_page(self, url: str, timeout: float = 30.0) -> WebPage:
        """Chromium in kiosk mode on `url`, in the sandbox, with a fresh profile in the
        home; its DevTools pipe is held here (see app/desktops/web/kiosk.py)."""
        self._check_open()
        if self._browser is not None:
            self._browser.close()
            self._browser = None
        number = next(self._browsers)
        profile = self._home / f".chromium-profile-{number}"
        argv = chromium_argv(url, str(profile), *self._screen)
        log_path = self._log_dir / f"chromium-{number:03d}.log"
        browser = await start_browser(self._sandbox, self._env, log_path, argv, timeout)
        self._launched.append(browser.process)
        self._browser = browser
        await wait_contract(browser.page, url, timeout)
        return browser.page

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
            async with asyncio.timeout(FILE_TIMEOUT):
                return await asyncio.to_thread(work)
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
            fd = self._open_for_writing(path, real)
        except OSError as exc:
            raise GuestError(f"cannot write {path!r} in the local desktop: {exc.strerror}") from exc
        try:
            self._check_opened(path, fd)
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise GuestError(f"{path!r} in the local desktop is not a regular file")
            os.set_blocking(fd, True)
            # Truncated only now that the opened file is known to be inside the home.
            os.ftruncate(fd, 0)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        except OSError as exc:
            raise GuestError(f"cannot write {path!r} in the local desktop: {exc.strerror}") from exc
        finally:
            os.close(fd)

    def _open_for_writing(self, path: str, real: Path) -> int:
        """Open `real` (inside the home) for writing, making missing folders.

        Walks from the home one folder at a time with O_NOFOLLOW, so a folder the
        desktop swaps for a symlink after `resolve` fails (ELOOP) instead of leading
        DeskLoop, perhaps root, outside. What it creates goes to the lab user, so the
        desktop's programs can change it like their own files.
        """
        parts = real.relative_to(self._home).parts
        if not parts:
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(real))
        user = self._sandbox.user if self._sandbox is not None else None
        dir_flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        folder = os.open(self._home, dir_flags)
        try:
            for name in parts[:-1]:
                made = False
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o755, dir_fd=folder)
                    made = True
                inner = os.open(name, dir_flags, dir_fd=folder)
                os.close(folder)
                folder = inner
                if made and user is not None:
                    user.hand_over(folder)
            # No O_TRUNC: see _write. O_NONBLOCK: opening a FIFO must not hang.
            flags = os.O_WRONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                fd = os.open(parts[-1], flags | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=folder)
            except FileExistsError:
                return os.open(parts[-1], flags, dir_fd=folder)
            if user is not None:
                user.hand_over(fd)
            return fd
        finally:
            os.close(folder)


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


async def _kill_group(proc: asyncio.subprocess.Process) -> None:
    """SIGKILL the process group `proc` leads (its own session) and reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(5.0):
            await proc.wait()
