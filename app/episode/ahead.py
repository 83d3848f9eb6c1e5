"""The next episode's start, prepared while the current one runs: no waiting between
trials.

Every episode begins with its desktop's reset and its task's setup (a GIMP task:
~6-8 s, most of it GIMP starting). A person doing trial after trial, or watching the
demo's tasks one after another, would wait that long each time. `StartAhead` brings
the next episode's desktop to its task's start state in the background
(`app.episode.prepare.prepare_start(warm=True)`), while the current episode and the
questionnaires after it run, so the next one starts on a ready desktop.

The desktops come from `DesktopsByKind`: a desktop given back after its episode is
reused for the start after the next one, so a run that prepares one start ahead keeps
at most two desktops of each kind alive (the one in use, the one being prepared),
which matters for libvirt's VMs.

Ownership is explicit: a desktop `take` hands over is the caller's until it gives it
back to its `DesktopsByKind` (`give_back`) after the episode; `launch` leaves a desktop
passed in to its owner. A prepared start no episode takes (another task came next, the
run stopped) has its desktop closed. The episode that takes a prepared start records
it as its setup (`warm: true`), as completely as an episode that set up its own
desktop; a preparation that failed is handed over all the same, so the episode records
its error, as a batch's warm pool does.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import replace

from app.desktops.base import Desktop
from app.episode.launch import DesktopSpec, desktop_spec, make_spec_desktop
from app.episode.prepare import PreparedStart, prepare_start
from app.tasks.loader import setup_key
from app.tasks.model import Task

Ready = tuple[Desktop, PreparedStart]
"""A desktop, and how it was brought to its task's start state."""


class DesktopsByKind:
    """Desktops of each kind a run's tasks need (libvirt: per image and screen size;
    local: per screen size), lent for one episode at a time and reused once given back.

    A kind's desktops differ in their index (`DesktopSpec.index`: a VM's name), so the
    one in use and the one being prepared never collide. Each lend of a desktop made
    earlier is followed by its reset (the episode's or a `StartAhead`'s), so reuse
    leaves nothing of the previous episode behind.
    """

    def __init__(self, backend: str, make: Callable[[DesktopSpec], Desktop] = make_spec_desktop):
        """`make` makes a new, not yet started desktop of a spec (tests count them)."""
        self.backend = backend
        self._make = make
        self._idle: list[tuple[DesktopSpec, Desktop]] = []
        self._lent: list[tuple[DesktopSpec, Desktop]] = []

    def lend(self, task: Task) -> Desktop:
        """A desktop of `task`'s kind: an idle one, else a new one (not yet started:
        the reset that follows starts it)."""
        kind = desktop_spec(self.backend, task)
        for place, (spec, desktop) in enumerate(self._idle):
            if replace(spec, index=0) == kind:
                self._lent.append(self._idle.pop(place))
                return desktop
        used = {spec.index for spec, _ in self._idle + self._lent if replace(spec, index=0) == kind}
        index = min(set(range(len(used) + 1)) - used)
        spec = replace(kind, index=index)
        desktop = self._make(spec)
        self._lent.append((spec, desktop))
        return desktop

    def give_back(self, desktop: Desktop) -> None:
        """`desktop`'s episode has ended: it may be lent again."""
        place = self._place(self._lent, desktop)
        self._idle.append(self._lent.pop(place))

    async def discard(self, desktop: Desktop) -> None:
        """Close a lent desktop (its start is not wanted, or it was left half made)."""
        del self._lent[self._place(self._lent, desktop)]
        await desktop.close()

    def alive(self) -> int:
        """How many desktops are lent or idle (for tests and benches)."""
        return len(self._idle) + len(self._lent)

    async def close(self) -> None:
        """Close every desktop, lent or idle (a lent one's episode has ended or been
        stopped by now)."""
        every, self._idle, self._lent = self._idle + self._lent, [], []
        for _, desktop in every:
            await desktop.close()

    @staticmethod
    def _place(desktops: list[tuple[DesktopSpec, Desktop]], desktop: Desktop) -> int:
        for place, (_, lent) in enumerate(desktops):
            if lent is desktop:
                return place
        raise ValueError(f"desktop {desktop.info().name} was not lent here")


