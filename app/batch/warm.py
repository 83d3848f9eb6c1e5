"""A batch's warm pool: the desktops of the slots that come next, brought to their
tasks' start states while the current episodes run.

Without it, every episode begins with its desktop's reset and its task's setup (a
GIMP task: ~6 s, most of it GIMP starting), and the desktop sits idle meanwhile.
With `warm=N`, up to N desktops beyond the batch's concurrency are borrowed from the
run's `DesktopPool` and prepared (`app.episode.prepare.prepare_start`: reset + setup,
or a VM's saved start state restored) for the next slots in the queue, so when an
episode ends the next one starts at once on a desktop that is ready.

A prepared start is kept for its slot (`take`). Its setup is recorded with the episode
that takes it (its time, its lines, and when it failed its error, last frame and
windows), exactly as an episode that set up its own desktop records it. A prepared
desktop no slot takes (the run was stopped, or failed) is closed by `close`, its
preparation cancelled if it was still under way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from app.batch.pool import DesktopPool, Lease
from app.episode.prepare import PreparedStart, prepare_start
from app.metrics.slots import Slot
from app.tasks.model import Task

Ready = tuple[Lease, PreparedStart]
"""A desktop lent by the pool, and how it was brought to its start state."""


class WarmStarts:
    """Up to `count` desktops prepared for the next slots of a run's queue."""

    def __init__(
        self,
        pool: DesktopPool,
        count: int,
        task_of: Callable[[Slot], tuple[Task, str | None]],
        log: Callable[[str], None] | None = None,
    ) -> None:
        """`task_of` answers a slot's task and the image its desktop needs."""
        self._pool = pool
        self._count = count
        self._task_of = task_of
        self._log = log or (lambda text: None)
        self._pending: dict[Slot, asyncio.Task[Ready]] = {}
        self.prepared = 0
        """How many preparations were started (for benches and tests)."""

    def fill(self, upcoming: Iterable[Slot]) -> None:
        """Start preparing desktops for the first slots of `upcoming` (in queue order)
        that have none, while fewer than `count` are prepared or under way."""
        for slot in upcoming:
            if len(self._pending) >= self._count:
                return
            if slot in self._pending:
                continue
            task, image = self._task_of(slot)
            self._pending[slot] = asyncio.create_task(
                self._prepare(task, image), name=f"warm-{slot}"
            )
            self.prepared += 1

    def take(self, slot: Slot) -> asyncio.Task[Ready] | None:
        """The preparation for `slot`, if one was started: it is the caller's now
        (await it for the desktop, which the caller gives back to the pool)."""
        return self._pending.pop(slot, None)

    async def _prepare(self, task: Task, image: str | None) -> Ready:
        lease = await self._pool.acquire(image)
        try:
            prepared = await prepare_start(task, lease.desktop, self._pool.backend, warm=True)
        except BaseException:
            # Cancelled (the slot is no longer needed): the half-made desktop goes.
            await self._pool.discard(lease)
            raise
        return lease, prepared

    async def close(self) -> None:
        """Close the desktops prepared for slots that no longer need them (cancelling
        preparations still under way)."""
        pending, self._pending = self._pending, {}
        for slot, preparing in pending.items():
            await discard(self._pool, preparing)
            self._log(f"{slot}: closed the desktop prepared for it (no longer needed)")


async def discard(pool: DesktopPool, preparing: asyncio.Task[Ready]) -> None:
    """Cancel a preparation, or close the desktop it prepared."""
    if not preparing.done():
        preparing.cancel()
    # wait, not await: the preparation's own error or cancellation is not raised
    # here, and a cancellation of the caller still is.
    await asyncio.wait({preparing})
    if preparing.cancelled() or preparing.exception() is not None:
        return  # `_prepare` gave its desktop back, or never had one
    lease, _ = preparing.result()
    await pool.discard(lease)
