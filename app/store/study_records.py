"""The records of a study as the store reads and writes them (`app.store.studies`):
what a plan hands the store, and what the store gives back. Plain values, apart from
the part that writes them, as `app.store.records` is for episodes."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.core.vocabulary import QuestionnairePoint, TrialStatus


@dataclass(frozen=True)
class TrialPlan:
    position: int
    condition: str
    task_id: str
    block: int
    """-1: the practice trial."""
    condition_position: int


@dataclass(frozen=True)
class ParticipantPlan:
    code: str
    design_row: int
    conditions: tuple[str, ...]
    trials: tuple[TrialPlan, ...]


@dataclass(frozen=True)
class StudyPlanRecord:
    study_id: str
    seed: int
    study_path: str
    study_sha256: str
    conditions: tuple[str, ...]
    created_at: datetime


@dataclass(frozen=True)
class ParticipantRecord:
    study_id: str
    code: str
    design_row: int
    conditions: tuple[str, ...]
    consented_at: datetime | None
    withdrawn_at: datetime | None
    erased: dict[str, Any] | None
    """What a withdrawal erased (counts by kind)."""


@dataclass(frozen=True)
class TryRecord:
    number: int
    episode_id: int | None
    status: TrialStatus
    started_at: datetime
    ended_at: datetime | None
    note: str


@dataclass(frozen=True)
class TrialRecord:
    study_id: str
    code: str
    position: int
    condition: str
    task_id: str
    block: int
    condition_position: int
    tries: tuple[TryRecord, ...]

    @property
    def practice(self) -> bool:
        return self.block < 0

    @property
    def done(self) -> bool:
        return any(t.status == "done" for t in self.tries)

    @property
    def last(self) -> TryRecord | None:
        return self.tries[-1] if self.tries else None


@dataclass(frozen=True)
class ResponseRecord:
    study_id: str
    code: str
    point: QuestionnairePoint
    context: str
    instrument: str
    item: str
    value: Any
    answered_at: datetime


def time_or_none(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def participant_from_row(row: sqlite3.Row) -> ParticipantRecord:
    return ParticipantRecord(
        study_id=row["study_id"],
        code=row["code"],
        design_row=row["design_row"],
        conditions=tuple(json.loads(row["conditions"])),
        consented_at=time_or_none(row["consented_at"]),
        withdrawn_at=time_or_none(row["withdrawn_at"]),
        erased=None if row["erased"] is None else json.loads(row["erased"]),
    )
