"""The screen half of a desktop over a VNC session: frames, GUI actions and settling.

Both backends see and drive their desktop the same way (the local Xvnc and QEMU's VNC
server speak the same RFB), so `frame`, `act` and `settle` live here once. A VNC
failure becomes a `DesktopError` naming the desktop; a `wait` action is a pause here,
never a message to the server.

`until_dead` is here too, for the same reason: a desktop whose VNC connection ended
and cannot be reopened is gone, whatever the backend (Xvnc exited, QEMU died, the
libvirt host went away). A backend adds what only it can see (`_backend_death`: the
Xvnc process's exit, the libvirt domain's state), which is usually quicker and says
more.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

from app.core.actions import GuiAction, Wait
from app.core.errors import DesktopError, VNCError
from app.core.frames import Frame, SettleResult
from app.rfb.client import VNCSession

# How long a dropped VNC connection may take to reopen before the desktop counts as
# dead: a live server answers on loopback (or through a tunnel) in milliseconds, and
# a refused or reset connection fails at once; the bound is about 2 s.
REOPEN_TIMEOUT = 1.5
# How long the backend's account of a death may lag the VNC connection's: the exit of
# a killed Xvnc reaches the child watcher after its port refuses connections (by
# about a second with both cores busy). Within the bound of about 2 s above.
BACKEND_GRACE = 1.5


class VncScreen:
    """Mixed into a desktop that has a `name` and a running `VNCSession`."""

    name: str
    backend_label: str
    """How errors name the backend ('local desktop NAME: ...')."""

    def _vnc_session(self) -> VNCSession:
        """The running desktop's VNC session; DesktopError when it is not running."""
        raise NotImplementedError

    async def _backend_death(self) -> str:
        """Return (what died) once the backend sees the session die; by default it
        sees nothing beyond the VNC connection and waits for ever."""
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

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
        self,
        timeout: float = 3.0,
        quiet: float = 0.1,
        change_wait: float = 0.3,
        *,
        adaptive: bool = False,
    ) -> SettleResult:
        with self._vnc_errors():
            return await self._vnc_session().settle(timeout, quiet, change_wait, adaptive=adaptive)

    async def until_dead(self) -> str:
        """Return what died, once the running desktop has died; never returns while it
        lives. Cancel it to stop watching (the runner races it against setup steps
        and the episode)."""
        vnc = asyncio.ensure_future(self._vnc_lost())
        backend = asyncio.ensure_future(self._backend_death())
        watchers = [vnc, backend]
        try:
            done, _ = await asyncio.wait(watchers, return_when=asyncio.FIRST_COMPLETED)
            if backend not in done:
                # A refused reconnect is seen at once; the backend's own word (the
                # process's exit status, the domain's state) can lag it by a moment
                # on a loaded machine, and says more: wait for it, briefly.
                done, _ = await asyncio.wait({backend}, timeout=BACKEND_GRACE)
                done = done or {vnc}
            try:
                what = next(iter(done)).result()
            except DesktopError as exc:  # the backend itself no longer runs it
                what = str(exc)
        finally:
            for watcher in watchers:
                watcher.cancel()
            await asyncio.gather(*watchers, return_exceptions=True)
        return f"{self.backend_label} {self.name} died: {what}"

    async def _vnc_lost(self) -> str:
        """Return once the VNC connection has ended and cannot be reopened.

        A drop alone is not death: a server restart, a snapshot revert or a viewer's
        reconnect end connections of a live desktop, and the session reopens them.
        """
        lost: str | None = None
        while True:
            try:
                session = self._vnc_session()
            except DesktopError as exc:  # the backend itself no longer runs it
                return str(exc)
            client = session.client
            if client is not None and not client.closed:
                lost = str(await client.until_closed())
                continue
            try:
                async with asyncio.timeout(REOPEN_TIMEOUT):
                    await session.connected()
            except (VNCError, TimeoutError) as exc:
                why = str(exc) or f"no answer within {REOPEN_TIMEOUT:g} s"
                ended = f"its VNC connection ended ({lost})" if lost else "it has no VNC connection"
                return f"{ended} and could not be reopened: {why}"
