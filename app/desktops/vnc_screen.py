"""The screen half of a desktop over a VNC session: frames, GUI actions and settling.

Both backends see and drive their desktop the same way (the local Xvnc and QEMU's VNC
server speak the same RFB), so `frame`, `act` and `settle` live here once. A VNC
failure becomes a `DesktopError` naming the desktop; a `wait` action is a pause here,
never a message to the server.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

from app.core.actions import GuiAction, Wait
from app.core.errors import DesktopError, VNCError
from app.core.frames import Frame, SettleResult
from app.rfb.client import VNCSession


class VncScreen:
    """Mixed into a desktop that has a `name` and a running `VNCSession`."""

    name: str
    backend_label: str
    """How errors name the backend ('local desktop NAME: ...')."""

    def _vnc_session(self) -> VNCSession:
        """The running desktop's VNC session; DesktopError when it is not running."""
        raise NotImplementedError

    @contextlib.contextmanager
    def _vnc_errors(self) -> Iterator[None]:
        try:
            yield
        except VNCError as exc:
            raise DesktopError(f"{self.backend_label} {self.name}: {exc}") from exc

    async def frame(self, timeout: float = 5.0) -> Frame:
        with self._vnc_errors():
            return await self._vnc_session().frame(timeout)

    async def act(self, action: GuiAction) -> None:
        """Deliver one action over VNC (ActionError for a malformed one, e.g. off-screen)."""
        if isinstance(action, Wait):
            await asyncio.sleep(action.seconds)
            return
        with self._vnc_errors():
            await self._vnc_session().perform(action)

    async def settle(
        self, timeout: float = 3.0, quiet: float = 0.1, change_wait: float = 0.3
    ) -> SettleResult:
        with self._vnc_errors():
            return await self._vnc_session().settle(timeout, quiet, change_wait)
