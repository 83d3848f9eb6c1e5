"""The time an episode waits for the person in the loop, or stands paused: kept off
its time budget (person mode; DESIGN.md's words).

A person reading a question, or deciding on a DONE, is not the agent spending its
budget: while the runner awaits the person, the budget's clock stops; the waits are
recorded apart. Nor is a pause (the TUI's F2): the agent takes no step meanwhile.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


class OffBudget:
    """Seconds kept off the time budget: the spans that ended, and the one in progress."""

    def __init__(self) -> None:
        self.total = 0.0
        """Seconds of the spans that ended."""
        self._since: float | None = None

    def seconds(self, now: float | None = None) -> float:
        """All the spans so far, up to `now` (monotonic) for one in progress."""
        if self._since is None:
            return self.total
        return self.total + max(0.0, (time.monotonic() if now is None else now) - self._since)

    @property
    def running(self) -> bool:
        return self._since is not None

    def begin(self) -> None:
        if self._since is None:
            self._since = time.monotonic()

    def end(self) -> float:
        """End the span in progress (if any); returns its seconds."""
        if self._since is None:
            return 0.0
        span = max(0.0, time.monotonic() - self._since)
        self.total += span
        self._since = None
        return span


class PersonWaits(OffBudget):
    """Seconds spent waiting for the person, the wait in progress included."""

    @property
    def waiting(self) -> bool:
        return self.running

    async def wait(self, waiting: Awaitable[T], abort: Awaitable[None]) -> tuple[T, float] | None:
        """Await the person's reply `waiting` unless `abort` completes first (None
        then), with the seconds this wait took, which are added to `total` either way."""
        reply = asyncio.ensure_future(waiting)
        stop = asyncio.ensure_future(abort)
        self.begin()
        try:
            done, _ = await asyncio.wait({reply, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            if not reply.done():
                reply.cancel()  # aborted, or the episode itself was cancelled
            waited = self.end()
        if reply not in done:
            return None
        return reply.result(), waited
