"""The model judge's questions and answers (app.episode.judge), recorded beside an
episode's checks: the `judgements` table of migration 0010."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict

from app.core.errors import StoreError
from app.core.judgements import Judgement
from app.store.base import Part
from app.store.queries import episode_rows
from app.store.records import judgement
from app.store.values import now_utc


class Judgements(Part):
    """The judgements of `Store`: written after scoring, read by reports and
    `episodes show`."""

    def record_judgements(self, episode_id: int, judgements: Sequence[Judgement]) -> None:
        """Record what the model judge was asked and answered (app.episode.judge), after
        the episode's earlier judgements: every prompt (images as their hashes),
        model, temperature, seed, answer and verdict, whether the answer was cached."""
        if not judgements:
            return
        now = now_utc().isoformat(timespec="microseconds")
        with self.db.write(f"recording the judgements of episode {episode_id}") as conn:
            found = conn.execute("SELECT 1 FROM episodes WHERE id = ?", (episode_id,)).fetchone()
            if found is None:
                raise StoreError(f"no episode {episode_id} in {self.db.path}")
            (start,) = conn.execute(
                "SELECT COALESCE(MAX(idx) + 1, 0) FROM judgements WHERE episode_id = ?",
                (episode_id,),
            ).fetchone()
            conn.executemany(
                """INSERT INTO judgements (episode_id, idx, path, phase, counts, model,
                       base_url, temperature, seed, prompt, images, request_key, answer,
                       passed, score, reasons, cached, error, recorded_at)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                [
                    (
                        episode_id,
                        start + i,
                        j.path,
                        j.phase,
                        int(j.counts),
                        j.model,
                        j.base_url,
                        j.temperature,
                        j.seed,
                        json.dumps(j.prompt, ensure_ascii=False),
                        json.dumps([asdict(image) for image in j.images]),
                        j.request_key,
                        j.answer,
                        None if j.verdict is None else int(j.verdict.passed),
                        None if j.verdict is None else j.verdict.score,
                        None if j.verdict is None else j.verdict.reasons,
                        int(j.cached),
                        j.error,
                        now,
                    )
                    for i, j in enumerate(judgements)
                ],
            )

    def judgements(self, episode_id: int) -> list[Judgement]:
        """What the model judge was asked and answered in the episode, in order."""
        return [judgement(row) for row in episode_rows(self.db, "judgements", episode_id)]
