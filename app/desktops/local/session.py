"""One local desktop session: its folder, processes and screen, from start to stop.

A session is a private directory holding the HOME (with its own TMPDIR and XDG dirs),
the VNC password file and logs; a D-Bus session bus; an Xvnc on 127.0.0.1 with a
random port, a free display number and a random VNC password; openbox as window
manager; and a VNC connection for frames and input. `LocalDesktop` (app.desktops.local.desktop)
makes a new one on every `reset()` and stops the old one.

Every process runs as the lab user inside the session's sandbox, carrying the
session's marker in its environment; the watchdog started first (app.desktops.local.reaper)
kills them all and removes the folder if this process dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import sys
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from app.core.errors import DesktopError, GuestError, VNCError
from app.core.procfs import process_start_time, write_owner_file
from app.desktops.local import reaper
from app.desktops.local.guest import LocalGuest
from app.desktops.local.lab_user import LabUser
from app.desktops.local.sandbox import Sandbox
from app.desktops.local.watch import SessionWatch
from app.desktops.local.windows import WindowWatch
from app.desktops.local.xvnc import (
    XVNC,
    free_port,
    log_tail,
    read_display_number,
    xauthority_bytes,
)
from app.rfb.client import VNCSession
from app.rfb.wire import vnc_password_file_bytes

OPENBOX = "openbox"
DBUS_DAEMON = "dbus-daemon"

_BIND_ATTEMPTS = 5
_PASSWORD_ALPHABET = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"

# One window-manager config for both backends (VM images carry the same file at
# /etc/deskloop/openbox-rc.xml): no keyboard shortcuts to swallow the agent's keys.
OPENBOX_RC = (
    Path(__file__).resolve().parents[3]
    / "vm_images"
    / "files"
    / "etc"
    / "deskloop"
    / "openbox-rc.xml"
)


@dataclass
class LocalSession:
    """Everything one desktop session owns; filled in as it starts."""

    name: str
    """The desktop's name, for messages and Xvnc's desktop name."""
    width: int
    height: int
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
    windows: WindowWatch | None = None
    children: list[asyncio.subprocess.Process] = field(default_factory=list)

    @classmethod
    def create(
        cls, name: str, width: int, height: int, root: Path | None, user: LabUser, bwrap: str
    ) -> LocalSession:
        """The session's folder, HOME, password, auth file and sandbox; nothing started yet.

        Blocking (files): call it off the event loop.
        """
        base = root if root is not None else Path(tempfile.gettempdir())
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
                    f"local desktop {name}: the desktop user {user.name!r} cannot "
                    f"enter {blocked} (mode {blocked.stat().st_mode & 0o777:o}), on the "
                    f"way to its session folder under {base}; choose a root folder it "
                    f"can reach"
                )
        owner_pid = os.getpid()
        owner_start = process_start_time(owner_pid) or ""
        write_owner_file(session_dir, owner_pid)
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
        # `trace/`, outside the home (app.desktops.local.exec_trace); none without strace.
        watch = SessionWatch(session_dir, home, user)
        sandbox = Sandbox(
            user=user, home=home, readable=(xauthority,), bwrap=bwrap, tracer=watch.tracer
        )
        return cls(
            name=name,
            width=width,
            height=height,
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
        argv: list[str],
        log_name: str,
        pass_fds: tuple[int, ...] = (),
        readable: tuple[Path, ...] = (),
        traced: bool = False,
    ) -> asyncio.subprocess.Process:
        with open(self.dir / "logs" / log_name, "ab") as log:
            try:
                proc = await self.sandbox.spawn(
                    argv,
                    env=self.env,
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
        self.children.append(proc)
        return proc

    async def start(self) -> None:
        """Start the watchdog, the bus, Xvnc and openbox, and connect to the screen."""
        # The watchdog first: from here on nothing can outlive this process.
        with open(self.dir / "logs" / "reaper.log", "ab") as log:
            # Its own session, not dying with us: it must outlive this process.
            self.reaper = await asyncio.create_subprocess_exec(
                sys.executable,
                "-I",
                reaper.__file__,
                "--marker",
                self.marker,
                "--dir",
                str(self.dir),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,
            )
        await asyncio.to_thread(self.sandbox.check, self.env)
        # Who writes the home's files, for the integrity flags (app.desktops.local.write_watch).
        self.watch.start()
        await self._start_session_bus()
        await self._start_xvnc()
        self.env["DISPLAY"] = self.display
        self.guest = LocalGuest(
            self.home,
            self.env,
            self.dir / "logs",
            self.sandbox,
            screen=(self.width, self.height),
        )
        if not OPENBOX_RC.is_file():
            # openbox would fall back to its own defaults, shortcuts and all.
            raise DesktopError(f"local desktop {self.name}: missing {OPENBOX_RC}")
        self.openbox = await self._spawn(
            [OPENBOX, "--sm-disable", "--config-file", str(OPENBOX_RC)],
            "openbox.log",
            traced=True,  # its menus can start programs
        )
        await self._wait_window_manager()
        # Every window as it opens, for the integrity flags (app.desktops.local.windows).
        self.windows = WindowWatch(self.guest)
        await self.windows.start()
        self.vnc = VNCSession("127.0.0.1", self.port, self.password)
        try:
            await self.vnc.connected()
        except VNCError as exc:
            raise DesktopError(f"local desktop {self.name}: {exc}") from exc

    async def _start_session_bus(self) -> None:
        """A D-Bus session bus per desktop.

        Without one, GIMP autolaunches a bus through `dbus-launch`, which ignores
        SIGTERM (every close then waits out the kill grace), and Kdenlive needs
        one anyway. Its socket lives in XDG_RUNTIME_DIR, inside the self.
        """
        daemon = shutil.which(DBUS_DAEMON, path=self.env["PATH"])
        if daemon is None:
            return
        socket_path = Path(self.env["XDG_RUNTIME_DIR"]) / "bus"
        proc = await self._spawn(
            [daemon, "--session", "--nofork", "--nopidfile", f"--address=unix:path={socket_path}"],
            "dbus.log",
            traced=True,  # it starts services on demand
        )
        while not socket_path.is_socket():
            if proc.returncode is not None:
                raise DesktopError(
                    f"local desktop {self.name}: dbus-daemon exited with status "
                    f"{proc.returncode}: {log_tail(self.dir / 'logs' / 'dbus.log')}"
                )
            await asyncio.sleep(0.005)
        self.env["DBUS_SESSION_BUS_ADDRESS"] = f"unix:path={socket_path}"

    async def _start_xvnc(self) -> None:
        log_path = self.dir / "logs" / "xvnc.log"
        for _ in range(_BIND_ATTEMPTS):
            port = free_port()
            log_start = log_path.stat().st_size if log_path.exists() else 0
            read_fd, write_fd = os.pipe()
            try:
                proc = await self._spawn(
                    [
                        XVNC,
                        "-displayfd",
                        str(write_fd),
                        "-auth",
                        self.env["XAUTHORITY"],
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
                        str(self.dir / "vncpasswd"),
                        "-desktop",
                        self.name,
                    ],
                    "xvnc.log",
                    pass_fds=(write_fd,),
                    # Xvnc alone reads the VNC password; the apps never see it.
                    readable=(self.dir / "vncpasswd",),
                )
                os.close(write_fd)
                write_fd = -1
                number = await read_display_number(read_fd)
            finally:
                os.close(read_fd)
                if write_fd >= 0:
                    os.close(write_fd)
            if number:
                self.xvnc = proc
                self.display = f":{number}"
                self.port = port
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

    async def _wait_window_manager(self) -> None:
        """Wait until the display answers and openbox manages it (EWMH check window set)."""
        assert self.guest is not None and self.openbox is not None
        while True:
            if self.openbox.returncode is not None:
                log = self.dir / "logs" / "openbox.log"
                raise DesktopError(
                    f"local desktop {self.name}: openbox exited with status "
                    f"{self.openbox.returncode}: {log_tail(log)}"
                )
            try:
                result = await self.guest.run(["xprop", "-root", "_NET_SUPPORTING_WM_CHECK"], 5.0)
            except GuestError as exc:
                raise DesktopError(
                    f"local desktop {self.name}: cannot ask the display for its window "
                    f"manager (xprop, package x11-utils): {exc}"
                ) from exc
            if result.ok and b"window id" in result.stdout:
                return
            await asyncio.sleep(0.02)

    async def stop(self) -> None:
        """End the session's processes and remove its files; never raises."""
        if self.windows is not None:
            await self.windows.stop()
        if self.guest is not None:
            self.guest.close()
        self.watch.stop()
        if self.vnc is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(2.0):
                    await self.vnc.close()
        # No grace: nothing of the session is kept (its folder goes next), and its
        # traced programs lose a SIGTERM to the tracer dying beside them (measured:
        # GIMP, openbox, the bus and Xvnc outlived it for the whole 1 s grace).
        await asyncio.to_thread(reaper.kill_marked, self.marker, 0.0)
        await asyncio.to_thread(reaper.remove_session_dir, self.dir)
        for proc in self.children:
            with contextlib.suppress(TimeoutError, ProcessLookupError):
                async with asyncio.timeout(2.0):
                    await proc.wait()
        if self.reaper is not None:
            await _stop_reaper(self.reaper)


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
