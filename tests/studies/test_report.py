"""`study report` on a study recorded in a real store: two conditions within four
participants whose trials have known success and times (and a fifth whose one trial
ended in an error), questionnaires with known scores; every figure held against the
arithmetic beside it, the page written with its sections, and the command's exits."""

from __future__ import annotations

import math
import statistics
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from app.cli import main
from app.core.errors import DeskLoopError
from app.metrics.stats import Mean, t95
from app.metrics.summary import number_cell
from app.metrics.tables import Section, render_sections
from app.store import Store
from app.studies.data import study_data
from app.studies.loader import load_study
from app.studies.plans import plan_in_store
from app.studies.report import (
    ConditionMeasure,
    StudyReport,
    format_study_report,
    study_report,
    summarize,
)
from tests.store.helpers import new_episode
from tests.studies.helpers import write_study

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

# (passed, seconds on task) per participant, condition and task.
TRIALS: dict[tuple[str, str, str], tuple[int, float]] = {
    ("P01", "asks", "t1"): (1, 60), ("P01", "asks", "t2"): (1, 70),
    ("P01", "silent", "t1"): (1, 40), ("P01", "silent", "t2"): (0, 50),
    ("P02", "asks", "t1"): (1, 80), ("P02", "asks", "t2"): (0, 90),
    ("P02", "silent", "t1"): (1, 50), ("P02", "silent", "t2"): (1, 40),
    ("P03", "asks", "t1"): (1, 50), ("P03", "asks", "t2"): (1, 60),
    ("P03", "silent", "t1"): (0, 30), ("P03", "silent", "t2"): (1, 40),
    ("P04", "asks", "t1"): (0, 70), ("P04", "asks", "t2"): (1, 100),
    ("P04", "silent", "t1"): (1, 60), ("P04", "silent", "t2"): (1, 50),
}  # fmt: skip
ASKS = {"asks": 2, "silent": 0}
"""The agent's questions in every trial of the condition."""

SUS_ANSWERS = [4, 2, 5, 1, 4, 2, 5, 1, 4, 3]  # 82.5 (tests/studies/test_instruments.py)
SUS_NEUTRAL = [3] * 10  # (5 × 2 + 5 × 2) × 2.5 = 50
TRUST_ANSWERS = [2, 1, 3, 2, 1, 6, 5, 6, 7, 6, 6, 4]  # 71/12; distrust 9/5
TLX = {"mental": 70, "physical": 10, "temporal": 55, "performance": 25, "effort": 60}
TLX_FULL = {**TLX, "frustration": 40}  # mean 260/6


def _episode(store: Store, passed: int, seconds: float, asks: int, status: str) -> int:
    episode = new_episode(store, user_mode="person", started_at=T0)
    for n in range(asks):
        store.record_message(
            episode,
            role="agent",
            kind="question",
            text="?",
            step=0,
            source="agent",
            created_at=T0 + timedelta(seconds=n + 1),
        )
    if status == "finished":
        store.record_score(episode, passed=bool(passed), score=float(passed), checks=[])
        store.finish_episode(
            episode,
            status="finished",
            end_reason="done",
            steps=0,
            ended_at=T0 + timedelta(seconds=seconds),
        )
    else:
        store.finish_episode(
            episode,
            status="error",
            end_reason="error",
            error="the desktop died",
            error_kind="desktop",
            steps=0,
            ended_at=T0 + timedelta(seconds=seconds),
        )
    return episode


def _run(store: Store, code: str, position: int, passed: int, seconds: float, asks: int,
         status: str = "finished") -> None:  # fmt: skip
    studies = store.studies
    number = studies.start_try("study", code, position)
    studies.link_episode(
        "study", code, position, number, _episode(store, passed, seconds, asks, status)
    )
    studies.end_try("study", code, position, number, "done")


