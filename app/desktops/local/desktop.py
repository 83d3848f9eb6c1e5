"""The local desktop backend: Xvnc + openbox on this host, one throw-away HOME per session.

`reset()` throws the whole session away (app/desktops/local/session.py: its folder,
HOME, bus, Xvnc, openbox and VNC connection) and starts a new one, so nothing from one
episode reaches the next.

Every process of the desktop runs as the lab user (app/desktops/local/lab_user.py: an
unprivileged system user when DeskLoop runs as root) inside a sandbox whose only
writable place is the HOME (app/desktops/local/sandbox.py).

Nothing is left behind: every process of a session carries a marker in its
environment, and a watchdog (app/desktops/local/reaper.py) fed by a pipe from this
process kills them all and removes the session directory when this process
dies, however it dies.
"""

from __future__ import annotations

import asyncio
import signal
import uuid
from pathlib import Path

from app.core.errors import DesktopError, GuestError
from app.core.integrity import ExecLog, LastWrite, WindowLog
from app.desktops.base import DesktopInfo
from app.desktops.lifecycle import DesktopLifecycle
from app.desktops.local.guest import LocalGuest
from app.desktops.local.lab_user import lab_user
from app.desktops.local.reaper import reap_orphans
from app.desktops.local.sandbox import find_bwrap
from app.desktops.local.session import LocalSession
from app.desktops.vnc_screen import VncScreen
from app.rfb.client import VncEndpoint, VNCSession

__all__ = ["LocalDesktop", "reap_orphans"]


class LocalDesktop(DesktopLifecycle, VncScreen):
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
        super().__init__()
        self.name = name or f"local-{uuid.uuid4().hex[:6]}"
        self.width = width
        self.height = height
        self.root = root
        self.start_timeout = start_timeout
        self._session: LocalSession | None = None

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

    async def _reset(self) -> None:
        """Throw the current session away and start a fresh one."""
        await self._stop()
        self._state = "starting"
        try:
            user, bwrap = lab_user(), find_bwrap()
        except DesktopError:
            self._state = "failed"
            raise
        try:
            session = await asyncio.to_thread(
                LocalSession.create, self.name, self.width, self.height, self.root, user, bwrap
            )
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
                await session.start()
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
        """Every program started in the session so far (see app.desktops.local.exec_trace)."""
        return self._running().watch.exec_log()

    def window_log(self) -> WindowLog:
        """Every window opened in the session so far (see app.desktops.local.windows)."""
        session = self._running()
        if session.windows is None:
            return WindowLog((), False, "not watched: the session has no window manager yet")
        return session.windows.log()

    async def _close(self) -> None:
        await self._stop(state="closed")

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

    def _running(self) -> LocalSession:
        if self._session is None or self._state != "running":
            raise DesktopError(f"local desktop {self.name} is {self._state}; call reset() first")
        return self._session

    def _vnc_session(self) -> VNCSession:
        session = self._running()
        assert session.vnc is not None
        return session.vnc

    async def _stop(self, state: str = "stopped") -> None:
        """End the current session (if any) and remove its files; never raises."""
        session = self._session
        self._session = None
        if session is not None:
            await session.stop()
        self._state = state
