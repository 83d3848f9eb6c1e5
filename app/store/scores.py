"""The store's writes of an episode's score: the final one and each phase's checks.

Apart from the episode's writes (`app.store.writes`) because a score is written, and
rewritten, after the episode has ended (scoring, a rescore's replacement), and its
checks share one table between the final score and the phases, which these writes
keep apart: a check recorded for one cannot land among the other's.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from app.core.errors import StoreError
from app.core.outcomes import CheckOutcome
from app.store.base import Part
from app.store.values import json_text


class Scores(Part):
    """The score writes of `Store`: the final score and the checks of each phase."""

    def record_score(
        self,
        episode_id: int,
        *,
        passed: bool,
        score: float,
        checks: Sequence[CheckOutcome],
    ) -> None:
        """Record the evaluation, replacing any earlier one, in one transaction.

        `checks` are the final score's (their `phase` is None). Checks recorded per
        phase (`record_phase_checks`) are kept.
        """
        rows = _check_rows(episode_id, checks, None)
        with self.db.write(f"recording the score of episode {episode_id}") as conn:
            cursor = conn.execute(
                "UPDATE episodes SET passed = ?, score = ? WHERE id = ?",
                (int(passed), score, episode_id),
            )
            if cursor.rowcount != 1:
                raise StoreError(f"no episode {episode_id} in {self.db.path}")
            conn.execute("DELETE FROM checks WHERE episode_id = ? AND phase IS NULL", (episode_id,))
            _insert_checks(conn, episode_id, rows)

    def record_phase_checks(
        self,
        episode_id: int,
        phase: int,
        checks: Sequence[CheckOutcome],
        *,
        passed: bool | None = None,
        score: float | None = None,
    ) -> None:
        """Record the optional checks of phase `phase`, evaluated when it was delivered.

        They are kept apart from the final score (their `phase` is `phase`) and replace
        only earlier checks of the same phase. `passed` and `score` are the phase
        tree's result, kept on the phase's row (the leaves alone cannot say whether
        an `any` group passed).
        """
        rows = _check_rows(episode_id, checks, phase)
        with self.db.write(
            f"recording the checks of phase {phase} of episode {episode_id}"
        ) as conn:
            found = conn.execute("SELECT 1 FROM episodes WHERE id = ?", (episode_id,)).fetchone()
            if found is None:
                raise StoreError(f"no episode {episode_id} in {self.db.path}")
            conn.execute(
                "DELETE FROM checks WHERE episode_id = ? AND phase = ?", (episode_id, phase)
            )
            _insert_checks(conn, episode_id, rows)
            if passed is not None or score is not None:
                conn.execute(
                    "UPDATE phases SET passed = ?, score = ? WHERE episode_id = ? AND idx = ?",
                    (None if passed is None else int(passed), score, episode_id, phase),
                )


def _insert_checks(conn: sqlite3.Connection, episode_id: int, rows: list[tuple[Any, ...]]) -> None:
    # Final and per-phase checks share the table: new rows go after those kept.
    start = conn.execute(
        "SELECT COALESCE(MAX(idx) + 1, 0) FROM checks WHERE episode_id = ?", (episode_id,)
    ).fetchone()[0]
    conn.executemany(
        """INSERT INTO checks (episode_id, idx, path, name, params, weight, required,
               passed, score, evidence, phase)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        [(row[0], start + row[1], *row[2:]) for row in rows],
    )


def _scored_by(phase: int | None) -> str:
    return "the final score" if phase is None else f"phase {phase}"


def _check_rows(
    episode_id: int, checks: Sequence[CheckOutcome], phase: int | None
) -> list[tuple[Any, ...]]:
    rows = []
    for idx, check in enumerate(checks):
        what = f"check {idx} of episode {episode_id}"
        if check.phase != phase:
            # A phase's outcome among the final ones would count in the score, and a
            # final one among a phase's would be missing from it.
            raise StoreError(
                f"{what} ({check.path}) belongs to {_scored_by(check.phase)}, "
                f"not to {_scored_by(phase)}"
            )
        rows.append(
            (
                episode_id,
                idx,
                check.path,
                check.name,
                json_text(check.params, f"params of {what}"),
                check.weight,
                int(check.required),
                int(check.passed),
                check.score,
                check.evidence,
                check.phase,
            )
        )
    return rows
