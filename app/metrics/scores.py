"""Which score a report counts, and success with and without flagged episodes.

An episode has its original score (made at its end) and may have rescores (the
evaluator run again on its final-state archive, `deskloop score --rescore`). A report
counts the original scores unless asked for the latest: then an episode with a rescore
counts by its newest one, the others by their original, in every table (its success,
its checks' leaf success and its phases' pass rates all come from that rescore).
Integrity flags never change a score; the report gives the overall success rate with
the flagged episodes and without them, side by side.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from app.core.outcomes import CheckOutcome
from app.metrics.summary import Results, Summary, pct, recorded_results, summarize
from app.store import EpisodeRecord, PhaseRecord, RescoreRecord, Store

ScoreChoice = Literal["original", "latest"]
SCORE_CHOICES: tuple[ScoreChoice, ...] = ("original", "latest")


def latest_scores(
    store: Store, latest: Mapping[int, RescoreRecord] | None = None
) -> Callable[[list[EpisodeRecord]], list[EpisodeRecord]]:
    """An `adjust` for `summarize`: each finished episode with a rescore counts by its
    newest one (an episode that ended in an error has no archive, so no rescore)."""
    if latest is None:
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


def rescored(
    checks: Sequence[CheckOutcome], phases: Sequence[PhaseRecord], rescore: RescoreRecord
) -> tuple[list[CheckOutcome], list[PhaseRecord]]:
    """An episode's checks and phases as its rescore left them: the rescore's final
    checks; for each phase it re-ran, that phase's checks and result from it; for a
    phase it did not (not in the archive, or re-scored before phases were), the
    original ones."""
    rerun = rescore.phases
    kept = [c for c in checks if c.phase is not None and c.phase not in rerun]
    new = [c for c in rescore.checks if c.phase is None or c.phase in rerun]
    return [*new, *kept], [
        dataclasses.replace(p, passed=rerun[p.idx][0], score=rerun[p.idx][1])
        if p.idx in rerun
        else p
        for p in phases
    ]


def latest_results(store: Store, latest: Mapping[int, RescoreRecord]) -> Results:
    """A `results` for `summarize` that goes with `latest_scores`: the checks and phases
    of each finished episode's newest rescore, else as recorded."""
    recorded = recorded_results(store)

    def results(e: EpisodeRecord) -> tuple[list[CheckOutcome], list[PhaseRecord]]:
        checks, phases = recorded(e)
        r = latest.get(e.id)
        if r is None or e.status != "finished":
            return list(checks), list(phases)
        return rescored(checks, phases, r)

    return results


def summarize_scores(
    store: Store,
    batch_id: str | None,
    score: ScoreChoice = "original",
    without_flagged: bool = False,
) -> Summary:
    """`summarize` with the score chosen, and the flagged episodes left out if asked."""
    flagged = store.flagged_episodes() if without_flagged else set()
    latest = store.latest_rescores() if score == "latest" else None
    pick = latest_scores(store, latest) if latest is not None else None

    def adjust(episodes: list[EpisodeRecord]) -> list[EpisodeRecord]:
        chosen = pick(episodes) if pick is not None else episodes
        return [e for e in chosen if e.id not in flagged]

    results = latest_results(store, latest) if latest is not None else None
    return summarize(store, batch_id, adjust, results)


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
