"""Final-state archives, rescores and integrity flags.

An archive is what an episode's checks read at scoring: its manifest (JSON, made and
read by `app.episode.archive`) in the `archives` table, and the bytes it names in
content-addressed blobs, `archive/<id>/<sha256[:2]>/<sha256>` beside the database
(`<id>` is the database's own, as for frames), so a file every episode exports is kept
once. Blobs are never removed by the store: several episodes may point at one.

A rescore is the current evaluator run on an archive; it is kept beside the original
score, with the task's hash and the evaluator's version, never replacing it.
Integrity flags are recorded once per episode, beside its score.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from app.core.errors import StoreError
from app.core.files import write_atomic
from app.core.integrity import IntegrityFlag
from app.core.judgements import Judgement, judgement_from_raw, judgement_to_raw
from app.core.outcomes import CheckOutcome
from app.store.base import Part, SharedConnection
from app.store.values import now_utc

SHA256 = re.compile(r"^[0-9a-f]{64}$")


def blob_folder(db: SharedConnection) -> Path:
    """The database's blob folder: `archive/<id>/`, the id of its frames folder."""
    return db.root / "archive" / db.frames.root.name


def blob_path(folder: Path, digest: str) -> Path:
    """Where blob `digest` lives in `folder` (the name unchecked: callers check it)."""
    return folder / digest[:2] / digest


@dataclass(frozen=True)
class ArchiveRecord:
    """An episode's archive as recorded (the manifest is `app.episode.archive`'s)."""

    episode_id: int
    created_at: datetime
    evaluator: str
    """The evaluator version that made the original score from it."""
    manifest: dict[str, Any]
    kept_bytes: int
    over_cap_bytes: int
    """Bytes read at scoring but not kept: over the episode's cap."""
    cap_bytes: int


@dataclass(frozen=True)
class RescoreRecord:
    """The evaluator `evaluator` run on an episode's archive, at `created_at`."""

    id: int
    episode_id: int
    created_at: datetime
    task_sha256: str
    evaluator: str
    passed: bool
    score: float
    checks: list[CheckOutcome]
    """The final checks, then each re-run phase's checks (their `phase` set)."""
    phases: dict[int, tuple[bool, float]] = field(default_factory=dict)
    """Each phase whose checks were re-run: its tree's (passed, score)."""
    judgements: list[Judgement] = field(default_factory=list)
    """What the judge was asked and answered in the rescore (cached answers included)."""


def _now() -> str:
    return now_utc().isoformat()


def _rescore(row: sqlite3.Row) -> RescoreRecord:
    phases = json.loads(row["phases"] or "{}")
    return RescoreRecord(
        id=row["id"],
        episode_id=row["episode_id"],
        created_at=datetime.fromisoformat(row["created_at"]),
        task_sha256=row["task_sha256"],
        evaluator=row["evaluator"],
        passed=bool(row["passed"]),
        score=row["score"],
        checks=[CheckOutcome(**c) for c in json.loads(row["checks"])],
        phases={int(i): (bool(p["passed"]), float(p["score"])) for i, p in phases.items()},
        judgements=[judgement_from_raw(j) for j in json.loads(row["judgements"] or "[]")],
    )


