"""The store's reads, for the CLI, the TUI, reports and batches: episodes and what
they recorded, batches, frame files, and the database's own health."""

from __future__ import annotations

import difflib
import sqlite3
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from app.core.errors import StoreError
from app.core.outcomes import CheckOutcome
from app.core.vocabulary import EpisodeStatus
from app.store.base import Part, SharedConnection
from app.store.records import (
    BatchRecord,
    EpisodeRecord,
    MessageRecord,
    PhaseRecord,
    StepRecord,
    check_outcome,
)
from app.store.schema import applied_migrations


class Queries(Part):
    """The reads of `Store`."""

    def list_episodes(
        self,
        task_id: str | None = None,
        status: EpisodeStatus | None = None,
        agent: str | None = None,
        batch_id: str | None = None,
        limit: int | None = 100,
    ) -> list[EpisodeRecord]:
        """Episodes matching every filter given, newest first; limit=None for all."""
        where: list[str] = []
        params: list[Any] = []
        for column, value in (
            ("task_id", task_id),
            ("status", status),
            ("agent", agent),
            ("batch_id", batch_id),
        ):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        sql = "SELECT * FROM episodes"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id DESC LIMIT ?"
        # SQLite reads a negative LIMIT as no limit.
        rows = self.db.rows("listing episodes", sql, [*params, -1 if limit is None else limit])
        return [EpisodeRecord.from_row(row) for row in rows]

    def get_episode(self, episode_id: int) -> EpisodeRecord:
        rows = self.db.rows(
            f"reading episode {episode_id}", "SELECT * FROM episodes WHERE id = ?", [episode_id]
        )
        if not rows:
            raise StoreError(f"no episode {episode_id} in {self.db.path}")
        return EpisodeRecord.from_row(rows[0])

    def steps(self, episode_id: int) -> list[StepRecord]:
        return [StepRecord.from_row(row) for row in episode_rows(self.db, "steps", episode_id)]

    def messages(self, episode_id: int) -> list[MessageRecord]:
        return [
            MessageRecord.from_row(row) for row in episode_rows(self.db, "messages", episode_id)
        ]

    def phases(self, episode_id: int) -> list[PhaseRecord]:
        return [PhaseRecord.from_row(row) for row in episode_rows(self.db, "phases", episode_id)]

    def checks(self, episode_id: int) -> list[CheckOutcome]:
        """The episode's checks in the order recorded: each phase's, the final score's."""
        return [check_outcome(row) for row in episode_rows(self.db, "checks", episode_id)]

    def frame_path(self, relative: str) -> Path:
        """The file of a frame path stored in a step (or an episode's final_frame)."""
        return self.db.frames.resolve(relative)

    # -- batches -------------------------------------------------------------------

    def get_batch(self, batch_id: str) -> BatchRecord:
        rows = self.db.rows(
            f"reading batch {batch_id}", "SELECT * FROM batches WHERE id = ?", [batch_id]
        )
        if not rows:
            known = [b.id for b in self.list_batches()]
            close = difflib.get_close_matches(batch_id, known, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise StoreError(f"no batch {batch_id!r} in {self.db.path}{hint}")
        return BatchRecord.from_row(rows[0])

    def list_batches(self) -> list[BatchRecord]:
        """Every batch, newest first."""
        rows = self.db.rows("listing batches", "SELECT * FROM batches ORDER BY created_at DESC")
        return [BatchRecord.from_row(row) for row in rows]

    # -- the database ----------------------------------------------------------------

    def integrity_ok(self) -> bool:
        """True when SQLite's integrity check and foreign key check both find nothing."""
        with self.db.op("checking integrity") as conn:
            result = conn.execute("PRAGMA integrity_check").fetchall()
            foreign = conn.execute("PRAGMA foreign_key_check").fetchall()
        return result == [("ok",)] and not foreign

    def applied_migrations(self) -> list[str]:
        """Names of the schema migrations this database has applied, in order."""
        with self.db.op("reading the applied migrations") as conn:
            return applied_migrations(Database(conn, execute_plugins=False))


def episode_rows(db: SharedConnection, table: str, episode_id: int) -> list[sqlite3.Row]:
    """The episode's rows of `table`, in index order; refused for an unknown episode."""
    doing = f"reading the {table} of episode {episode_id}"
    with db.op(doing) as conn:
        found = conn.execute("SELECT 1 FROM episodes WHERE id = ?", (episode_id,)).fetchone()
        if found is None:
            raise StoreError(f"no episode {episode_id} in {db.path}")
        return db.rows(
            doing, f"SELECT * FROM {table} WHERE episode_id = ? ORDER BY idx", [episode_id]
        )