class StartAhead:
    """One episode's start prepared ahead, in the background (see the module
    docstring). `prepare(task)`, then later `take(task)`; `close()` when done."""

    def __init__(
        self,
        desktops: DesktopsByKind,
        *,
        what: str = "episode",
        say: Callable[[str], None] | None = None,
    ) -> None:
        """`what` names an episode in the progress lines ("trial", "task"); `say`
        hears them: when the next start is ready, and how long an episode waited."""
        self._desktops = desktops
        self._what = what
        self._say = say or (lambda text: None)
        self._pending: asyncio.Task[Ready] | None = None
        self.prepared = 0
        """How many preparations were started (for tests and benches)."""

    def prepare(self, task: Task) -> None:
        """Start bringing a desktop to `task`'s start state in the background. A start
        prepared earlier and not taken is discarded first (one start ahead at most)."""
        previous = self._pending
        self._pending = asyncio.create_task(self._prepare(task, previous), name=f"ahead-{task.id}")
        self.prepared += 1

    async def take(self, task: Task) -> Ready | None:
        """The prepared desktop and its start, when they are for `task` (the same task
        and start state), once ready: the caller's now, given back to the
        `DesktopsByKind` after its episode. None when nothing was prepared, or it was
        for another start (its desktop is closed): the episode resets a desktop itself.

        Raises:
            DeskLoopError: no desktop could be made (the episode would have failed the
                same way).
        """
        preparing, self._pending = self._pending, None
        if preparing is None:
            return None
        begun = time.monotonic()
        waited = not preparing.done()
        desktop, prepared = await preparing
        if not _serves(prepared, task):
            await self._desktops.discard(desktop)
            self._say(f"closed the desktop prepared for {prepared.task_id}: {task.id} came next")
            return None
        if waited:
            self._say(f"this {self._what} waited {time.monotonic() - begun:.1f} s for its desktop")
        return desktop, prepared

    async def start(
        self, task: Task, upcoming: Task | None
    ) -> tuple[Desktop, PreparedStart | None]:
        """The desktop for an episode of `task` and its prepared start (`take`), else a
        desktop lent for the episode to reset itself (no start: None); then begin
        preparing `upcoming`'s, if another episode follows. The desktop goes back to
        the `DesktopsByKind` when the episode ends."""
        taken = await self.take(task)
        desktop, prepared = taken if taken is not None else (self._desktops.lend(task), None)
        if upcoming is not None:
            self.prepare(upcoming)
        return desktop, prepared

    async def close(self) -> None:
        """Cancel a preparation still under way, or close the desktop of a start no
        episode took."""
        preparing, self._pending = self._pending, None
        if preparing is not None:
            await _discard(self._desktops, preparing)

    async def _prepare(self, task: Task, previous: asyncio.Task[Ready] | None) -> Ready:
        if previous is not None:
            await _discard(self._desktops, previous)
        desktop = self._desktops.lend(task)
        try:
            prepared = await prepare_start(task, desktop, self._desktops.backend, warm=True)
        except BaseException:
            # Cancelled (the start is no longer wanted): the half-made desktop goes.
            await self._desktops.discard(desktop)
            raise
        if prepared.error is None:
            self._say(f"next {self._what}'s desktop ready in {prepared.seconds:.1f} s ({task.id})")
        else:
            self._say(f"next {self._what}'s desktop failed its setup ({task.id}): {prepared.error}")
        return desktop, prepared


def _serves(prepared: PreparedStart, task: Task) -> bool:
    """Whether a prepared start is `task`'s: the same task and start state. One that
    failed serves its task (the episode records the error)."""
    if prepared.task_id != task.id:
        return False
    return prepared.error is not None or prepared.setup_key == setup_key(task)


async def _discard(desktops: DesktopsByKind, preparing: asyncio.Task[Ready]) -> None:
    """Cancel a preparation, or close the desktop it prepared."""
    if not preparing.done():
        preparing.cancel()
    # wait, not await: the preparation's own error or cancellation is not raised here,
    # and a cancellation of the caller still is.
    await asyncio.wait({preparing})
    if preparing.cancelled() or preparing.exception() is not None:
        return  # `_prepare` closed its desktop, or never had one
    desktop, _ = preparing.result()
    await desktops.discard(desktop)
