"""Bringing a desktop to a task's start state: reset, then the task's setup (s0).

`prepare_start` does it and returns a `PreparedStart`: when it began, how long it
took, each progress line with its offset, and the error if it failed (with the last
screen and windows the setup saw). It never records anything itself, so it can run
before the episode exists: a batch's warm pool (`app.batch.warm`) prepares the next
episode's desktop while the current episode runs, and the runner
(`app.episode.runner`) takes the prepared start as if it had just done the work
(`EpisodeRunner(prepared=...)`). Without one, the runner calls `prepare_start`
itself, as the episode's first part. Either way the runner records the same things:
the setup (`episodes.setup`, migration 0012) and, when it failed, its error, its last
frame and its windows. So an episode on a warm desktop is recorded as completely as
one that set up its own.

A desktop that saves start states (`SavesStartStates`, libvirt) restores the task's
saved state instead of replaying the setup, the first time saving it: the same seam
serves both backends.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from app.core.errors import TaskError
from app.desktops.base import Desktop, SavesStartStates
from app.episode.setup_steps import LastSeen, run_setup
from app.tasks.loader import setup_key
from app.tasks.model import Task


@dataclass
class PreparedStart:
    """A desktop brought to a task's start state (or the error that stopped it)."""

    task_id: str
    setup_key: str
    """What the start state depends on (`app.tasks.loader.setup_key`): a prepared
    start serves only an episode of a task with this key ("" when it failed before
    the key was known)."""
    warm: bool
    """Prepared ahead of its episode (a batch's warm pool), not as its first part."""
    started_at: datetime
    seconds: float
    lines: list[tuple[float, str]] = field(default_factory=list)
    """Each progress line (the reset, every setup step), with its offset in seconds."""
    restored: bool | None = None
    """A desktop that saves start states: True when one was restored, False when it
    was made (and saved) now; None on desktops that do not save them."""
    error: Exception | None = None
    """Why the desktop did not reach the start state; the episode ends in it."""
    seen: LastSeen = field(default_factory=LastSeen)
    """The last frame and windows the setup saw (kept with a failed episode)."""

    def as_json(self) -> dict[str, Any]:
        """What the store records (`Store.record_setup`)."""
        return {
            "warm": self.warm,
            "started_at": self.started_at.isoformat(),
            "seconds": round(self.seconds, 3),
            "lines": [[round(at, 3), text] for at, text in self.lines],
            "restored": self.restored,
            "failed": self.error is not None,
        }


def check_screen(task: Task, desktop: Desktop) -> None:
    """A task pinned to a screen size runs on a desktop of that size only (its
    recorded clicks and anchors are pixels of that screen).

    Raises:
        TaskError: the desktop is of another size; the message names both.
    """
    if task.screen is None:
        return  # not pinned: any size (its desktop is made 1280×800)
    info = desktop.info()
    needs = task.screen_size
    if (info.width, info.height) != needs:
        raise TaskError(
            f"{task.source}: screen: task {task.id} needs a {needs[0]}×{needs[1]} screen; "
            f"desktop {info.name} is {info.width}×{info.height}"
        )


async def prepare_start(
    task: Task,
    desktop: Desktop,
    backend: str,
    *,
    warm: bool = False,
    say: Callable[[str], None] | None = None,
) -> PreparedStart:
    """Reset `desktop` and run `task`'s setup on it (or restore its saved start
    state). Every progress line goes to `say` as it happens and into the result.

    An error of the reset or the setup is returned in `PreparedStart.error`, not
    raised: the episode it was for records it (a prepared start may be taken long
    after it failed). A cancellation is raised.
    """
    begun = time.monotonic()
    prepared = PreparedStart(task.id, "", warm, datetime.now(UTC), 0.0)

    def note(text: str) -> None:
        prepared.lines.append((time.monotonic() - begun, text))
        if say is not None:
            say(text)

    async def set_up() -> None:
        await run_setup(task, desktop, note, prepared.seen)

    try:
        prepared.setup_key = setup_key(task)  # raises when an asset cannot be read
        if isinstance(desktop, SavesStartStates):
            # Under software emulation a VM needs minutes to open an app: build the
            # start state once, then restore it from memory in seconds.
            check_screen(task, desktop)
            note(f"restoring the {backend} desktop's start state")
            prepared.restored = await desktop.reset_to(prepared.setup_key, set_up)
            note("restored the saved start state" if prepared.restored else "saved the start state")
        else:
            note(f"resetting the {backend} desktop")
            await desktop.reset()
            check_screen(task, desktop)
            note("running setup")
            await set_up()
    except Exception as exc:
        prepared.error = exc
    prepared.seconds = time.monotonic() - begun
    return prepared
