"""A desktop whose input was delivered before the runner heard of it.

When a person is the agent, their viewer (or the TUI's live view) already sent each
click and key to the desktop; the runner records those actions as steps and must not
send them a second time. It runs on `PassThroughDesktop(desktop)`: everything but
`act` goes to the desktop, and `act` only lets the step be recorded.
`app.episode.launch` wraps a person's desktop so; nothing else needs to.
"""

from __future__ import annotations

from app.core.actions import GuiAction
from app.core.frames import Frame, SettleResult
from app.desktops.base import Desktop, DesktopInfo, Guest


class PassThroughDesktop:
    """A desktop whose `act` does nothing: the person's input was already delivered."""

    def __init__(self, inner: Desktop) -> None:
        self.inner = inner

    @property
    def guest(self) -> Guest:
        return self.inner.guest

    def info(self) -> DesktopInfo:
        return self.inner.info()

    async def reset(self) -> None:
        await self.inner.reset()

    async def frame(self, timeout: float = 5.0) -> Frame:
        return await self.inner.frame(timeout)

    async def act(self, action: GuiAction) -> None:
        return None

    async def settle(
        self,
        timeout: float = 3.0,
        quiet: float = 0.1,
        change_wait: float = 0.3,
        *,
        adaptive: bool = False,
    ) -> SettleResult:
        return await self.inner.settle(timeout, quiet, change_wait, adaptive=adaptive)

    async def until_dead(self) -> str:
        return await self.inner.until_dead()

    async def close(self) -> None:
        await self.inner.close()
