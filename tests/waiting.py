"""The one way tests wait for something: poll a condition until it holds, or fail
naming what never happened. Never a bare sleep standing in for a condition.

PATIENCE is the least any wait allows: a suite run loads two cores with three workers
and a VM under software emulation, and a condition that holds in 50 ms on an idle
machine can then take seconds. A longer patience costs a passing test nothing, since
the wait ends as soon as the condition holds.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable

PATIENCE = 30.0


def wait_until(
    condition: Callable[[], bool], what: str, timeout: float = PATIENCE, interval: float = 0.05
) -> None:
    """Block until `condition()` holds; fail after `timeout` (at least PATIENCE) seconds."""
    patience = max(timeout, PATIENCE)
    deadline = time.monotonic() + patience
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {patience:g} s waiting for {what}")
        time.sleep(interval)


async def eventually(
    condition: Callable[[], bool | Awaitable[bool]],
    what: str,
    timeout: float = PATIENCE,
    interval: float = 0.05,
    pause: Callable[[float], Awaitable[object]] | None = None,
) -> None:
    """Let the event loop run until `condition()` (plain or awaitable) holds; fail after
    `timeout` (at least PATIENCE) seconds. `pause` waits between polls (a Textual
    Pilot's `pause`, so the app processes its messages); asyncio.sleep by default."""
    patience = max(timeout, PATIENCE)
    deadline = time.monotonic() + patience
    wait = pause or asyncio.sleep
    while True:
        held = condition()
        if inspect.isawaitable(held):
            held = await held
        if held:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {patience:g} s waiting for {what}")
        await wait(interval)
