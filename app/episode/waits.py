"""The time an episode waits for the person in the loop: kept off its time budget and
recorded apart (person mode; DESIGN.md's words).

A person reading a question, or deciding on a DONE, is not the agent spending its
budget: while the runner awaits the person, the budget's clock stops.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


class PersonWaits:
    """Seconds spent waiting for the person, the wait in progress included."""

    def __init__(self) -> None:
        self.total = 0.0
        """Seconds of the waits that ended."""
        self._since: float | None = None

    def seconds(self, now: float | None = None) -> float:
        """All the waiting so far, up to `now` (monotonic) for a wait in progress."""
        if self._since is None:
            return self.total
        return self.total + max(0.0, (time.monotonic() if now is None else now) - self._since)

    @property
    def waiting(self) -> bool:
        return self._since is not None

    async def wait(self, waiting: Awaitable[T], abort: Awaitable[None]) -> tuple[T, float] | None:
        """Await the person's reply `waiting` unless `abort` completes first (None
        then), with the seconds this wait took, which are added to `total` either way."""
        reply = asyncio.ensure_future(waiting)
        stop = asyncio.ensure_future(abort)
        begun = self._since = time.monotonic()
        try:
            done, _ = await asyncio.wait({reply, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            if not reply.done():
                reply.cancel()  # aborted, or the episode itself was cancelled
            waited = time.monotonic() - begun
            self.total += waited
            self._since = None
        if reply not in done:
            return None
        return reply.result(), waited