def _recorded(tmp_path: Path, *, record: bool = True) -> tuple[Path, Path]:
    path = write_study(
        tmp_path / "studies",
        tasks={"practice": "t0", "blocks": [["t1", "t2"]]},
        design={"seed": 4},
        questionnaires={
            "post_trial": ["nasa_tlx"],
            "post_condition": ["sus"],
            "post_study": ["trust"],
        },
    )
    db = tmp_path / "db.sqlite"
    study = load_study(path)
    with Store(db) as store:
        plan_in_store(store, study, 5)
        if not record:
            return path, db
        studies = store.studies
        for code in ("P01", "P02", "P03", "P04"):
            studies.record_consent("study", code)
            for trial in studies.trials("study", code):
                if trial.practice:
                    # Never counted: a failure of 999 s.
                    _run(store, code, trial.position, 0, 999, 5)
                    continue
                passed, seconds = TRIALS[(code, trial.condition, trial.task_id)]
                _run(store, code, trial.position, passed, seconds, ASKS[trial.condition])
            sus = {"asks": SUS_ANSWERS if code in ("P01", "P02") else SUS_NEUTRAL}
            sus["silent"] = SUS_NEUTRAL
            for condition, values in sus.items():
                studies.record_answers(
                    "study",
                    code,
                    point="post_condition",
                    context=f"condition:{condition}",
                    instrument="sus",
                    answers={f"q{n}": v for n, v in enumerate(values, 1)},
                )
            studies.record_answers(
                "study",
                code,
                point="post_study",
                context="study",
                instrument="trust",
                answers={f"q{n}": v for n, v in enumerate(TRUST_ANSWERS, 1)},
            )
        # One NASA-TLX after P01's first real trial; one after the practice, never counted.
        first = next(t for t in studies.trials("study", "P01") if not t.practice)
        for position, answers in ((0, {k: 100 for k in TLX_FULL}), (first.position, TLX_FULL)):
            studies.record_answers(
                "study",
                "P01",
                point="post_trial",
                context=f"trial:{position}",
                instrument="nasa_tlx",
                answers=answers,
            )
        # P05: the first real trial ended in an error; the others not run.
        studies.record_consent("study", "P05")
        for trial in studies.trials("study", "P05")[:2]:
            _run(store, "P05", trial.position, 0, 5, 0, "finished" if trial.practice else "error")
    return path, db


def _report(tmp_path: Path) -> StudyReport:
    path, db = _recorded(tmp_path)
    with Store(db) as store:
        return study_report(store, load_study(path))


def _measure(report: StudyReport, condition: str, measure: str) -> ConditionMeasure:
    (found,) = [m for m in report.measures if (m.condition, m.measure) == (condition, measure)]
    return found


def _first_conditions(path: Path, db: Path) -> dict[str, str]:
    with Store(db) as store:
        return {
            code: store.studies.trials("study", code)[1].condition
            for code in ("P01", "P02", "P03", "P04")
        }


def test_measures_by_condition_match_the_hand_worked_means(tmp_path: Path) -> None:
    report = _report(tmp_path)
    assert report.conditions == ("asks", "silent") and report.design == "within"
    # P05's practice is not counted, their errored trial and three not run are left out.
    assert (report.participants, report.trials, report.left_out) == (4, 16, 4)
    # asks: 60 70 80 90 50 60 70 100 → 580 / 8; silent: 40 50 50 40 30 40 60 50 → 360 / 8
    times = {
        c: [s for (_, cond, _), (_, s) in TRIALS.items() if cond == c] for c in ("asks", "silent")
    }
    for condition, mean in (("asks", 72.5), ("silent", 45.0)):
        got = _measure(report, condition, "time_on_task_s").mean
        assert got.n == 8 and got.value == pytest.approx(mean)
        half = t95(7) * statistics.stdev(times[condition]) / math.sqrt(8)
        assert got.interval == pytest.approx((mean - half, mean + half))
    # Success: 6 of 8 in each, with the Wilson interval.
    for condition in ("asks", "silent"):
        success = _measure(report, condition, "passed")
        assert success.rate is not None and (success.rate.k, success.rate.n) == (6, 8)
        assert success.mean.value == 0.75
        low, high = success.mean.interval or (0.0, 0.0)
        assert low == pytest.approx(0.4093, abs=1e-4) and high == pytest.approx(0.9285, abs=1e-4)
    assert _measure(report, "asks", "asks").mean.value == 2.0
    assert _measure(report, "silent", "asks").mean.value == 0.0
    # Every measure, for every condition.
    assert len(report.measures) == 2 * 16
    # No steps: no step share to average, shown as "-".
    assert _measure(report, "asks", "participant_step_share").mean.n == 0


