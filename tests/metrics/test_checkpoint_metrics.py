"""Checkpoint and reliability figures against a hand computation, on a small database
built through the real store (episodes, their checks, a phase with checks, repeats of
two tasks by two agents, an infrastructure error and an agent's own error).

The database, by hand (every episode's user is simulated):

| ep | task (level, kind)  | agent | outcome           | credit | final checks         | phase 0   |
|----|---------------------|-------|-------------------|--------|----------------------|-----------|
| 1  | flip (L1, standard) | A     | passed            | 1.0    | exists ✓, size ✓     |           |
| 2  | flip                | A     | failed            | 0.5    | exists ✓, size ✗     |           |
| 3  | flip                | A     | passed            | 1.0    | exists ✓, size ✓     |           |
| 4  | flip                | B     | failed            | 0.75   | exists ✓, size ✗ 0.5 |           |
| 5  | flip                | B     | error (desktop)   | -      | -                    |           |
| 6  | flip                | B     | agent's own error | (0)    | -                    |           |
| 7  | poster (L2, inter.) | A     | passed            | 1.0    | layer ✓, judge ✓     | ✓         |
| 8  | poster              | A     | failed            | 0.0    | layer ✗, judge ✓     | ✗         |
| 9  | poster              | B     | passed            | 1.0    | layer ✓, judge ✗     | never     |
| 10 | poster              | B     | passed (1 ask)    | 1.0    | layer ✓, judge ✓     | ✓         |

The judge there has `counts: false`: it fails on a passed episode (9) and passes on a
failed one (8), and neither changes a figure but its own row.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.core.outcomes import CheckOutcome
from app.core.triggers import Trigger, parse_trigger
from app.core.vocabulary import PhaseKind
from app.metrics.report import format_report
from app.metrics.stats import pass_at_k, pass_hat_k, t95, wilson
from app.metrics.summary import (
    check_cells,
    paired_cells,
    phase_cells,
    reliability_cells,
    repeat_cells,
    summarize,
)
from app.store import Store
from tests.check_outcomes import outcome


@dataclass(frozen=True)
class PhaseScript:
    message: str
    trigger: Trigger
    kind: PhaseKind | None = None


def record(
    store: Store,
    task: str,
    agent: str,
    *,
    passed: bool | None,
    score: float | None,
    checks: list[tuple[str, str, bool, float]] = (),  # type: ignore[assignment]
    error_kind: str | None = None,
    phase: bool | None = None,
    asks: int = 0,
    steps: int = 4,
) -> int:
    """One episode: `checks` as (path, name, passed, score); `phase` None = the task has
    no phase, else whether its phase 0 was delivered and passed (False: delivered
    and failed; the string "never": not delivered)."""
    interactive = task == "poster"
    eid = store.start_episode(
        task_id=task,
        task_path=f"tasks/gimp/{task}.yaml",
        task_sha256="0" * 64,
        app="gimp",
        level="L2" if interactive else "L1",
        interactive=interactive,
        agent=agent,
        user_mode="simulated",
        backend="local",
    )
    if interactive:
        store.init_phases(eid, [PhaseScript("Now make it red.", parse_trigger("agent_done"))])
    if phase is not None:
        store.mark_phase_delivered(eid, 0, step=2)
        store.record_phase_checks(
            eid,
            0,
            [outcome("phases[0].checks", passed=phase, score=float(phase), phase=0)],
            passed=phase,
            score=float(phase),
        )
    for n in range(asks):
        store.record_message(eid, role="agent", kind="question", text="?", step=n, source="agent")
    if error_kind is None:
        assert passed is not None and score is not None
        store.record_score(
            eid,
            passed=passed,
            score=score,
            checks=[
                outcome(
                    path,
                    name,
                    passed=ok,
                    score=credit,
                    params={"counts": False} if name == "judge" else {},
                )
                for path, name, ok, credit in checks
            ],
        )
        store.finish_episode(eid, status="finished", end_reason="done", steps=steps)
    else:
        store.finish_episode(
            eid,
            status="error",
            end_reason="error",
            error="x",
            error_kind=error_kind,  # type: ignore[arg-type]
            steps=steps,
        )
    return eid


EXISTS, SIZE = "evaluate.all[0]", "evaluate.all[1]"


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return build(tmp_path / "deskloop.db")


def flip_checks(size: bool, size_credit: float) -> list[tuple[str, str, bool, float]]:
    """flip's final checks: the file exists (always), and its size."""
    return [(EXISTS, "file_exists", True, 1.0), (SIZE, "image_size", size, size_credit)]


