"""Noticing a desktop's death while other work waits on it.

A setup step waiting for a window, or an agent thinking, would otherwise learn of a
dead desktop only at its own timeout (90 s for a window). `while_alive` races the
work against the desktop's `until_dead`, so the death ends it within about a second,
with an error that says what died.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, Protocol, TypeVar

from app.core.errors import DeskLoopError, DesktopError

T = TypeVar("T")

# How long a failure of the desktop's side waits for the death watch to speak: above
# the VNC watch's reopen timeout (app.desktops.vnc_screen.REOPEN_TIMEOUT). A refused
# reopen is told at once, and the watch's wait for the backend's account
# (BACKEND_GRACE) fits in it.
DEATH_GRACE = 2.0


class Mortal(Protocol):
    """What `while_alive` needs of a desktop (every `Desktop` is one)."""

    async def until_dead(self) -> str: ...


class DesktopDied(DesktopError):
    """The desktop died (its process exited, its domain stopped, its VNC server went
    away) while something waited on it. A desktop error: a retry on a fresh desktop
    may succeed."""

    title = "Desktop died"


async def while_alive(desktop: Mortal, work: Coroutine[Any, Any, T]) -> T:
    """Await `work`, unless the desktop dies first: then cancel it and raise.

    Raises:
        DesktopDied: the desktop died first, or `work` failed of the desktop's side
            (a lost VNC connection, a guest command that cannot reach the display)
            because it had died; the message says what died.
    """
    job = asyncio.ensure_future(work)
    death = asyncio.ensure_future(desktop.until_dead())
    try:
        await asyncio.wait({job, death}, return_when=asyncio.FIRST_COMPLETED)
        if job.done() and _failed_of_the_desktop(job) and not death.done():
            # The work may have failed of the death before the watch heard of it:
            # give the watch a moment, so the error says that the desktop died.
            await asyncio.wait({death}, timeout=DEATH_GRACE)
    finally:
        job_was_done = job.done()
        for task in (job, death):
            task.cancel()
        await asyncio.gather(job, death, return_exceptions=True)
    death_said = death.done() and not death.cancelled()
    if job_was_done and not job.cancelled() and (job.exception() is None or not death_said):
        return job.result()
    if death_said:
        raise DesktopDied(death.result())  # (result() raises a bug of the watch itself)
    return job.result()


def _failed_of_the_desktop(job: asyncio.Future[Any]) -> bool:
    if job.cancelled():
        return False
    exc = job.exception()
    return isinstance(exc, DeskLoopError) and exc.of_the_desktop