def test_paired_differences_are_over_the_participants_own_means(tmp_path: Path) -> None:
    report = _report(tmp_path)
    (time,) = [p for p in report.paired if p.measure == "time_on_task_s"]
    assert (time.first, time.second) == ("asks", "silent")
    # Per participant, asks − silent: (65 − 45), (85 − 45), (55 − 35), (85 − 55)
    differences = [20.0, 40.0, 20.0, 30.0]
    assert time.first_mean == pytest.approx(72.5) and time.second_mean == pytest.approx(45.0)
    assert time.difference.n == 4 and time.difference.value == pytest.approx(27.5)
    half = t95(3) * statistics.stdev(differences) / 2
    assert time.difference.interval == pytest.approx((27.5 - half, 27.5 + half))
    # Success: 1 − .5, .5 − 1, 1 − .5, .5 − 1 → 0 on average, clipped to [−1, 1].
    (success,) = [p for p in report.paired if p.measure == "passed"]
    assert success.difference.value == pytest.approx(0.0)
    low, high = success.difference.interval or (0.0, 0.0)
    assert -1.0 <= low < 0 < high <= 1.0
    (asks,) = [p for p in report.paired if p.measure == "asks"]
    assert asks.difference.value == 2.0 and asks.difference.interval == (2.0, 2.0)


def test_the_order_table_shows_success_and_time_by_position(tmp_path: Path) -> None:
    path, db = _recorded(tmp_path)
    first = _first_conditions(path, db)
    with Store(db) as store:
        report = study_report(store, load_study(path))
    expected = {}
    for condition in ("asks", "silent"):
        for place in (0, 1):
            people = [p for p, c in first.items() if (c == condition) == (place == 0)]
            here = [v for (p, c, _), v in TRIALS.items() if p in people and c == condition]
            expected[(condition, place)] = (
                len(here),
                sum(passed for passed, _ in here) / len(here),
                sum(seconds for _, seconds in here) / len(here),
            )
    got = {
        (o.condition, o.condition_position): (o.trials, o.success, o.time_on_task_s)
        for o in report.order
    }
    assert got == pytest.approx(expected)
    # The Williams design gives two participants each order.
    assert sorted(first.values()) == ["asks", "asks", "silent", "silent"]


def test_questionnaire_means_per_condition_and_overall(tmp_path: Path) -> None:
    report = _report(tmp_path)
    got = {(s.point, s.instrument, s.scale, s.condition): s.mean for s in report.questionnaires}
    sus_asks = got[("post_condition", "sus", "score", "asks")]
    # (82.5 + 82.5 + 50 + 50) / 4
    assert sus_asks.n == 4 and sus_asks.value == pytest.approx(66.25)
    assert got[("post_condition", "sus", "score", "silent")].value == pytest.approx(50.0)
    assert got[("post_condition", "sus", "score", "silent")].interval == pytest.approx((50, 50))
    trust = got[("post_study", "trust", "score", None)]
    assert trust.n == 4 and trust.value == pytest.approx(71 / 12)
    assert got[("post_study", "trust", "distrust", None)].value == pytest.approx(9 / 5)
    # The practice's TLX (all 100) is left out: only the one after a real trial.
    condition = _first_conditions(tmp_path / "studies", tmp_path / "db.sqlite")["P01"]
    tlx = got[("post_trial", "nasa_tlx", "score", condition)]
    assert tlx.n == 1 and tlx.value == pytest.approx(260 / 6) and tlx.interval is None
    # pre_study first, then post_trial, post_condition, post_study; the score before subscales.
    points = [s.point for s in report.questionnaires]
    assert points == sorted(points, key=["post_trial", "post_condition", "post_study"].index)
    trust_scales = [s.scale for s in report.questionnaires if s.instrument == "trust"]
    assert trust_scales[0] == "score"


