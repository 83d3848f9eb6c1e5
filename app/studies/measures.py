"""Collaboration measures of one trial, computed from its recorded episode.

Every figure comes from what the store recorded (the episode, its steps and its
messages), never from what a side claimed, and each is defined here once, for the
report and the export alike; `docs/studies.md#collaboration-measures` gives the same
definitions for the reader of the data.

- **outcome**: `passed` (0/1) and `score` (0–1, the partial score), from the final
  desktop state; `error_kind` when the trial ended in an error.
- **time**: `time_on_task_s`, the episode's wall time; `participant_active_s`, the time
  the participant spent acting: composing each message (the time the episode waited
  for it) and taking over (their steps' time deciding and acting), or, when the
  participant is the agent, every step's; `participant_waiting_s`, the rest.
- **asks**: `asks` (the agent's questions), `asks_answered` (those the next user message
  answered), `answer_time_s` (the mean time from a question to its answer).
- **steering**: `interruptions` and `feedback_rounds` (user messages of those kinds),
  `take_overs` (runs of the participant's own steps between the agent's).
- **share**: `participant_step_share`, the participant's steps over all steps.
- **initiative** (after Co-Gym, Shao et al. 2025): an *initiative* is a turn that opens
  an exchange rather than answers one: the agent's questions; the participant's
  clarifications, interruptions and feedback, and each take-over.
  `participant_initiative_share` is the participant's share of them, and
  `initiative_entropy` is −Σ p log₂ p over the two parties' shares (0: one side drives
  it all; 1: both equally). Both are empty when neither side took any.
- **controlled autonomy** (after Co-Gym): `confirmations_answered` (questions that got
  an answer) and `participant_halts` (interruptions and take-overs: the participant
  stopping the agent's own course).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Literal

from app.store.records import EpisodeRecord, MessageRecord, StepRecord

ParticipantRole = Literal["user", "agent"]

MEASURES: dict[str, tuple[str, str]] = {
    "passed": ("0/1", "the final desktop state passed the task's checks"),
    "score": ("0–1", "the partial score of the final desktop state"),
    "time_on_task_s": ("s", "the episode's wall time, start to end"),
    "participant_active_s": ("s", "composing messages and taking over (all steps as the agent)"),
    "participant_waiting_s": ("s", "time on task less the active time"),
    "asks": ("count", "the agent's questions (ASK)"),
    "asks_answered": ("count", "questions the next user message answered"),
    "answer_time_s": ("s", "mean time from a question to its answer"),
    "interruptions": ("count", "user messages of kind interruption"),
    "feedback_rounds": ("count", "user messages of kind feedback (after a DONE)"),
    "take_overs": ("count", "runs of the participant's own steps"),
    "participant_step_share": ("0–1", "the participant's steps over all steps"),
    "participant_initiative_share": ("0–1", "the participant's share of initiatives"),
    "initiative_entropy": ("bits, 0–1", "−Σ p log₂ p over the two parties' initiative shares"),
    "confirmations_answered": ("count", "the agent's questions that got an answer"),
    "participant_halts": ("count", "interruptions and take-overs"),
}
"""Each measure's unit and definition (the export's codebook reads them)."""

_OPENING_KINDS = ("clarification", "interruption", "feedback")
"""The user message kinds that open an exchange (an answer responds to one)."""


@dataclass(frozen=True)
class TrialMeasures:
    passed: int | None
    score: float | None
    time_on_task_s: float | None
    participant_active_s: float
    participant_waiting_s: float | None
    asks: int
    asks_answered: int
    answer_time_s: float | None
    interruptions: int
    feedback_rounds: int
    take_overs: int
    participant_step_share: float | None
    participant_initiative_share: float | None
    initiative_entropy: float | None
    confirmations_answered: int
    participant_halts: int

    def as_row(self) -> dict[str, float | int | None]:
        return asdict(self)


def trial_measures(
    episode: EpisodeRecord,
    steps: Sequence[StepRecord],
    messages: Sequence[MessageRecord],
    role: ParticipantRole = "user",
) -> TrialMeasures:
    """The measures of one trial's episode (see the module docstring)."""
    ended = episode.ended_at
    on_task = (ended - episode.started_at).total_seconds() if ended is not None else None
    theirs = [s for s in steps if role == "agent" or s.actor == "person"]
    acting = sum(s.agent_seconds + s.act_seconds for s in theirs)
    person_said = [m for m in messages if m.role == "user" and m.source == "person"]
    composing = sum(m.wait_seconds or 0.0 for m in person_said)
    active = acting + composing
    waiting = max(0.0, on_task - active) if on_task is not None else None

    asks = answered = 0
    answer_times: list[float] = []
    ordered = sorted(messages, key=lambda m: m.idx)
    for n, message in enumerate(ordered):
        if message.role != "agent" or message.kind != "question":
            continue
        asks += 1
        reply = next((m for m in ordered[n + 1 :] if m.role == "user"), None)
        if reply is not None and reply.kind == "answer":
            answered += 1
            answer_times.append((reply.created_at - message.created_at).total_seconds())
    users = [m for m in messages if m.role == "user"]
    interruptions = sum(m.kind == "interruption" for m in users)
    feedback = sum(m.kind == "feedback" for m in users)
    take_overs = _runs_of_person_steps(steps) if role == "user" else 0

    agent_opened = asks
    participant_opened = sum(m.kind in _OPENING_KINDS for m in users) + take_overs
    opened = agent_opened + participant_opened
    share = participant_opened / opened if opened else None
    return TrialMeasures(
        passed=None if episode.passed is None else int(episode.passed),
        score=episode.score,
        time_on_task_s=on_task,
        participant_active_s=active,
        participant_waiting_s=waiting,
        asks=asks,
        asks_answered=answered,
        answer_time_s=sum(answer_times) / len(answer_times) if answer_times else None,
        interruptions=interruptions,
        feedback_rounds=feedback,
        take_overs=take_overs,
        participant_step_share=len(theirs) / len(steps) if steps else None,
        participant_initiative_share=share,
        initiative_entropy=None if share is None else entropy([share, 1 - share]),
        confirmations_answered=answered,
        participant_halts=interruptions + take_overs,
    )


def _runs_of_person_steps(steps: Sequence[StepRecord]) -> int:
    runs = 0
    previous = "agent"
    for step in sorted(steps, key=lambda s: s.idx):
        if step.actor == "person" and previous != "person":
            runs += 1
        previous = step.actor
    return runs


def entropy(shares: Sequence[float]) -> float:
    """−Σ p log₂ p over shares that sum to 1 (0 log 0 is 0)."""
    return -sum(p * math.log2(p) for p in shares if p > 0)
