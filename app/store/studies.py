"""A study's records (migration 0017): its plan, its participants by code, their
trials and each try of a trial, and their answers to the questionnaires.

Written here and nowhere else (its dataclasses are `app.store.study_records`, a withdrawal
is `app.store.withdrawal`). What the rules of a study are (the design, the
instruments) is `app.studies`'; this part keeps what happened, and refuses what would
lose or double it: a plan is never redrawn (its seed is fixed once), a trial is tried
only by a participant who consented and has not withdrawn, a try that ended is never
changed, and an answer is never given twice.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, cast

from app.core.errors import StoreError
from app.core.vocabulary import QuestionnairePoint, TrialStatus
from app.store.base import Part
from app.store.study_records import (
    ParticipantPlan,
    ParticipantRecord,
    ResponseRecord,
    StudyPlanRecord,
    TrialRecord,
    TryRecord,
    participant_from_row,
    time_or_none,
)
from app.store.values import iso_text, json_text
from app.store.withdrawal import withdraw


class Studies(Part):
    """`Store.studies`: the records of studies."""

    def save_plan(
        self,
        *,
        study_id: str,
        seed: int,
        study_path: str,
        study_sha256: str,
        conditions: Sequence[str],
        participants: Sequence[ParticipantPlan],
    ) -> list[str]:
        """Record the study's plan (the first time) and those of `participants` not yet
        in it, with their trials, in one transaction; return the codes added.

        Raises:
            StoreError: the study was planned with another seed or other conditions (a
                plan is never redrawn: its participants may have run).
        """
        doing = f"planning study {study_id}"
        with self.db.write(doing) as conn:
            found = conn.execute(
                "SELECT seed, conditions FROM study_plans WHERE study_id = ?", (study_id,)
            ).fetchone()
            if found is None:
                conn.execute(
                    "INSERT INTO study_plans (study_id, seed, study_path, study_sha256,"
                    " conditions, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        study_id,
                        seed,
                        study_path,
                        study_sha256,
                        json_text(list(conditions), "conditions"),
                        iso_text(None),
                    ),
                )
            elif found[0] != seed or json.loads(found[1]) != list(conditions):
                raise StoreError(
                    f"{self.db.path}: study {study_id} was planned with seed {found[0]} and "
                    f"conditions {', '.join(json.loads(found[1]))}; a plan is not drawn again "
                    "(plan a new study id for a new design)"
                )
            known = {
                row[0]
                for row in conn.execute(
                    "SELECT code FROM participants WHERE study_id = ?", (study_id,)
                )
            }
            added = [p for p in participants if p.code not in known]
            for p in added:
                conn.execute(
                    "INSERT INTO participants (study_id, code, design_row, conditions)"
                    " VALUES (?, ?, ?, ?)",
                    (study_id, p.code, p.design_row, json_text(list(p.conditions), "conditions")),
                )
                conn.executemany(
                    "INSERT INTO trials (study_id, code, position, condition, task_id, block,"
                    " condition_position) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [
                        (
                            study_id,
                            p.code,
                            t.position,
                            t.condition,
                            t.task_id,
                            t.block,
                            t.condition_position,
                        )
                        for t in p.trials
                    ],
                )
        return [p.code for p in added]

    def plan(self, study_id: str) -> StudyPlanRecord | None:
        rows = self.db.rows(
            f"reading study {study_id}'s plan",
            "SELECT * FROM study_plans WHERE study_id = ?",
            (study_id,),
        )
        if not rows:
            return None
        row = rows[0]
        return StudyPlanRecord(
            study_id=row["study_id"],
            seed=row["seed"],
            study_path=row["study_path"],
            study_sha256=row["study_sha256"],
            conditions=tuple(json.loads(row["conditions"])),
            created_at=datetime.fromisoformat(row["created_at"]),
        )

    def participants(self, study_id: str) -> list[ParticipantRecord]:
        """The study's participants, in the plan's order."""
        rows = self.db.rows(
            f"reading study {study_id}'s participants",
            "SELECT * FROM participants WHERE study_id = ? ORDER BY design_row",
            (study_id,),
        )
        return [participant_from_row(row) for row in rows]

    def participant(self, study_id: str, code: str) -> ParticipantRecord:
        """Raises StoreError: no such participant in the study's plan."""
        rows = self.db.rows(
            f"reading participant {code} of study {study_id}",
            "SELECT * FROM participants WHERE study_id = ? AND code = ?",
            (study_id, code),
        )
        if not rows:
            raise StoreError(f"{self.db.path}: study {study_id} has no participant {code}")
        return participant_from_row(rows[0])

    def trials(self, study_id: str, code: str) -> list[TrialRecord]:
        """The participant's trials in order, each with its tries in order."""
        doing = f"reading the trials of {code} in study {study_id}"
        trials = self.db.rows(
            doing,
            "SELECT * FROM trials WHERE study_id = ? AND code = ? ORDER BY position",
            (study_id, code),
        )
        tries: dict[int, list[TryRecord]] = {}
        for row in self.db.rows(
            doing,
            "SELECT * FROM trial_tries WHERE study_id = ? AND code = ? ORDER BY position, try",
            (study_id, code),
        ):
            tries.setdefault(row["position"], []).append(
                TryRecord(
                    number=row["try"],
                    episode_id=row["episode_id"],
                    status=cast(TrialStatus, row["status"]),
                    started_at=datetime.fromisoformat(row["started_at"]),
                    ended_at=time_or_none(row["ended_at"]),
                    note=row["note"],
                )
            )
        return [
            TrialRecord(
                study_id=row["study_id"],
                code=row["code"],
                position=row["position"],
                condition=row["condition"],
                task_id=row["task_id"],
                block=row["block"],
                condition_position=row["condition_position"],
                tries=tuple(tries.get(row["position"], [])),
            )
            for row in trials
        ]

    def record_consent(self, study_id: str, code: str) -> None:
        """The participant agreed to the consent text (kept with its time; agreeing
        again keeps the first time).

        Raises:
            StoreError: no such participant, or one who withdrew.
        """
        with self.db.write(f"recording the consent of {code} in study {study_id}") as conn:
            self._active(conn, study_id, code)
            conn.execute(
                "UPDATE participants SET consented_at = COALESCE(consented_at, ?)"
                " WHERE study_id = ? AND code = ?",
                (iso_text(None), study_id, code),
            )

    def _active(self, conn: sqlite3.Connection, study_id: str, code: str) -> tuple[Any, ...]:
        found = conn.execute(
            "SELECT consented_at, withdrawn_at FROM participants WHERE study_id = ? AND code = ?",
            (study_id, code),
        ).fetchone()
        if found is None:
            raise StoreError(f"{self.db.path}: study {study_id} has no participant {code}")
        if found[1] is not None:
            raise StoreError(f"{self.db.path}: participant {code} of study {study_id} withdrew")
        return tuple(found)

    def start_try(self, study_id: str, code: str, position: int) -> int:
        """A new try of the participant's trial at `position`; returns its number.

        Raises:
            StoreError: no consent (nothing is recorded before it), a withdrawn
                participant, no such trial, a trial already done, or a try of it still
                running (`interrupt_running` first, when its session is gone).
        """
        doing = f"starting trial {position} of {code} in study {study_id}"
        with self.db.write(doing) as conn:
            consented, _ = self._active(conn, study_id, code)
            if consented is None:
                raise StoreError(
                    f"{self.db.path}: participant {code} of study {study_id} has not consented; "
                    "no trial is recorded before consent"
                )
            key = (study_id, code, position)
            if (
                conn.execute(
                    "SELECT 1 FROM trials WHERE study_id = ? AND code = ? AND position = ?", key
                ).fetchone()
                is None
            ):
                raise StoreError(
                    f"{self.db.path}: {code} of study {study_id} has no trial {position}"
                )
            states = [
                row[0]
                for row in conn.execute(
                    "SELECT status FROM trial_tries"
                    " WHERE study_id = ? AND code = ? AND position = ?",
                    key,
                )
            ]
            if "done" in states:
                raise StoreError(f"{self.db.path}: trial {position} of {code} is done already")
            if "running" in states:
                raise StoreError(f"{self.db.path}: trial {position} of {code} is running")
            number = len(states) + 1
            conn.execute(
                "INSERT INTO trial_tries (study_id, code, position, try, status, started_at)"
                " VALUES (?, ?, ?, ?, 'running', ?)",
                (*key, number, iso_text(None)),
            )
            return number

    def link_episode(
        self, study_id: str, code: str, position: int, number: int, episode_id: int
    ) -> None:
        """The episode that a running try records."""
        self._update_try(
            study_id,
            code,
            position,
            number,
            "episode_id = ?",
            (episode_id,),
            f"linking episode {episode_id}",
        )

    def end_try(
        self,
        study_id: str,
        code: str,
        position: int,
        number: int,
        status: TrialStatus,
        note: str = "",
    ) -> None:
        """End a running try as done or interrupted.

        Raises:
            StoreError: no such running try, or `running` as the end status.
        """
        if status == "running":
            raise StoreError("a try ends as done or interrupted")
        self._update_try(
            study_id,
            code,
            position,
            number,
            "status = ?, ended_at = ?, note = ?",
            (status, iso_text(None), note),
            f"ending try {number} as {status}",
        )

    def _update_try(
        self,
        study_id: str,
        code: str,
        position: int,
        number: int,
        assignments: str,
        values: tuple[Any, ...],
        doing: str,
    ) -> None:
        with self.db.write(f"{doing} (trial {position} of {code}, study {study_id})") as conn:
            cursor = conn.execute(
                f"UPDATE trial_tries SET {assignments} WHERE study_id = ? AND code = ?"
                " AND position = ? AND try = ? AND status = 'running'",
                (*values, study_id, code, position, number),
            )
            if cursor.rowcount != 1:
                raise StoreError(
                    f"{self.db.path}: try {number} of trial {position} of {code} in study "
                    f"{study_id} is not running"
                )

    def latest_episode(self, study_id: str, code: str) -> tuple[int, bool] | None:
        """The participant's latest trial episode and whether it is running now (its
        try is linked only once it ends, so the episode's own record of its trial,
        `config.study`, is what names it); None before their first trial."""
        rows = self.db.rows(
            f"reading the latest episode of {code} in study {study_id}",
            "SELECT id, status FROM episodes WHERE json_extract(config, '$.study.study') = ?"
            " AND json_extract(config, '$.study.participant') = ? ORDER BY id DESC LIMIT 1",
            (study_id, code),
        )
        return (int(rows[0]["id"]), rows[0]["status"] == "running") if rows else None

    def interrupt_running(self, study_id: str, code: str, note: str) -> list[int]:
        """Mark the participant's running tries interrupted (their session is gone: a
        crash, a dead desktop, a closed terminal); return their trials' positions."""
        with self.db.write(f"interrupting the running trials of {code} in {study_id}") as conn:
            positions = [
                row[0]
                for row in conn.execute(
                    "SELECT position FROM trial_tries WHERE study_id = ? AND code = ?"
                    " AND status = 'running' ORDER BY position",
                    (study_id, code),
                )
            ]
            conn.execute(
                "UPDATE trial_tries SET status = 'interrupted', ended_at = ?, note = ?"
                " WHERE study_id = ? AND code = ? AND status = 'running'",
                (iso_text(None), note, study_id, code),
            )
            return positions

    def record_answers(
        self,
        study_id: str,
        code: str,
        *,
        point: QuestionnairePoint,
        context: str,
        instrument: str,
        answers: Mapping[str, Any],
    ) -> None:
        """One questionnaire's answers, each item as given (None: left empty), in one
        transaction.

        Raises:
            StoreError: no consent, a withdrawn participant, or this questionnaire
                answered already at this point and context (an answer is never given
                twice).
        """
        doing = f"recording {instrument} answers of {code} ({point} {context}) in {study_id}"
        with self.db.write(doing) as conn:
            consented, _ = self._active(conn, study_id, code)
            if consented is None:
                raise StoreError(f"{self.db.path}: participant {code} has not consented")
            at = iso_text(None)
            try:
                conn.executemany(
                    "INSERT INTO responses (study_id, code, point, context, instrument, item,"
                    " value, answered_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (
                            study_id,
                            code,
                            point,
                            context,
                            instrument,
                            item,
                            json_text(value, f"the answer to {instrument}.{item}"),
                            at,
                        )
                        for item, value in answers.items()
                    ],
                )
            except sqlite3.IntegrityError:
                raise StoreError(
                    f"{self.db.path}: {code} answered {instrument} at {point} {context} already"
                ) from None

    def answered(self, study_id: str, code: str) -> set[tuple[str, str, str]]:
        """(point, context, instrument) of every questionnaire the participant answered."""
        rows = self.db.rows(
            f"reading what {code} answered in {study_id}",
            "SELECT DISTINCT point, context, instrument FROM responses"
            " WHERE study_id = ? AND code = ?",
            (study_id, code),
        )
        return {(row[0], row[1], row[2]) for row in rows}

    def responses(self, study_id: str) -> list[ResponseRecord]:
        """Every answer in the study, by participant, point, context, instrument, item."""
        rows = self.db.rows(
            f"reading the answers of study {study_id}",
            "SELECT * FROM responses WHERE study_id = ?"
            " ORDER BY code, answered_at, point, context, instrument, item",
            (study_id,),
        )
        return [
            ResponseRecord(
                study_id=row["study_id"],
                code=row["code"],
                point=cast(QuestionnairePoint, row["point"]),
                context=row["context"],
                instrument=row["instrument"],
                item=row["item"],
                value=json.loads(row["value"]),
                answered_at=datetime.fromisoformat(row["answered_at"]),
            )
            for row in rows
        ]

    def withdraw(self, study_id: str, code: str) -> dict[str, int]:
        """Erase everything of participant `code` and keep the code, marked withdrawn
        (`app.store.withdrawal.withdraw`); returns the counts erased."""
        return withdraw(self.db, study_id, code)
