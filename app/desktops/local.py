"""The local desktop backend: Xvnc + openbox on this host, one throw-away HOME per session.

A session is a private directory holding the HOME (with its own TMPDIR and XDG
dirs), the VNC password file and logs; a D-Bus session bus; an Xvnc on 127.0.0.1
with a random port, a free display number and a random VNC password; openbox as
window manager; and a VNC connection for frames and input. `reset()` throws the
whole session away and starts a new one, so nothing from one episode reaches the
next.

Every process of the desktop runs as the lab user (app/desktops/lab_user.py: an
unprivileged system user when DeskLoop runs as root) inside a sandbox whose only
writable place is the HOME (app/desktops/sandbox.py).

Nothing is left behind: every process of a session carries a marker in its
environment, and a watchdog (app/desktops/reaper.py) fed by a pipe from this
process kills them all and removes the session directory when this process
dies, however it dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import signal
import sys
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from app.core.errors import DesktopError, GuestError, VNCError
from app.core.integrity import ExecLog, LastWrite
from app.core.procfs import process_start_time
from app.desktops import reaper
from app.desktops.base import DesktopInfo
from app.desktops.lab_user import LabUser, lab_user
from app.desktops.local_guest import LocalGuest
from app.desktops.local_watch import SessionWatch
from app.desktops.reaper import reap_orphans
from app.desktops.sandbox import Sandbox, find_bwrap
from app.desktops.vnc_screen import VncScreen
from app.desktops.xvnc import (
    XVNC,
    free_port,
    log_tail,
    read_display_number,
    vnc_password_file_bytes,
    xauthority_bytes,
)
from app.rfb.client import VncEndpoint, VNCSession

__all__ = ["LocalDesktop", "reap_orphans"]

OPENBOX = "openbox"
DBUS_DAEMON = "dbus-daemon"

_BIND_ATTEMPTS = 5
_VNC_CONNECT_TIMEOUT = 5.0
_PASSWORD_ALPHABET = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"

# One window-manager config for both backends (VM images carry the same file at
# /etc/deskloop/openbox-rc.xml): no keyboard shortcuts to swallow the agent's keys.
OPENBOX_RC = (
    Path(__file__).resolve().parents[2]
    / "vm_images"
    / "files"
    / "etc"
    / "deskloop"
    / "openbox-rc.xml"
)


@dataclass
class _Session:
    """Everything one desktop session owns; filled in as it starts."""

    marker: str
    dir: Path
    home: Path
    password: str
    env: dict[str, str]
    sandbox: Sandbox
    watch: SessionWatch
    reaper: asyncio.subprocess.Process | None = None
    xvnc: asyncio.subprocess.Process | None = None
    openbox: asyncio.subprocess.Process | None = None
    display: str = ""
    port: int = 0
    guest: LocalGuest | None = None
    vnc: VNCSession | None = None
    children: list[asyncio.subprocess.Process] = field(default_factory=list)


class LocalDesktop(VncScreen):
    """A `Desktop` on this host: Xvnc + openbox, fresh HOME per `reset()`.

    Several can run at once (each has its own display, port and HOME). Use
    `async with LocalDesktop() as desktop:` or call `reset()` and `close()`.
    """

    backend_label = "local desktop"

    def __init__(
        self,
        name: str | None = None,
        width: int = 1280,
        height: int = 800,
        root: Path | None = None,
        start_timeout: float = 30.0,
    ) -> None:
        if width < 64 or height < 64:
            raise DesktopError(f"local desktop size {width}x{height} is too small")
        self.name = name or f"local-{uuid.uuid4().hex[:6]}"
        self.width = width
        self.height = height
        self.root = root
        self.start_timeout = start_timeout
        self._session: _Session | None = None
        self._state = "stopped"
        self._lock = asyncio.Lock()

    # ------------------------------------------------------------ contract

    @property
    def guest(self) -> LocalGuest:
        session = self._running()
        assert session.guest is not None
        return session.guest

    @property
    def marker(self) -> str | None:
        """The environment marker of the current session's processes (None when stopped)."""
        return self._session.marker if self._session else None

    @property
    def session_dir(self) -> Path | None:
        return self._session.dir if self._session else None

    def info(self) -> DesktopInfo:
        session = self._session
        vnc = None
        details: dict[str, str] = {}
        if session is not None and self._state == "running":
            vnc = VncEndpoint("127.0.0.1", session.port, session.password)
            details = {"display": session.display, "home": str(session.home)}
        return DesktopInfo(
            name=self.name,
            backend="local",
            state=self._state,
            width=self.width,
            height=self.height,
            vnc=vnc,
            details=details,
        )

    async def reset(self) -> None:
        async with self._lock:
            await self._stop()
            self._state = "starting"
            try:
                user, bwrap = lab_user(), find_bwrap()
            except DesktopError:
                self._state = "failed"
                raise
            try:
                session = await asyncio.to_thread(self._new_session, user, bwrap)
            except DesktopError:
                self._state = "failed"
                raise
            except OSError as exc:
                self._state = "failed"
                raise DesktopError(
                    f"local desktop {self.name}: cannot create its session directory: {exc}"
                ) from exc
            self._session = session
            try:
                async with asyncio.timeout(self.start_timeout):
                    await self._start(session)
            except TimeoutError:
                await self._stop(state="failed")
                raise DesktopError(
                    f"local desktop {self.name} did not start within {self.start_timeout:g} s"
                ) from None
            except BaseException:
                await self._stop(state="failed")
                raise
            self._state = "running"

    @property
    def writes_note(self) -> str:
        return self._running().watch.writes_note

    def last_write(self, path: str) -> LastWrite | None:
        session = self._running()
        guest = session.guest
        if guest is None:
            return None

        def resolve(guest_path: str) -> Path:
            try:
                return guest.resolve(guest_path)
            except GuestError as exc:
                raise ValueError(str(exc)) from None

        return session.watch.last_write(path, resolve)

    def exec_log(self) -> ExecLog:
        """Every program started in the session so far (see app.desktops.exec_trace)."""
        return self._running().watch.exec_log()

    async def close(self) -> None:
        async with self._lock:
            await self._stop(state="closed")

    async def __aenter__(self) -> LocalDesktop:
        await self.reset()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def _backend_death(self) -> str:
        """Xvnc is this desktop's X server and VNC server both: its exit is the death."""
        xvnc = self._running().xvnc
        assert xvnc is not None
        status = await xvnc.wait()
        if status < 0:
            how = f"was killed by {signal.Signals(-status).name}"
        else:
            how = f"exited with status {status}"
        return f"its Xvnc (pid {xvnc.pid}) {how}"

    # ------------------------------------------------------------ session

    def _running(self) -> _Session:
        if self._session is None or self._state != "running":
            raise DesktopError(f"local desktop {self.name} is {self._state}; call reset() first")
        return self._session

    def _vnc_session(self) -> VNCSession:
        session = self._running()
        assert session.vnc is not None
        return session.vnc

    def _new_session(self, user: LabUser, bwrap: str) -> _Session:
        base = self.root if self.root is not None else Path(tempfile.gettempdir())
        base.mkdir(parents=True, exist_ok=True)
        # mkdtemp makes the directory 0700: the VNC password file and HOME are private.
        session_dir = Path(tempfile.mkdtemp(prefix=reaper.SESSION_PREFIX, dir=base))
        if user.dropped:
            # The lab user must reach its home and cookie files, but not list the
            # folder, read the logs or touch the owner file.
            session_dir.chmod(0o711)
            blocked = user.unreachable_folder(session_dir)
            if blocked is not None:
                shutil.rmtree(session_dir, ignore_errors=True)
                raise DesktopError(
                    f"local desktop {self.name}: the desktop user {user.name!r} cannot "
                    f"enter {blocked} (mode {blocked.stat().st_mode & 0o777:o}), on the "
                    f"way to its session folder under {base}; choose a root folder it "
                    f"can reach"
                )
        owner_pid = os.getpid()
        owner_start = process_start_time(owner_pid) or ""
        reaper.write_owner_file(session_dir, owner_pid, owner_start)
        home = session_dir / "home"
        dirs = {
            "TMPDIR": home / ".tmp",
            "XDG_RUNTIME_DIR": home / ".run",
            "XDG_CONFIG_HOME": home / ".config",
            "XDG_CACHE_HOME": home / ".cache",
            "XDG_DATA_HOME": home / ".local" / "share",
            "XDG_STATE_HOME": home / ".local" / "state",
        }
        (session_dir / "logs").mkdir(mode=0o700)
        for path in (home, *dirs.values()):
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
            user.hand_over(path)
        marker = uuid.uuid4().hex
        # A clean environment, not ours: the lab's own variables (API keys for the
        # agent endpoint, say) must not be visible to programs in the desktop.
        env = {
            "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "HOME": str(home),
            "USER": user.name,
            "LOGNAME": user.name,
            "SHELL": "/bin/sh",
            **{key: str(path) for key, path in dirs.items()},
            reaper.MARKER_ENV: marker,
            reaper.OWNER_PID_ENV: str(owner_pid),
            reaper.OWNER_START_ENV: owner_start,
            reaper.SESSION_DIR_ENV: str(session_dir),
        }
        password = "".join(secrets.choice(_PASSWORD_ALPHABET) for _ in range(8))
        password_file = session_dir / "vncpasswd"
        password_file.write_bytes(vnc_password_file_bytes(password))
        password_file.chmod(0o600)
        user.hand_over(password_file)
        # Without an auth file Xvnc lets every local user onto the display; the
        # VNC password alone would protect only the VNC side.
        xauthority = session_dir / "xauthority"
        xauthority.write_bytes(xauthority_bytes(secrets.token_bytes(16)))
        xauthority.chmod(0o600)
        user.hand_over(xauthority)
        env["XAUTHORITY"] = str(xauthority)
        # Every program the session's long-lived processes start is traced into
        # `trace/`, outside the home (app.desktops.exec_trace); none without strace.
        watch = SessionWatch(session_dir, home, user)
        sandbox = Sandbox(
            user=user, home=home, readable=(xauthority,), bwrap=bwrap, tracer=watch.tracer
        )
        return _Session(
            marker=marker,
            dir=session_dir,
            home=home,
            password=password,
            env=env,
            sandbox=sandbox,
            watch=watch,
        )

    async def _spawn(
        self,
        session: _Session,
        argv: list[str],
        log_name: str,
        pass_fds: tuple[int, ...] = (),
        readable: tuple[Path, ...] = (),
        traced: bool = False,
    ) -> asyncio.subprocess.Process:
        with open(session.dir / "logs" / log_name, "ab") as log:
            try:
                proc = await session.sandbox.spawn(
                    argv,
                    env=session.env,
                    stdout=log,
                    stderr=log,
                    pass_fds=pass_fds,
                    readable=readable,
                    traced=traced,
                )
            except OSError as exc:
                raise DesktopError(
                    f"local desktop {self.name}: cannot start {argv[0]!r}: {exc}"
                ) from exc
        session.children.append(proc)
        return proc

    async def _start(self, session: _Session) -> None:
        # The watchdog first: from here on nothing can outlive this process.
        with open(session.dir / "logs" / "reaper.log", "ab") as log:
            # Its own session, not dying with us: it must outlive this process.
            session.reaper = await asyncio.create_subprocess_exec(
                sys.executable,
                "-I",
                reaper.__file__,
                "--marker",
                session.marker,
                "--dir",
                str(session.dir),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,
            )
        await asyncio.to_thread(session.sandbox.check, session.env)
        # Who writes the home's files, for the integrity flags (app.desktops.write_watch).
        session.watch.start()
        await self._start_session_bus(session)
        await self._start_xvnc(session)
        session.env["DISPLAY"] = session.display
        session.guest = LocalGuest(
            session.home,
            session.env,
            session.dir / "logs",
            session.sandbox,
            screen=(self.width, self.height),
        )
        if not OPENBOX_RC.is_file():
            # openbox would fall back to its own defaults, shortcuts and all.
            raise DesktopError(f"local desktop {self.name}: missing {OPENBOX_RC}")
        session.openbox = await self._spawn(
            session,
            [OPENBOX, "--sm-disable", "--config-file", str(OPENBOX_RC)],
            "openbox.log",
            traced=True,  # its menus can start programs
        )
        await self._wait_window_manager(session)
        session.vnc = VNCSession("127.0.0.1", session.port, session.password)
        try:
            await session.vnc.connected()
        except VNCError as exc:
            raise DesktopError(f"local desktop {self.name}: {exc}") from exc

    async def _start_session_bus(self, session: _Session) -> None:
        """A D-Bus session bus per desktop.

        Without one, GIMP autolaunches a bus through `dbus-launch`, which ignores
        SIGTERM (every close then waits out the kill grace), and Kdenlive needs
        one anyway. Its socket lives in XDG_RUNTIME_DIR, inside the session.
        """
        daemon = shutil.which(DBUS_DAEMON, path=session.env["PATH"])
        if daemon is None:
            return
        socket_path = Path(session.env["XDG_RUNTIME_DIR"]) / "bus"
        proc = await self._spawn(
            session,
            [daemon, "--session", "--nofork", "--nopidfile", f"--address=unix:path={socket_path}"],
            "dbus.log",
            traced=True,  # it starts services on demand
        )
        while not socket_path.is_socket():
            if proc.returncode is not None:
                raise DesktopError(
                    f"local desktop {self.name}: dbus-daemon exited with status "
                    f"{proc.returncode}: {log_tail(session.dir / 'logs' / 'dbus.log')}"
                )
            await asyncio.sleep(0.005)
        session.env["DBUS_SESSION_BUS_ADDRESS"] = f"unix:path={socket_path}"

    async def _start_xvnc(self, session: _Session) -> None:
        log_path = session.dir / "logs" / "xvnc.log"
        for _ in range(_BIND_ATTEMPTS):
            port = free_port()
            log_start = log_path.stat().st_size if log_path.exists() else 0
            read_fd, write_fd = os.pipe()
            try:
                proc = await self._spawn(
                    session,
                    [
                        XVNC,
                        "-displayfd",
                        str(write_fd),
                        "-auth",
                        session.env["XAUTHORITY"],
                        "-geometry",
                        f"{self.width}x{self.height}",
                        "-depth",
                        "24",
                        "-rfbport",
                        str(port),
                        "-localhost",
                        "-interface",
                        "127.0.0.1",
                        # Without it TigerVNC also listens on [::1], whatever -interface says.
                        "-UseIPv6=0",
                        "-nolisten",
                        "tcp",
                        "-AlwaysShared",
                        "-SecurityTypes",
                        "VncAuth",
                        "-PasswordFile",
                        str(session.dir / "vncpasswd"),
                        "-desktop",
                        self.name,
                    ],
                    "xvnc.log",
                    pass_fds=(write_fd,),
                    # Xvnc alone reads the VNC password; the apps never see it.
                    readable=(session.dir / "vncpasswd",),
                )
                os.close(write_fd)
                write_fd = -1
                number = await read_display_number(read_fd)
            finally:
                os.close(read_fd)
                if write_fd >= 0:
                    os.close(write_fd)
            if number:
                session.xvnc = proc
                session.display = f":{number}"
                session.port = port
                return
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(5.0):
                    await proc.wait()
            output = log_tail(log_path, log_start)
            if "Address already in use" not in output:
                raise DesktopError(
                    f"local desktop {self.name}: Xvnc exited before its display was "
                    f"ready (log {log_path}): {output}"
                )
        raise DesktopError(
            f"local desktop {self.name}: Xvnc could not bind a free port in "
            f"{_BIND_ATTEMPTS} attempts (log {log_path})"
        )

    async def _wait_window_manager(self, session: _Session) -> None:
        """Wait until the display answers and openbox manages it (EWMH check window set)."""
        assert session.guest is not None and session.openbox is not None
        while True:
            if session.openbox.returncode is not None:
                log = session.dir / "logs" / "openbox.log"
                raise DesktopError(
                    f"local desktop {self.name}: openbox exited with status "
                    f"{session.openbox.returncode}: {log_tail(log)}"
                )
            try:
                result = await session.guest.run(
                    ["xprop", "-root", "_NET_SUPPORTING_WM_CHECK"], 5.0
                )
            except GuestError as exc:
                raise DesktopError(
                    f"local desktop {self.name}: cannot ask the display for its window "
                    f"manager (xprop, package x11-utils): {exc}"
                ) from exc
            if result.ok and b"window id" in result.stdout:
                return
            await asyncio.sleep(0.02)

    async def _stop(self, state: str = "stopped") -> None:
        """End the current session (if any) and remove its files; never raises."""
        session = self._session
        self._session = None
        if session is not None:
            if session.guest is not None:
                session.guest.close()
            session.watch.stop()
            if session.vnc is not None:
                with contextlib.suppress(Exception):
                    async with asyncio.timeout(2.0):
                        await session.vnc.close()
            await asyncio.to_thread(reaper.kill_marked, session.marker)
            await asyncio.to_thread(reaper.remove_session_dir, session.dir)
            for proc in session.children:
                with contextlib.suppress(TimeoutError, ProcessLookupError):
                    async with asyncio.timeout(2.0):
                        await proc.wait()
            if session.reaper is not None:
                await _stop_reaper(session.reaper)
        self._state = state


async def _stop_reaper(proc: asyncio.subprocess.Process) -> None:
    """Close the watchdog's pipe; with the session already cleaned it exits at once."""
    if proc.stdin is not None:
        proc.stdin.close()
    try:
        async with asyncio.timeout(5.0):
            await proc.wait()
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(2.0):
                await proc.wait()
