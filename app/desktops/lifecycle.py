"""The lifecycle every backend's desktop shares: reset, close, and `async with` around both.

A desktop's lifecycle operations never overlap: `reset()` and `close()` run under the
desktop's one lock (a backend's own operations, such as saving a start state, take it
too), so a close that arrives while a reset is still starting a session waits for it
and then removes all of it instead of racing it. `async with desktop:` resets it on
entry and closes it however the block ends, an error or a cancellation included, so
nothing is left running. A backend writes only what its reset and close do
(`_reset`, `_close`), with the lock already held.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from types import TracebackType
from typing import Self


class DesktopLifecycle(ABC):
    """Base of a backend's `Desktop`: its lock, its state and the lifecycle over them."""

    _state: str
    """What `info()` reports: 'stopped', 'starting', 'running', 'failed' or 'closed'."""

    def __init__(self) -> None:
        self._state = "stopped"
        self._lock = asyncio.Lock()

    async def reset(self) -> None:
        """Bring the desktop to a clean start state (see `Desktop.reset`).

        Raises:
            DesktopError: the session could not be (re)started.
        """
        async with self._lock:
            await self._reset()

    async def close(self) -> None:
        """Stop the session and remove everything it made. Safe to call twice."""
        async with self._lock:
            await self._close()

    async def __aenter__(self) -> Self:
        await self.reset()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    @abstractmethod
    async def _reset(self) -> None:
        """The backend's reset, with the lock held."""

    @abstractmethod
    async def _close(self) -> None:
        """The backend's close, with the lock held; a second call does nothing harmful."""