def poster_checks(layer: bool, judge: bool) -> list[tuple[str, str, bool, float]]:
    """poster's final checks: its layers, and the judge (full credit or none)."""
    return [(EXISTS, "xcf_layers", layer, float(layer)), (SIZE, "judge", judge, float(judge))]


def build(path: Path) -> Store:
    """The database of the table above, in a file (the fixture's and the docs')."""
    s = Store(path)
    ok, bad = True, False
    # One line a row of the table, in its order.
    record(s, "flip", "A", passed=ok, score=1.0, checks=flip_checks(ok, 1.0))
    record(s, "flip", "A", passed=bad, score=0.5, checks=flip_checks(bad, 0.0))
    record(s, "flip", "A", passed=ok, score=1.0, checks=flip_checks(ok, 1.0))
    record(s, "flip", "B", passed=bad, score=0.75, checks=flip_checks(bad, 0.5))
    record(s, "flip", "B", passed=None, score=None, error_kind="desktop")
    record(s, "flip", "B", passed=None, score=None, error_kind="agent")
    record(s, "poster", "A", passed=ok, score=1.0, phase=True, checks=poster_checks(ok, ok))
    record(s, "poster", "A", passed=bad, score=0.0, phase=False, checks=poster_checks(bad, ok))
    record(s, "poster", "B", passed=ok, score=1.0, checks=poster_checks(ok, bad))
    record(s, "poster", "B", passed=ok, score=1.0, phase=True, asks=1, checks=poster_checks(ok, ok))
    return s


# The 95% Wilson intervals (z = 1.96) of the counts below, worked by hand from
# (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n), rounded to 4 places.
WILSON = {
    (0, 2): (0.0, 0.6576),
    (1, 2): (0.0945, 0.9055),
    (2, 2): (0.3424, 1.0),
    (2, 3): (0.2077, 0.9385),
    (3, 3): (0.4385, 1.0),
    (2, 4): (0.1500, 0.8500),
    (3, 4): (0.3006, 0.9544),
    (4, 4): (0.5101, 1.0),
}


def test_wilson_matches_the_hand_computation() -> None:
    for (k, n), (low, high) in WILSON.items():
        got = wilson(k, n)
        assert got is not None
        assert got == pytest.approx((low, high), abs=1e-4), (k, n)
    assert wilson(0, 0) is None


def test_wilson_bounds_are_exact_at_none_and_all() -> None:
    # The formula's two terms cancel at k = 0 (and at k = n) only up to rounding:
    # 0/3 gave a lower bound of 5.55e-17, a negative error bar, and a crashed plot.
    for n in range(1, 200):
        none, every = wilson(0, n), wilson(n, n)
        assert none is not None and every is not None
        assert none[0] == 0.0 and every[1] == 1.0, n
        assert 0.0 < none[1] < 1.0 and 0.0 < every[0] < 1.0, n


def test_the_t_quantile_matches_scipy() -> None:
    # scipy comes with scikit-image; the figures do without it.
    from scipy.stats import t

    for df in [*range(1, 60), 100, 1000, 10**6]:
        assert t95(df) == pytest.approx(float(t.ppf(0.975, df)), abs=1e-5), df
    with pytest.raises(ValueError):
        t95(0)


def test_pass_at_k_and_pass_hat_k_by_hand() -> None:
    # 3 attempts, 2 succeeded: pass@1 = 2/3; any 2 of 3 hold a success: pass@2 = 1.
    assert pass_at_k(3, 2, 1) == pytest.approx(2 / 3)
    assert pass_at_k(3, 2, 2) == 1.0
    # pass^2: both drawn succeed, C(2,2)/C(3,2) = 1/3; pass^3 = 0.
    assert pass_hat_k(3, 2, 2) == pytest.approx(1 / 3)
    assert pass_hat_k(3, 2, 3) == 0.0
    # 5 attempts, 1 success, k=2: 1 - C(4,2)/C(5,2) = 1 - 6/10.
    assert pass_at_k(5, 1, 2) == pytest.approx(0.4)
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def test_rates_and_success_at_k_per_group(store: Store) -> None:
    summary = summarize(store)
    groups = {(g.level, g.agent): g for g in summary.groups}
    flip_a, flip_b = groups[("L1", "A")], groups[("L1", "B")]
    poster_a, poster_b = groups[("L2", "A")], groups[("L2", "B")]
    # A on flip: credits 1, 0.5, 1.
    assert (flip_a.success.k, flip_a.success.n) == (2, 3)
    assert [(flip_a.success_at(k).k, flip_a.success_at(k).n) for k in (0.5, 0.75, 1.0)] == [
        (3, 3),
        (2, 3),
        (2, 3),
    ]
    # B on flip: credit 0.75 and the agent's own error (no credit); the desktop
    # error is out of every rate.
    assert flip_b.errors == 1 and flip_b.finished == 2
    assert [flip_b.success_at(k).k for k in (0.5, 0.75, 1.0)] == [1, 1, 0]
    assert flip_b.success.interval == pytest.approx(WILSON[(0, 2)], abs=1e-4)
    assert [poster_a.success_at(k).k for k in (0.5, 0.75, 1.0)] == [1, 1, 1]
    assert (poster_b.asked_rate.k, poster_b.asked_rate.n) == (1, 2)
    assert reliability_cells(flip_a) == [
        "gimp",
        "L1",
        "standard",
        "A",
        "simulated",
        "3",
        "67% [21–94%]",
        "100% [44–100%]",
        "67% [21–94%]",
        "67% [21–94%]",
        "0% [0–56%]",
        "4.0",
    ]
    # Everything: 9 attempts (the desktop error is out), 5 passed (1, 3, 7, 9, 10);
    # credit ≥ 0.5: the five passes, 0.5 and 0.75 = 7; ≥ 0.75: 6; = 1: 5.
    overall = summary.overall
    assert overall is not None
    assert [overall.success_at(k).k for k in (0.5, 0.75, 1.0)] == [7, 6, 5]
    assert (overall.passed, overall.finished) == (5, 9)


