"""Results across episodes: success rate, partial credit and ask rate per group.

Headless (the TUI's Results screen, reports and batch summaries can share it).
Episodes still running are left out; an episode that ended in an error counts as a
failure with no partial credit, since it never delivered a scored result.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from app.store import EpisodeRecord, Store

LEVEL_ORDER = {"L1": 0, "L2": 1, "L3": 2}


@dataclass(frozen=True)
class ResultRow:
    app: str
    level: str
    interactive: bool
    episodes: int
    passed: int
    mean_score: float
    """Mean partial credit in [0, 1] (an unscored episode counts 0)."""
    asked: int
    """Episodes in which the agent asked at least once."""
    asks: int
    """ASKs over all these episodes."""

    @property
    def success_rate(self) -> float:
        return self.passed / self.episodes if self.episodes else 0.0

    @property
    def ask_rate(self) -> float:
        """Share of episodes with at least one ASK."""
        return self.asked / self.episodes if self.episodes else 0.0

    @property
    def mode(self) -> str:
        return "interactive" if self.interactive else "standard"


def aggregate(
    episodes: Iterable[EpisodeRecord], asks: Mapping[int, int] | None = None
) -> list[ResultRow]:
    """Group ended episodes by app × level × interactive/standard, in a stable order.

    `asks` maps episode id to how many ASKs the agent made (missing = 0).
    """
    asks = asks or {}
    groups: dict[tuple[str, str, bool], list[EpisodeRecord]] = {}
    for episode in episodes:
        if episode.status == "running":
            continue
        groups.setdefault((episode.app, episode.level, episode.interactive), []).append(episode)
    rows = []
    for (app, level, interactive), members in groups.items():
        counts = [asks.get(e.id, 0) for e in members]
        rows.append(
            ResultRow(
                app=app,
                level=level,
                interactive=interactive,
                episodes=len(members),
                passed=sum(1 for e in members if e.passed),
                mean_score=sum(e.score or 0.0 for e in members) / len(members),
                asked=sum(1 for n in counts if n > 0),
                asks=sum(counts),
            )
        )
    rows.sort(key=lambda r: (r.app, LEVEL_ORDER.get(r.level, 9), r.level, r.interactive))
    return rows


def total(rows: Iterable[ResultRow]) -> ResultRow | None:
    """All groups together (None when there are none)."""
    rows = list(rows)
    if not rows:
        return None
    episodes = sum(r.episodes for r in rows)
    return ResultRow(
        app="all",
        level="",
        interactive=False,
        episodes=episodes,
        passed=sum(r.passed for r in rows),
        mean_score=sum(r.mean_score * r.episodes for r in rows) / episodes,
        asked=sum(r.asked for r in rows),
        asks=sum(r.asks for r in rows),
    )


def ask_counts(store: Store, episodes: Iterable[EpisodeRecord]) -> dict[int, int]:
    """How many questions the agent asked in each episode (from its messages)."""
    return {
        e.id: sum(1 for m in store.messages(e.id) if m.role == "agent" and m.kind == "question")
        for e in episodes
    }


def results(store: Store, batch_id: str | None = None) -> list[ResultRow]:
    """Aggregate every ended episode in `store` (optionally of one batch)."""
    episodes = [e for e in store.list_episodes(batch_id=batch_id, limit=None)]
    return aggregate(episodes, ask_counts(store, episodes))
