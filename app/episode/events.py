"""What a running episode reports: the `RunnerEvent`s, the `EpisodeResult`, and the
`Reporter` that hands them on.

The runner emits each event on the event loop's thread as it happens; the TUI's episode
session, the CLI's `human` command, a batch (to tag its slot) and the Gymnasium
environment consume them. They are plain frozen dataclasses, apart from the loop that
makes them, so a consumer depends on what an episode says, not on how it runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from app.core.actions import Action
from app.core.conversation import Message
from app.core.outcomes import CheckOutcome
from app.core.vocabulary import ErrorKind, StepActor


@dataclass
class EpisodeResult:
    episode_id: int
    task_id: str
    status: str
    end_reason: str | None
    passed: bool | None
    score: float | None
    steps: int
    error: str | None = None
    checks: list[CheckOutcome] = field(default_factory=list)
    error_kind: ErrorKind | None = None
    """What failed, when the episode ended in an error (see app.core.errors)."""

    def as_json(self) -> dict[str, Any]:
        return {
            "episode": self.episode_id,
            "task": self.task_id,
            "status": self.status,
            "end_reason": self.end_reason,
            # An episode that ended in an error has no score: null, as the store keeps
            # it, never a 0 that reads like the agent's failure.
            "passed": self.passed,
            "score": self.score,
            "steps": self.steps,
            "error": self.error,
        }


@dataclass(frozen=True)
class StatusEvent:
    text: str


@dataclass(frozen=True)
class StepEvent:
    idx: int
    action: Action | None
    """None when the agent's answer was rejected before it became an action."""
    description: str
    agent_seconds: float
    act_seconds: float
    settle_seconds: float
    error: str | None
    actor: StepActor = "agent"
    """The agent, or the person taking over from the live view."""


@dataclass(frozen=True)
class MessageEvent:
    message: Message


@dataclass(frozen=True)
class PhaseEvent:
    index: int
    step: int


@dataclass(frozen=True)
class WaitingEvent:
    """The runner waits for the user: an answer to an ASK, a review of a DONE, or (person
    mode) the message of a phase that a GUI action made due."""

    what: Literal["answer", "review", "phase"]
    question: str | None = None
    draft: str | None = None
    """Person mode: the due phase's scripted message, offered to the person."""
    phase: int | None = None
    """Person mode: the index of the due phase, when one is."""


@dataclass(frozen=True)
class EndedEvent:
    result: EpisodeResult


RunnerEvent = StatusEvent | StepEvent | MessageEvent | PhaseEvent | WaitingEvent | EndedEvent


class Reporter:
    """Where a running episode's reports go: the runner and its collaborators share one.

    `progress` receives short status lines (CLI); `on_event` receives every
    `RunnerEvent` (TUI). Both are called on the event loop's thread and must not block.
    """

    def __init__(
        self,
        progress: Callable[[str], None] | None = None,
        on_event: Callable[[RunnerEvent], None] | None = None,
    ) -> None:
        self._progress = progress
        self._on_event = on_event

    def emit(self, event: RunnerEvent) -> None:
        if self._on_event is not None:
            self._on_event(event)

    def say(self, text: str) -> None:
        """A status line: printed by the CLI, and an event for the TUI."""
        if self._progress is not None:
            self._progress(text)
        self.emit(StatusEvent(text))
