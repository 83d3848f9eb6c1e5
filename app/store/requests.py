"""Requests to a running episode from outside its process (migration 0019): pause,
resume, abort. The researcher's TUI writes them for a participant's trial, whose
runner lives in the participant's own process (`deskloop study run`); the runner
reads them (`app.episode.runner`'s request watch) and acts on each once, in order.

A request is a row, never an update: what was asked of an episode, and when, stays
with it (and goes with it when the episode is erased).
"""

from __future__ import annotations

from app.core.errors import StoreError
from app.core.vocabulary import EPISODE_REQUESTS, EpisodeRequest
from app.store.base import Part
from app.store.values import iso_text


class Requests(Part):
    """`Store`'s requests to running episodes."""

    def request_episode(self, episode_id: int, request: EpisodeRequest) -> int:
        """Ask the running episode `episode_id` to pause, resume or abort; returns the
        request's index (0, 1, … per episode).

        Raises:
            StoreError: an unknown request, or no running episode of that id.
        """
        if request not in EPISODE_REQUESTS:
            raise StoreError(f"request {request!r}: one of {', '.join(EPISODE_REQUESTS)}")
        doing = f"asking episode {episode_id} to {request}"
        with self.db.write(doing) as conn:
            row = conn.execute("SELECT status FROM episodes WHERE id = ?", (episode_id,)).fetchone()
            if row is None or row[0] != "running":
                raise StoreError(f"{self.db.path}: {doing}: it is not running")
            (idx,) = conn.execute(
                "SELECT COUNT(*) FROM episode_requests WHERE episode_id = ?", (episode_id,)
            ).fetchone()
            conn.execute(
                "INSERT INTO episode_requests (episode_id, idx, request, requested_at)"
                " VALUES (?, ?, ?, ?)",
                (episode_id, idx, request, iso_text(None)),
            )
            return int(idx)

    def episode_requests(
        self, episode_id: int, after: int = -1
    ) -> list[tuple[int, EpisodeRequest]]:
        """The episode's requests with an index above `after`, in order."""
        rows = self.db.rows(
            f"reading the requests to episode {episode_id}",
            "SELECT idx, request FROM episode_requests WHERE episode_id = ? AND idx > ?"
            " ORDER BY idx",
            (episode_id, after),
        )
        return [(int(row["idx"]), row["request"]) for row in rows]