def test_the_text_report_and_the_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, db = _recorded(tmp_path)
    page = tmp_path / "out" / "report.html"
    assert main(["--db", str(db), "study", "report", str(path), "--html", str(page)]) == 0
    captured = capsys.readouterr()
    out = captured.out
    assert out.startswith(
        "study study (within participants): 4 participants, 16 finished trials "
        "(the practice left out; 4 not finished, left out)"
    )
    for title in (
        "Measures by condition",
        "Paired differences (within participants)",
        "Questionnaires",
        "Order: condition by position",
    ):
        assert f"\n{title}\n" in out
    lines = out.splitlines()
    assert lines[lines.index("Measures by condition") + 3].split() == [
        *("passed", "(success", "rate)", "asks", "8", "75%", "[41–93%]")
    ]
    assert "time_on_task_s (s)" in out and "72.50 [" in out and "+27.50 [" in out
    assert f"wrote {page}" in captured.err
    html = page.read_text()
    for title in ("Measures by condition", "Paired differences", "Questionnaires", "Order:"):
        assert f"<h2>{title}" in html
    for plot in ("passed", "time_on_task_s", "participant_active_s"):
        assert f'<figure id="plot-{plot}">' in html and f'version="1.1" id="{plot}">' in html
    # The plots are inline: the page loads nothing.
    assert "<script" not in html and "src=" not in html and "<link" not in html
    assert "66.25 [" in html and "<td>P0" not in html


def test_between_participants_has_no_paired_table(tmp_path: Path) -> None:
    path, db = _recorded(tmp_path)
    with Store(db) as store:
        study = load_study(path)
        data = study_data(store, study)
    between = study.model_copy(
        update={"design": study.design.model_copy(update={"participants": "between"})}
    )
    report = summarize(between, data)
    assert report.paired == [] and report.measures
    assert "Paired differences" not in format_study_report(report)


def test_a_study_without_a_plan_or_finished_trials_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_study(tmp_path / "studies")
    db = tmp_path / "db.sqlite"
    assert main(["--db", str(db), "study", "report", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"study study has no plan in {db}" in err
    assert main(["--db", str(db), "study", "report", str(path), "--pilot"]) == 2
    assert f"study pilot:study has no plan in {db}" in capsys.readouterr().err
    planned, planned_db = _recorded(tmp_path / "planned", record=False)
    assert main(["--db", str(planned_db), "study", "report", str(planned)]) == 2
    assert "study study has no finished trials yet (20 planned" in capsys.readouterr().err
    with Store(planned_db) as store, pytest.raises(DeskLoopError, match="no finished trials"):
        study_report(store, load_study(planned))


def test_an_html_path_that_cannot_be_written_fails_after_the_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, db = _recorded(tmp_path)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    bad = blocker / "report.html"
    assert main(["--db", str(db), "study", "report", str(path), "--html", str(bad)]) == 2
    captured = capsys.readouterr()
    assert "Measures by condition" in captured.out
    assert f"not written: {bad} (--html)" in captured.err
    assert not bad.exists()


def test_the_cells_and_sections_the_report_prints_with() -> None:
    assert number_cell(Mean(12.5, 3, (8.1, 16.9))) == "12.50 [8.10–16.90]"
    assert number_cell(Mean(-2.0, 4, (-5.0, 1.0)), signed=True) == "-2.00 [-5.00–+1.00]"
    assert number_cell(Mean(3.0, 1, None)) == "3.00" and number_cell(Mean(None, 0, None)) == "-"
    text = render_sections(
        [Section("First", ["a", "b"], [["1", "2"]], "a note"), Section("Empty", ["a"], [])]
    )
    assert text == "First\na   b\n─────\n1   2\na note\n\nEmpty\n(none)"
