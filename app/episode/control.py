"""How an episode is steered from outside its loop: `RunOptions`, fixed when it starts,
and `EpisodeControl`, a person's hand on it while it runs.

A cancellation (Ctrl-C, a batch's time limit) ends an episode as an abort unless
`RunOptions.cancel_reason` names an infrastructure reason; an `EpisodeControl.abort`
ends it at the next step boundary. The runner (`app.episode.runner`) reads both; the
CLI, the TUI, a batch and the Gymnasium environment set them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from app.core.actions import GuiAction
from app.core.errors import DeskLoopError
from app.core.vocabulary import UserKind
from app.episode.judge import JudgeConfig

T = TypeVar("T")


@dataclass(frozen=True)
class RunOptions:
    settle_timeout: float = 3.0
    """Upper bound on waiting for the screen to settle after an action."""
    settle_quiet: float = 0.1
    """The screen must stay unchanged this long to count as settled (with
    `settle_adaptive`, the longest it must)."""
    settle_change_wait: float = 0.3
    """How long to wait for an action's first visible effect."""
    settle_adaptive: bool = True
    """Size the quiet from the screen's own pace after each kind of action
    (`app.rfb.pace`): a pointer move that repaints at once waits 20 ms of quiet, a
    click that opens a dialog drawn in parts as long as such dialogs pause."""
    store_frames: bool = True
    batch_id: str | None = None
    extra_config: dict[str, Any] = field(default_factory=dict)
    """Added to the episode's recorded `config` (a batch records its desktop's host)."""
    archive_cap_bytes: int = 256 * 1024 * 1024
    """The most the final-state archive keeps of this episode (app.episode.archive)."""
    cancel_reason: Callable[[], DeskLoopError | None] | None = None
    """Asked when the episode is cancelled: an error (a batch's time limit ran out)
    makes it end as that error, its kind recorded; None, as an abort."""
    judge: JudgeConfig | None = None
    """The model judge's endpoint, for a task's `judge` checks (app.episode.judge);
    None: a judge that does not count records that none was configured, and a task
    whose judge counts is refused before its episode starts (`launch`)."""


class Aborted(Exception):
    """The person aborted the episode."""


@dataclass(frozen=True)
class PersonAction:
    """One of the person's actions, and whether it already reached the desktop."""

    action: GuiAction
    delivered: bool = False


class EpisodeControl:
    """How a person steers a running episode. Call from the event loop's thread.

    Injected messages are delivered before the agent's next decision; pausing takes
    effect between steps (an action in flight completes); abort ends the episode as
    `aborted` at the next step boundary, or at once while paused or waiting.
    The person's own actions (`take_over`: clicks, drags, scrolls and keys from the live
    view) run between the agent's steps, and at once while paused, recorded as the
    person's steps.
    """

    def __init__(self) -> None:
        self._injections: list[tuple[str, UserKind]] = []
        self._person_actions: list[PersonAction] = []
        self._person_acted = asyncio.Event()
        self._running = asyncio.Event()
        self._running.set()
        self._abort = asyncio.Event()

    def inject(self, text: str, kind: UserKind) -> None:
        if not text.strip():
            raise ValueError("an injected message needs text")
        self._injections.append((text, kind))

    def take_over(self, action: GuiAction, *, delivered: bool = False) -> None:
        """Queue one of the person's own GUI actions: for the desktop, or, `delivered`,
        already on it (their input went through the recording proxy,
        app.rfb.person) and only to be recorded."""
        self._person_actions.append(PersonAction(action, delivered))
        self._person_acted.set()

    def take_person_actions(self) -> list[PersonAction]:
        taken, self._person_actions = self._person_actions, []
        self._person_acted.clear()
        return taken

    async def wait_while_paused_for_person(self) -> None:
        """Until resumed, aborted, or the person acts (their actions run while paused)."""
        if not self._running.is_set() and not self._person_actions:
            resumed = asyncio.ensure_future(self._running.wait())
            acted = asyncio.ensure_future(self._person_acted.wait())
            try:
                await asyncio.wait({resumed, acted}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                resumed.cancel()
                acted.cancel()

    def pause(self) -> None:
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    def abort(self) -> None:
        self._abort.set()
        self._running.set()

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    @property
    def abort_requested(self) -> bool:
        return self._abort.is_set()

    def take_injections(self) -> list[tuple[str, UserKind]]:
        taken, self._injections = self._injections, []
        return taken

    async def wait_while_paused(self) -> None:
        await self._running.wait()

    async def until_abort(self) -> None:
        await self._abort.wait()

    async def unless_aborted(self, waiting: Awaitable[T]) -> T:
        """Await `waiting` (the agent's decision, a simulated user's reply) unless the
        person aborts first: a person agent waiting for their next input, or a model
        still thinking, does not hold an abort back.

        Raises:
            Aborted: the abort came first (`waiting` is cancelled).
        """
        reply = asyncio.ensure_future(waiting)
        abort = asyncio.ensure_future(self.until_abort())
        try:
            done, _ = await asyncio.wait({reply, abort}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # cancelled (the time budget, Ctrl-C): the wait goes too
            reply.cancel()
            raise
        finally:
            abort.cancel()
        if reply not in done:
            reply.cancel()
            raise Aborted
        result: T = reply.result()
        return result