def test_leaf_success_per_check(store: Store) -> None:
    rows = {(c.task_id, c.agent, c.path): c for c in summarize(store).checks}
    # A's three scored attempts of flip; B's one (its own error recorded no checks).
    exists, size = rows[("flip", "A", EXISTS)], rows[("flip", "A", SIZE)]
    assert (exists.rate.k, exists.rate.n, size.rate.k, size.rate.n) == (3, 3, 2, 3)
    assert size.rate.interval == pytest.approx(WILSON[(2, 3)], abs=1e-4)
    b_size = rows[("flip", "B", SIZE)]
    assert (b_size.rate.k, b_size.rate.n) == (0, 1)
    judge = rows[("poster", "B", SIZE)]
    assert judge.name == "judge" and judge.counts is False
    assert (judge.rate.k, judge.rate.n) == (1, 2)
    assert check_cells(judge) == [
        "poster",
        "B",
        "simulated",
        SIZE,
        "judge",
        "no (beside)",
        "1/2",
        "50% [9–91%]",
    ]
    assert check_cells(size)[5:] == ["yes", "2/3", "67% [21–94%]"]
    # The judge passed on A's failed episode: its row says so, the figures above do not.
    assert check_cells(rows[("poster", "A", SIZE)])[5:7] == ["no (beside)", "2/2"]
    assert check_cells(rows[("poster", "A", EXISTS)])[5:7] == ["yes", "1/2"]


def test_per_phase_pass_rate(store: Store) -> None:
    a, b = summarize(store).phases
    # A: two scored attempts of poster, both reached the phase, one passed it. B: two
    # scored attempts, one reached it (9 never did) and passed.
    assert phase_cells(a) == [
        "poster",
        "A",
        "simulated",
        "phases[0]",
        "2",
        "2",
        "1/2",
        "50% [9–91%]",
    ]
    assert phase_cells(b)[1:] == ["B", "simulated", "phases[0]", "2", "1", "1/1", "100% [21–100%]"]


def test_pass_at_k_and_pass_hat_k_over_repeats(store: Store) -> None:
    rows = {(r.key[3], r.key[1], r.k): r for r in summarize(store).repeats}
    # A on flip: 3 attempts, 2 passed. One unit: a mean with no interval.
    r = rows[("A", "L1", 2)]
    assert (r.units, r.pass_at.value, r.pass_at.interval) == (1, 1.0, None)
    assert r.pass_hat.value == pytest.approx(1 / 3)
    assert rows[("A", "L1", 3)].pass_hat.value == 0.0
    assert ("A", "L1", 5) not in rows  # no unit has 5 attempts
    # B on flip: its two attempts failed (one its own error).
    assert rows[("B", "L1", 2)].pass_at.value == 0.0
    # Per agent, A over its two units: flip (3, 2) and poster (2, 1).
    a1, a2 = rows[("A", "all", 1)], rows[("A", "all", 2)]
    assert a1.units == 2 and a1.pass_at.value == pytest.approx((2 / 3 + 1 / 2) / 2)
    assert a2.pass_hat.value == pytest.approx((1 / 3 + 0) / 2)
    # pass@2 is 1 for both units: no spread, the interval is the point.
    assert a2.pass_at.value == 1.0 and a2.pass_at.interval == (1.0, 1.0)
    # Two units, t(1) = 12.706: a wide interval, clipped to [0, 1].
    sd = math.sqrt(((2 / 3 - 7 / 12) ** 2 + (1 / 2 - 7 / 12) ** 2) / 1)
    half = 12.7062 * sd / math.sqrt(2)
    assert a1.pass_at.interval == pytest.approx(
        (max(0, 7 / 12 - half), min(1, 7 / 12 + half)), abs=1e-3
    )
    # Everything, k = 1: units flip-A 2/3, flip-B 0, poster-A 1/2, poster-B 1.
    everything = rows[("all", "all", 1)]
    assert everything.units == 4
    assert everything.pass_at.value == pytest.approx((2 / 3 + 0 + 1 / 2 + 1) / 4)
    assert repeat_cells(rows[("A", "L1", 2)]) == [
        "gimp",
        "L1",
        "standard",
        "A",
        "simulated",
        "2",
        "1",
        "100% -",
        "33% -",
    ]