class Archives(Part):
    """The archive, rescore and integrity-flag reads and writes of `Store`."""

    @property
    def archive_root(self) -> Path:
        """This database's blob folder (`blob_folder`)."""
        return blob_folder(self.db)

    def _blob_path(self, digest: str) -> Path:
        if not SHA256.match(digest):
            raise StoreError(f"{self.db.path}: {digest!r} is not a sha256 blob name")
        return blob_path(self.archive_root, digest)

    def save_blob(self, data: bytes) -> str:
        """Keep `data` once under its sha256 (a blob already there is not rewritten)."""
        digest = hashlib.sha256(data).hexdigest()
        target = self._blob_path(digest)
        if target.exists():
            return digest
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(target, data, mode=0o600)
        except OSError as exc:
            raise StoreError(f"cannot write archive blob {target}: {exc.strerror or exc}") from exc
        return digest

    def read_blob(self, digest: str) -> bytes:
        """The bytes of a blob, checked against its name.

        Raises:
            StoreError: it is missing, unreadable or its bytes do not hash to its name.
        """
        target = self._blob_path(digest)
        try:
            data = target.read_bytes()
        except OSError as exc:
            raise StoreError(f"archive blob {target}: {exc.strerror or exc}") from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise StoreError(f"archive blob {target}: its bytes do not hash to its name")
        return data

    def record_archive(
        self,
        episode_id: int,
        *,
        evaluator: str,
        manifest: dict[str, Any],
        kept_bytes: int,
        over_cap_bytes: int,
        cap_bytes: int,
    ) -> None:
        """Record an episode's archive (once: an archive is what scoring saw then)."""
        doing = f"recording the archive of episode {episode_id}"
        with self.db.write(doing) as conn:
            try:
                conn.execute(
                    """INSERT INTO archives (episode_id, created_at, evaluator, manifest,
                           kept_bytes, over_cap_bytes, cap_bytes)
                       VALUES (?, ?, ?, ?, ?, ?, ?)""",
                    (
                        episode_id,
                        _now(),
                        evaluator,
                        json.dumps(manifest),
                        kept_bytes,
                        over_cap_bytes,
                        cap_bytes,
                    ),
                )
            except sqlite3.IntegrityError as exc:
                raise StoreError(f"{self.db.path}: {doing}: {exc}") from None

    def get_archive(self, episode_id: int) -> ArchiveRecord | None:
        rows = self.db.rows(
            f"reading the archive of episode {episode_id}",
            "SELECT * FROM archives WHERE episode_id = ?",
            (episode_id,),
        )
        if not rows:
            return None
        row = rows[0]
        return ArchiveRecord(
            episode_id=row["episode_id"],
            created_at=datetime.fromisoformat(row["created_at"]),
            evaluator=row["evaluator"],
            manifest=json.loads(row["manifest"]),
            kept_bytes=row["kept_bytes"],
            over_cap_bytes=row["over_cap_bytes"],
            cap_bytes=row["cap_bytes"],
        )

    def record_rescore(
        self,
        episode_id: int,
        *,
        task_sha256: str,
        evaluator: str,
        passed: bool,
        score: float,
        checks: Sequence[CheckOutcome],
        phases: dict[int, tuple[bool, float]] | None = None,
        judgements: Sequence[Judgement] = (),
    ) -> int:
        """Record a rescore beside the original score; returns its id. `phases`: the
        re-run phases' tree results; `judgements`: what the judge answered."""
        doing = f"recording a rescore of episode {episode_id}"
        with self.db.write(doing) as conn:
            found = conn.execute("SELECT 1 FROM episodes WHERE id = ?", (episode_id,)).fetchone()
            if found is None:
                raise StoreError(f"no episode {episode_id} in {self.db.path}")
            cursor = conn.execute(
                """INSERT INTO rescores (episode_id, created_at, task_sha256, evaluator,
                       passed, score, checks, phases, judgements)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                (
                    episode_id,
                    _now(),
                    task_sha256,
                    evaluator,
                    int(passed),
                    score,
                    json.dumps([asdict(c) for c in checks]),
                    json.dumps(
                        {
                            str(i): {"passed": p, "score": sc}
                            for i, (p, sc) in (phases or {}).items()
                        }
                    ),
                    json.dumps([judgement_to_raw(j) for j in judgements], ensure_ascii=False),
                ),
            )
            assert cursor.lastrowid is not None
            return cursor.lastrowid

    def rescores(self, episode_id: int) -> list[RescoreRecord]:
        """An episode's rescores, oldest first."""
        rows = self.db.rows(
            f"reading the rescores of episode {episode_id}",
            "SELECT * FROM rescores WHERE episode_id = ? ORDER BY id",
            (episode_id,),
        )
        return [_rescore(row) for row in rows]

    def latest_rescores(self) -> dict[int, RescoreRecord]:
        """The newest rescore of every episode that has one, by episode id."""
        rows = self.db.rows(
            "reading the latest rescores",
            """SELECT r.* FROM rescores r
               JOIN (SELECT episode_id, MAX(id) AS id FROM rescores GROUP BY episode_id) m
                 ON r.id = m.id""",
        )
        return {row["episode_id"]: _rescore(row) for row in rows}

    # -- integrity flags -------------------------------------------------------

    def record_flags(
        self, episode_id: int, flags: Sequence[IntegrityFlag], checked: Sequence[str]
    ) -> None:
        """Record an episode's integrity flags, replacing earlier ones; `checked` says
        what was looked at (so no flags can be told from not looked)."""
        doing = f"recording the integrity flags of episode {episode_id}"
        with self.db.write(doing) as conn:
            cursor = conn.execute(
                "UPDATE episodes SET integrity_checked = ? WHERE id = ?",
                (json.dumps(list(checked)), episode_id),
            )
            if cursor.rowcount != 1:
                raise StoreError(f"no episode {episode_id} in {self.db.path}")
            conn.execute("DELETE FROM integrity_flags WHERE episode_id = ?", (episode_id,))
            conn.executemany(
                """INSERT INTO integrity_flags (episode_id, idx, kind, summary, evidence)
                   VALUES (?, ?, ?, ?, ?)""",
                [
                    (episode_id, idx, f.kind, f.summary, json.dumps(list(f.evidence)))
                    for idx, f in enumerate(flags)
                ],
            )

    def flags(self, episode_id: int) -> tuple[list[IntegrityFlag], list[str] | None]:
        """An episode's flags and what was checked (None: never looked)."""
        checked = self.db.rows(
            f"reading the integrity of episode {episode_id}",
            "SELECT integrity_checked FROM episodes WHERE id = ?",
            (episode_id,),
        )
        if not checked:
            raise StoreError(f"no episode {episode_id} in {self.db.path}")
        raw = checked[0]["integrity_checked"]
        rows = self.db.rows(
            f"reading the integrity flags of episode {episode_id}",
            "SELECT * FROM integrity_flags WHERE episode_id = ? ORDER BY idx",
            (episode_id,),
        )
        flags = [
            IntegrityFlag.from_raw(
                {"kind": r["kind"], "summary": r["summary"], "evidence": json.loads(r["evidence"])}
            )
            for r in rows
        ]
        return flags, None if raw is None else list(json.loads(raw))

    def flagged_episodes(self) -> set[int]:
        """Ids of the episodes with at least one integrity flag."""
        rows = self.db.rows(
            "reading the flagged episodes", "SELECT DISTINCT episode_id FROM integrity_flags"
        )
        return {row[0] for row in rows}
