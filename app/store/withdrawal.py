"""A participant's withdrawal from a study: everything of theirs erased, their code kept.

Apart from the study's records (`app.store.studies`) because it is the one write that
reaches beyond them: it deletes episodes with every row of them, their frames on disk
and the archive blobs no other episode keeps.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from typing import Any

from app.core.errors import StoreError
from app.store.archive import SHA256, blob_folder, blob_path
from app.store.base import SharedConnection
from app.store.values import iso_text, json_text

_CHILD_COUNTS = ("steps", "messages", "phases", "checks", "judgements", "rescores")
"""The rows of an episode a withdrawal counts as it erases them (the CASCADE erases
every child table)."""


def withdraw(db: SharedConnection, study_id: str, code: str) -> dict[str, int]:
    """Erase everything of participant `code`: the episodes of their trials (found
    by their tries and by the study tags in episodes' config, so one whose session
    died before linking it is found too) with every row of them, their frames and
    the archive blobs no other episode keeps; their tries and answers. Keep the code
    with `withdrawn_at` and the counts erased, so the plan shows the gap. Returns the
    counts. Withdrawing again sweeps files a crash may have left.

    Raises:
        StoreError: no such participant.
    """
    doing = f"withdrawing {code} from study {study_id}"
    with db.write(doing) as conn:
        found = conn.execute(
            "SELECT withdrawn_at, erased FROM participants WHERE study_id = ? AND code = ?",
            (study_id, code),
        ).fetchone()
        if found is None:
            raise StoreError(f"{db.path}: study {study_id} has no participant {code}")
        erased: dict[str, Any] = json.loads(found[1]) if found[1] else {}
        episodes = sorted(
            {
                row[0]
                for row in conn.execute(
                    "SELECT episode_id FROM trial_tries WHERE study_id = ? AND code = ?"
                    " AND episode_id IS NOT NULL",
                    (study_id, code),
                )
            }
            | {
                row[0]
                for row in conn.execute(
                    "SELECT id FROM episodes WHERE json_extract(config, '$.study.study') = ?"
                    " AND json_extract(config, '$.study.participant') = ?",
                    (study_id, code),
                )
            }
        )
        marks = ",".join("?" * len(episodes))
        counts: dict[str, int] = {"episodes": len(episodes)}
        for table in _CHILD_COUNTS:
            counts[table] = conn.execute(
                f"SELECT COUNT(*) FROM {table} WHERE episode_id IN ({marks})", episodes
            ).fetchone()[0]
        blobs = _blobs_of(
            row[0]
            for row in conn.execute(
                f"SELECT manifest FROM archives WHERE episode_id IN ({marks})", episodes
            )
        )
        conn.execute(f"DELETE FROM episodes WHERE id IN ({marks})", episodes)
        kept = _blobs_of(row[0] for row in conn.execute("SELECT manifest FROM archives"))
        counts["responses"] = conn.execute(
            "DELETE FROM responses WHERE study_id = ? AND code = ?", (study_id, code)
        ).rowcount
        counts["tries"] = conn.execute(
            "DELETE FROM trial_tries WHERE study_id = ? AND code = ?", (study_id, code)
        ).rowcount
        # The ids, so that a withdrawal run again after a crash finds their files.
        swept = sorted(set(erased.get("episode_ids", [])) | set(episodes))
        gone = sorted((set(erased.get("blob_ids", [])) | blobs) - kept)
        if found[0] is not None:
            counts = {key: erased.get(key, 0) + value for key, value in counts.items()}
        record = {**counts, "episode_ids": swept, "blob_ids": gone}
        conn.execute(
            "UPDATE participants SET withdrawn_at = COALESCE(withdrawn_at, ?), erased = ?"
            " WHERE study_id = ? AND code = ?",
            (iso_text(None), json_text(record, "what was erased"), study_id, code),
        )
    frames = 0
    for episode_id in swept:
        folder = db.frames.root / str(episode_id)
        if folder.is_dir():
            frames += sum(1 for _ in folder.glob("*.png"))
            shutil.rmtree(folder)
        db.frames.forget(episode_id)
    folder = blob_folder(db)
    for digest in gone:
        blob_path(folder, digest).unlink(missing_ok=True)
    return {**counts, "frames": frames, "blobs": len(gone)}


def _blobs_of(manifests: Iterable[str]) -> set[str]:
    """Every blob digest an archive manifest names (at any depth: final files, phases)."""
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            blob = value.get("blob")
            if isinstance(blob, str) and SHA256.match(blob):  # a name, never a path
                found.add(blob)
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for text in manifests:
        walk(json.loads(text))
    return found
