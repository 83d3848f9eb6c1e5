"""Which score a report counts, and success with and without flagged episodes (issue 17).

An episode has its original score (made at its end) and may have rescores (the
evaluator run again on its final-state archive, `deskloop score --rescore`). A report
counts the original scores unless asked for the latest: then an episode with a rescore
counts by its newest one, the others by their original. Integrity flags never change a
score; the report gives the overall success rate with the flagged episodes and without
them, side by side.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from app.metrics.summary import Summary, pct, summarize
from app.store import EpisodeRecord, Store

ScoreChoice = Literal["original", "latest"]
SCORE_CHOICES: tuple[ScoreChoice, ...] = ("original", "latest")


def latest_scores(store: Store) -> Callable[[list[EpisodeRecord]], list[EpisodeRecord]]:
    """An `adjust` for `summarize`: each finished episode with a rescore counts by its
    newest one (an episode that ended in an error has no archive, so no rescore)."""
    latest = store.latest_rescores()

    def adjust(episodes: list[EpisodeRecord]) -> list[EpisodeRecord]:
        out = []
        for e in episodes:
            r = latest.get(e.id)
            if r is not None and e.status == "finished":
                e = dataclasses.replace(e, passed=r.passed, score=r.score)
            out.append(e)
        return out

    return adjust


def summarize_scores(
    store: Store,
    batch_id: str | None,
    score: ScoreChoice = "original",
    without_flagged: bool = False,
) -> Summary:
    """`summarize` with the score chosen, and the flagged episodes left out if asked."""
    flagged = store.flagged_episodes() if without_flagged else set()
    pick = latest_scores(store) if score == "latest" else None

    def adjust(episodes: list[EpisodeRecord]) -> list[EpisodeRecord]:
        chosen = pick(episodes) if pick is not None else episodes
        return [e for e in chosen if e.id not in flagged]

    return summarize(store, batch_id, adjust)


def score_note(store: Store, score: ScoreChoice) -> str:
    """The line that says which score the figures count."""
    if score == "original":
        return "scores: the original score of each episode (made at its end)"
    n = len(store.latest_rescores())
    return (
        f"scores: the latest rescore where an episode has one ({n} episode(s) re-scored), "
        "else the original"
    )


def integrity_note(
    store: Store, batch_id: str | None, score: ScoreChoice, counted: Summary | None = None
) -> str:
    """Overall success with the integrity-flagged episodes and without them (`counted`:
    the summary with them, if already made)."""
    if counted is None:
        counted = summarize_scores(store, batch_id, score)
    with_all = counted.overall
    without = summarize_scores(store, batch_id, score, without_flagged=True).overall
    if with_all is None:
        return "integrity: no episodes counted"
    left_out = with_all.episodes - (without.episodes if without else 0)
    rate_without = pct(without.success_rate) if without else "-"
    n_without = without.finished if without else 0
    return (
        f"integrity: {left_out} counted episode(s) flagged; success with them "
        f"{pct(with_all.success_rate)} (n={with_all.finished}), without them "
        f"{rate_without} (n={n_without}) — flags never change a score"
    )


@dataclass(frozen=True)
class ScoredReport:
    """A report's figures with the two lines that go with them wherever they are shown
    (the text report, the HTML page): which score they count, and the integrity split."""

    summary: Summary
    score_note: str
    integrity_note: str


def scored_report(
    store: Store, batch_id: str | None, score: ScoreChoice = "original"
) -> ScoredReport:
    """The figures over `store` (or one batch) counting `score`, with their two lines."""
    summary = summarize_scores(store, batch_id, score)
    return ScoredReport(
        summary, score_note(store, score), integrity_note(store, batch_id, score, summary)
    )
