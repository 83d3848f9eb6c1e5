"""What the store reads back: one frozen dataclass per table, each built from its row.

Column values become Python ones here and nowhere else: ISO timestamps become aware
datetimes, JSON text becomes values, INTEGER 0/1 becomes bool, a phase's trigger JSON
becomes the `Trigger` it was written from. A check reads back as the `CheckOutcome`
scoring made, the one shape of a check's outcome (app.core.outcomes).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Self, cast

from app.core.judgements import JudgedImage, Judgement, Verdict
from app.core.outcomes import CheckOutcome
from app.core.triggers import Trigger, parse_trigger
from app.core.vocabulary import (
    EndReason,
    EpisodeStatus,
    ErrorKind,
    MessageKind,
    MessageOrigin,
    PhaseKind,
    PhaseStatus,
    Role,
    Source,
    StepActor,
    UserMode,
)
from app.core.windows import WindowList


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _opt_time(text: str | None) -> datetime | None:
    return None if text is None else _time(text)


def _opt_json(text: str | None) -> Any:
    return None if text is None else json.loads(text)


@dataclass(frozen=True)
class EpisodeRecord:
    id: int
    task_id: str
    task_path: str
    task_sha256: str
    app: str
    level: str
    interactive: bool
    agent: str
    user_mode: UserMode
    backend: str
    status: EpisodeStatus
    end_reason: EndReason | None
    error: str | None
    passed: bool | None
    score: float | None
    steps: int
    started_at: datetime
    ended_at: datetime | None
    pid: int
    hostname: str
    config: dict[str, Any]
    batch_id: str | None
    final_frame: str | None
    batch_agent: str | None = None
    """For a batch episode: the agent spec of its slot (see app.batch)."""
    batch_repeat: int | None = None
    """For a batch episode: the repeat index of its slot."""
    batch_attempt: int | None = None
    """For a batch episode: 0 for the first try of its slot, then 1, 2... on retries."""
    error_kind: ErrorKind | None = None
    """What failed, for an episode that ended in an error (app.core.errors); None for
    one that did not, and for an error of unknown kind (recorded before kinds were,
    in words migration 0005 could not place)."""
    final_windows: WindowList | None = None
    """The windows open when its setup failed (as last seen, when the desktop died)."""
    setup: dict[str, Any] | None = None
    """How its desktop was brought to its start state (migration 0012): `warm` (done
    ahead, while another episode ran), `started_at`, `seconds`, `lines` ([offset
    seconds, text] each), `restored` (a saved start state was restored) and `failed`;
    None before it was recorded."""
    person_wait_seconds: float = 0.0
    """Person mode: seconds the episode waited for the person, off its time budget."""
    paused_seconds: float = 0.0
    """Seconds the episode stood paused between steps (the TUI's F2), off its time
    budget (migration 0018)."""
    note: str = ""
    """The researcher's note on the episode (migration 0015); "" for none."""
    tags: tuple[str, ...] = ()
    """The researcher's tags on the episode, sorted (migration 0015)."""

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Self:
        return cls(
            id=row["id"],
            task_id=row["task_id"],
            task_path=row["task_path"],
            task_sha256=row["task_sha256"],
            app=row["app"],
            level=row["level"],
            interactive=bool(row["interactive"]),
            agent=row["agent"],
            user_mode=cast(UserMode, row["user_mode"]),
            backend=row["backend"],
            status=cast(EpisodeStatus, row["status"]),
            end_reason=cast(EndReason | None, row["end_reason"]),
            error=row["error"],
            passed=None if row["passed"] is None else bool(row["passed"]),
            score=row["score"],
            steps=row["steps"],
            started_at=_time(row["started_at"]),
            ended_at=_opt_time(row["ended_at"]),
            pid=row["pid"],
            hostname=row["hostname"],
            config=json.loads(row["config"]),
            batch_id=row["batch_id"],
            final_frame=row["final_frame"],
            batch_agent=row["batch_agent"],
            batch_repeat=row["batch_repeat"],
            batch_attempt=row["batch_attempt"],
            error_kind=cast(ErrorKind | None, row["error_kind"]),
            final_windows=(
                None
                if row["final_windows"] is None
                else WindowList.from_raw(json.loads(row["final_windows"]))
            ),
            setup=_opt_json(row["setup"]),
            person_wait_seconds=row["person_wait_seconds"],
            paused_seconds=row["paused_seconds"],
            note=row["note"],
            tags=tuple(json.loads(row["tags"])),
        )


@dataclass(frozen=True)
class BatchRecord:
    id: str
    created_at: datetime
    suite: dict[str, Any]
    """What app.batch needs to resume the batch: tasks, agents, repeats, options."""

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Self:
        return cls(
            id=row["id"], created_at=_time(row["created_at"]), suite=json.loads(row["suite"])
        )


@dataclass(frozen=True)
class StepRecord:
    episode_id: int
    idx: int
    action: dict[str, Any]
    kind: str
    description: str
    started_at: datetime
    agent_seconds: float
    act_seconds: float
    settle_seconds: float
    frame: str | None
    phase_index: int | None
    active_message_id: int | None
    error: str | None
    agent_info: dict[str, Any] | None = None
    """What the agent reported for this step (model agents: tokens, latency, raw answer)."""
    actor: StepActor = "agent"
    """Who acted: the agent, or the person taking over from the live view."""

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Self:
        return cls(
            episode_id=row["episode_id"],
            idx=row["idx"],
            action=json.loads(row["action"]),
            kind=row["kind"],
            description=row["description"],
            started_at=_time(row["started_at"]),
            agent_seconds=row["agent_seconds"],
            act_seconds=row["act_seconds"],
            settle_seconds=row["settle_seconds"],
            frame=row["frame"],
            phase_index=row["phase_index"],
            active_message_id=row["active_message_id"],
            error=row["error"],
            agent_info=_opt_json(row["agent_info"]),
            actor=row["actor"],
        )


@dataclass(frozen=True)
class MessageRecord:
    id: int
    episode_id: int
    idx: int
    role: Role
    kind: MessageKind
    text: str
    step: int
    phase_index: int | None
    source: Source
    created_at: datetime
    origin: MessageOrigin | None = None
    """A person's message: the script's text as offered, edited, or free (person mode)."""
    scripted: str | None = None
    """The script's message the person was offered, when one was."""
    wait_seconds: float | None = None
    """How long the episode waited for the person before this message."""

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Self:
        return cls(
            id=row["id"],
            episode_id=row["episode_id"],
            idx=row["idx"],
            role=cast(Role, row["role"]),
            kind=cast(MessageKind, row["kind"]),
            text=row["text"],
            step=row["step"],
            phase_index=row["phase_index"],
            source=cast(Source, row["source"]),
            created_at=_time(row["created_at"]),
            origin=cast(MessageOrigin | None, row["origin"]),
            scripted=row["scripted"],
            wait_seconds=row["wait_seconds"],
        )


@dataclass(frozen=True)
class PhaseRecord:
    episode_id: int
    idx: int
    message: str
    trigger: Trigger
    kind: PhaseKind | None
    status: PhaseStatus
    delivered_step: int | None
    delivered_at: datetime | None
    passed: bool | None = None
    """Whether the phase's own checks passed when it was delivered (None: it has no
    checks, was not delivered, or was recorded before migration 0010)."""
    score: float | None = None
    """Their partial credit, likewise."""

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Self:
        return cls(
            episode_id=row["episode_id"],
            idx=row["idx"],
            message=row["message"],
            trigger=parse_trigger(json.loads(row["trigger"])),
            kind=cast(PhaseKind | None, row["kind"]),
            status=cast(PhaseStatus, row["status"]),
            delivered_step=row["delivered_step"],
            delivered_at=_opt_time(row["delivered_at"]),
            passed=None if row["passed"] is None else bool(row["passed"]),
            score=row["score"],
        )


def check_outcome(row: sqlite3.Row) -> CheckOutcome:
    """A `checks` row as the outcome scoring made (its `idx` is the row's order)."""
    return CheckOutcome(
        path=row["path"],
        name=row["name"],
        params=json.loads(row["params"]),
        weight=row["weight"],
        required=bool(row["required"]),
        passed=bool(row["passed"]),
        score=row["score"],
        evidence=row["evidence"],
        phase=row["phase"],
    )


def judgement(row: sqlite3.Row) -> Judgement:
    """A `judgements` row as the judgement scoring made."""
    verdict = (
        None
        if row["passed"] is None
        else Verdict(passed=bool(row["passed"]), score=row["score"], reasons=row["reasons"] or "")
    )
    return Judgement(
        path=row["path"],
        phase=row["phase"],
        counts=bool(row["counts"]),
        model=row["model"],
        base_url=row["base_url"],
        temperature=row["temperature"],
        seed=row["seed"],
        prompt=json.loads(row["prompt"]),
        images=tuple(JudgedImage(**image) for image in json.loads(row["images"])),
        request_key=row["request_key"],
        answer=row["answer"],
        verdict=verdict,
        cached=bool(row["cached"]),
        error=row["error"],
    )