def test_paired_difference_on_the_shared_tasks(store: Store) -> None:
    (pair,) = summarize(store).paired
    # flip: A 2/3, B 0/2; poster: A 1/2, B 2/2. Differences 2/3 and -1/2.
    assert (pair.first, pair.second, pair.difference.n) == ("A", "B", 2)
    assert pair.first_rate == pytest.approx((2 / 3 + 1 / 2) / 2)
    assert pair.second_rate == pytest.approx(0.5)
    mean = (2 / 3 - 1 / 2) / 2
    assert pair.difference.value == pytest.approx(mean)
    sd = math.sqrt(((2 / 3 - mean) ** 2 + (-1 / 2 - mean) ** 2) / 1)
    half = 12.7062 * sd / math.sqrt(2)
    assert pair.difference.interval == pytest.approx(
        (max(-1, mean - half), min(1, mean + half)), abs=1e-3
    )
    assert paired_cells(pair) == ["A", "B", "2", "58%", "50%", "+8% [-100–+100%]"]


def test_the_text_report_shows_every_table(store: Store) -> None:
    text = format_report(summarize(store))
    for title in ("Reliability", "Checks (leaf success)", "Phases", "Repeats", "Paired agents"):
        assert title in text
    assert "50% [9–91%]" in text and "no (beside)" in text and "+8% [-100–+100%]" in text


def rescore(
    store: Store,
    eid: int,
    *,
    passed: bool,
    score: float,
    size: bool,
    phase: CheckOutcome | None = None,
    phases: dict[int, tuple[bool, float]] | None = None,
) -> None:
    """A rescore of `eid` whose exists check passed and whose size check passed or not;
    `phase` its phase's check outcome, if the rescore has one."""
    outcomes = [
        outcome(EXISTS, passed=True, score=1.0),
        outcome(SIZE, "image_size", passed=size, score=float(size)),
    ]
    store.record_rescore(
        eid,
        task_sha256="1" * 64,
        evaluator="test",
        passed=passed,
        score=score,
        checks=outcomes if phase is None else [*outcomes, phase],
        phases=phases,
    )


def test_every_table_follows_the_score_choice(tmp_path: Path) -> None:
    from app.metrics.scores import summarize_scores

    with Store(tmp_path / "deskloop.db") as s:
        checks = flip_checks(True, 1.0)
        # An interactive episode whose final checks and phase passed; a rescore says
        # its size check and its phase failed.
        eid = record(s, "poster", "m", passed=True, score=1.0, checks=checks, phase=True)
        rescore(
            s,
            eid,
            passed=False,
            score=0.5,
            size=False,
            phase=outcome("phases[0].checks", passed=False, score=0.0, phase=0),
            phases={0: (False, 0.0)},
        )
        # One re-scored before phases were (its rescore has no phase): its phase stays.
        other = record(s, "poster", "m", passed=True, score=1.0, checks=checks, phase=True)
        rescore(s, other, passed=True, score=1.0, size=True)

        def tables(score: str) -> tuple[dict[str, str], str, str]:
            summary = summarize_scores(s, None, score)  # type: ignore[arg-type]
            (group,) = summary.groups
            (phase,) = summary.phases
            rates = {c.path: f"{c.rate.k}/{c.rate.n}" for c in summary.checks}
            return rates, f"{phase.rate.k}/{phase.rate.n}", f"{group.passed}/{group.finished}"

        assert tables("original") == ({EXISTS: "2/2", SIZE: "2/2"}, "2/2", "2/2")
        assert tables("latest") == ({EXISTS: "2/2", SIZE: "1/2"}, "1/2", "1/2")
