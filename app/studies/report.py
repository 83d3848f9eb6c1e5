"""`study report`: the study's figures per condition, from the same tidy rows the export
writes (`app.studies.data`), with the statistics, tables, page and plots of
`app.metrics`.

- **measures**: per condition, every collaboration measure's mean over the trials with
  its 95% t interval; `passed` as the success rate with its 95% Wilson interval;
- **paired** (within participants): for every two conditions and each measure, each
  participant's mean per condition, then the mean of the participants' differences
  (first minus second) with its 95% t interval over the participants;
- **questionnaires**: per instrument and scale, the mean score with its 95% t interval:
  per condition for the points that follow one (post_trial, post_condition), overall
  for pre_study and post_study;
- **order**: per condition and its place in the participant's order, the trials'
  success and mean time on task (learning and fatigue show here).

The trials counted are the finished ones: the practice never counts, a trial whose
episode ended in an error (or that has none yet) is left out and counted in the header,
and withdrawn participants have no rows at all. Pure over the rows: `study_report`
reads them with `study_data` and `summarize` does the rest.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from app.core.errors import DeskLoopError
from app.metrics.stats import Mean, Rate, mean_with_interval
from app.metrics.summary import mean_cell, number_cell, rate_cell
from app.metrics.tables import Section, render_sections
from app.store import Store
from app.studies.data import Row, StudyData, study_data
from app.studies.measures import MEASURES
from app.studies.model import Study

SUCCESS = "passed"
"""The measure shown as a success rate (Wilson interval) rather than a mean."""

POINTS_BY_CONDITION = ("post_trial", "post_condition")
POINTS_OVERALL = ("pre_study", "post_study")

PLOTTED = (
    ("passed", "Success rate"),
    ("time_on_task_s", "Time on task (s)"),
    ("participant_active_s", "Participant active time (s)"),
    ("participant_initiative_share", "Participant's share of initiatives"),
)
"""The measures the page plots per condition, with their titles."""


def is_share(measure: str) -> bool:
    """A share or a rate (0/1, 0–1): shown in %."""
    return MEASURES[measure][0] in ("0/1", "0–1")


def _bounded(measure: str) -> bool:
    """A measure between 0 and 1 (a share, the initiative entropy in bits)."""
    return "0–1" in MEASURES[measure][0] or MEASURES[measure][0] == "0/1"


def _bounds(measure: str) -> tuple[float, float]:
    # Every measure is a count, a time or a share: never below 0.
    return (0.0, 1.0) if _bounded(measure) else (0.0, math.inf)


@dataclass(frozen=True)
class ConditionMeasure:
    condition: str
    measure: str
    mean: Mean
    """The mean over the trials with a value, with its 95% t interval; for `passed`,
    the success rate with its Wilson interval (`rate`'s)."""
    rate: Rate | None = None
    """`passed` only: successes of the trials."""


@dataclass(frozen=True)
class PairedMeasure:
    first: str
    second: str
    measure: str
    first_mean: float | None
    second_mean: float | None
    """Each condition's mean over the participants' own means (those in both)."""
    difference: Mean
    """First minus second, over the participants with a value in both."""


@dataclass(frozen=True)
class ScoreMean:
    point: str
    instrument: str
    scale: str
    condition: str | None
    """None for pre_study and post_study."""
    mean: Mean


@dataclass(frozen=True)
class OrderCell:
    condition: str
    condition_position: int
    """0-based, as in the data."""
    trials: int
    success: float | None
    time_on_task_s: float | None


@dataclass(frozen=True)
class StudyReport:
    study: str
    design: str
    conditions: tuple[str, ...]
    participants: int
    trials: int
    left_out: int
    """Trials not finished (an error, or no episode yet); the practice is not counted."""
    measures: list[ConditionMeasure]
    paired: list[PairedMeasure]
    questionnaires: list[ScoreMean]
    order: list[OrderCell]


def _mean(values: Iterable[Any]) -> float | None:
    kept = [float(v) for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def counted_trials(trials: Sequence[Row]) -> list[Row]:
    """The trials the report counts: finished, not the practice."""
    return [t for t in trials if not t["practice"] and t["status"] == "finished"]


def condition_measures(trials: Sequence[Row], conditions: Sequence[str]) -> list[ConditionMeasure]:
    """Every measure × condition, in MEASURES' order and the study's order of conditions."""
    rows = []
    for measure in MEASURES:
        for condition in conditions:
            mine = [t for t in trials if t["condition"] == condition]
            values = [float(t[measure]) for t in mine if t[measure] is not None]
            if measure == SUCCESS:
                rate = Rate(int(sum(values)), len(values))
                rows.append(
                    ConditionMeasure(
                        condition, measure, Mean(rate.value, rate.n, rate.interval), rate
                    )
                )
            else:
                rows.append(
                    ConditionMeasure(
                        condition, measure, mean_with_interval(values, _bounds(measure))
                    )
                )
    return rows


def participant_means(trials: Sequence[Row], measure: str) -> dict[tuple[str, str], float]:
    """(participant, condition) → the participant's mean of `measure` in the condition
    (only where they have a value)."""
    values: dict[tuple[str, str], list[float]] = {}
    for t in trials:
        if t[measure] is not None:
            values.setdefault((t["participant"], t["condition"]), []).append(float(t[measure]))
    return {key: sum(v) / len(v) for key, v in values.items()}


def paired_measures(trials: Sequence[Row], conditions: Sequence[str]) -> list[PairedMeasure]:
    """Every two conditions (in the study's order, first minus second) × measure."""
    rows = []
    for measure in MEASURES:
        means = participant_means(trials, measure)
        people = sorted({code for code, _ in means})
        difference_bounds = (-1.0, 1.0) if _bounded(measure) else None
        for first, second in itertools.combinations(conditions, 2):
            both = [p for p in people if (p, first) in means and (p, second) in means]
            a = [means[(p, first)] for p in both]
            b = [means[(p, second)] for p in both]
            rows.append(
                PairedMeasure(
                    first,
                    second,
                    measure,
                    _mean(a),
                    _mean(b),
                    mean_with_interval(
                        [x - y for x, y in zip(a, b, strict=True)], difference_bounds
                    ),
                )
            )
    return rows


def score_means(scores: Sequence[Row], practice: set[tuple[str, int]]) -> list[ScoreMean]:
    """Per point, instrument, scale (and condition for the points that follow one), the
    mean score over the questionnaires given; none after the practice trial."""
    grouped: dict[tuple[str, str, str, str | None], list[float]] = {}
    for row in scores:
        if row["score"] is None or (row["participant"], row["position"]) in practice:
            continue
        condition = row["condition"] if row["point"] in POINTS_BY_CONDITION else None
        key = (row["point"], row["instrument"], row["scale"], condition)
        grouped.setdefault(key, []).append(float(row["score"]))
    points = (*POINTS_OVERALL[:1], *POINTS_BY_CONDITION, *POINTS_OVERALL[1:])

    def order(key: tuple[str, str, str, str | None]) -> tuple[int, str, str, str]:
        point, instrument, scale, condition = key
        place = points.index(point) if point in points else len(points)
        # The instrument's whole score first, then its subscales.
        return place, instrument, "" if scale == "score" else scale, condition or ""

    return [
        ScoreMean(point, instrument, scale, condition, mean_with_interval(values))
        for (point, instrument, scale, condition), values in sorted(
            grouped.items(), key=lambda item: order(item[0])
        )
    ]


def order_cells(trials: Sequence[Row], conditions: Sequence[str]) -> list[OrderCell]:
    """Per condition and each place it was met at, the trials' success and time."""
    cells = []
    for condition in conditions:
        mine = [t for t in trials if t["condition"] == condition]
        for place in sorted({t["condition_position"] for t in mine}):
            here = [t for t in mine if t["condition_position"] == place]
            cells.append(
                OrderCell(
                    condition,
                    place,
                    len(here),
                    _mean(t[SUCCESS] for t in here),
                    _mean(t["time_on_task_s"] for t in here),
                )
            )
    return cells


def summarize(study: Study, data: StudyData, study_id: str | None = None) -> StudyReport:
    """The report of the study's rows.

    Raises:
        DeskLoopError: no finished trial (the practice left out) to report on.
    """
    sid = study_id or study.id
    planned = [t for t in data.trials if not t["practice"]]
    trials = counted_trials(data.trials)
    if not trials:
        raise DeskLoopError(
            f"study {sid} has no finished trials yet ({len(planned)} planned, the practice "
            "left out): nothing to report"
        )
    conditions = tuple(c.id for c in study.conditions)
    within = study.design.participants == "within" and len(conditions) > 1
    practice = {(t["participant"], t["position"]) for t in data.trials if t["practice"]}
    return StudyReport(
        study=sid,
        design=study.design.participants,
        conditions=conditions,
        participants=len({t["participant"] for t in trials}),
        trials=len(trials),
        left_out=sum(t["status"] != "finished" for t in planned),
        measures=condition_measures(trials, conditions),
        paired=paired_measures(trials, conditions) if within else [],
        questionnaires=score_means(data.scores, practice),
        order=order_cells(trials, conditions),
    )


def study_report(store: Store, study: Study, study_id: str | None = None) -> StudyReport:
    """The report of the study (`study_id`: its pilot's) as recorded in `store`."""
    return summarize(study, study_data(store, study, study_id), study_id)


# Text and page cells.


def _value(measure: str, mean: Mean, signed: bool = False) -> str:
    if is_share(measure):
        return mean_cell(mean, signed=signed)
    return number_cell(mean, signed=signed)


def _plain(measure: str, value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0%}" if is_share(measure) else f"{value:.2f}"


def _measure_label(measure: str) -> str:
    unit = MEASURES[measure][0]
    return f"{measure} (success rate)" if measure == SUCCESS else f"{measure} ({unit})"


MEASURE_HEADERS = ["measure", "condition", "n", "mean [95% CI]"]
PAIRED_HEADERS = [
    *("measure", "first", "second", "participants", "first mean", "second mean", "difference")
]
SCORE_HEADERS = ["point", "instrument", "scale", "condition", "n", "mean [95% CI]"]
ORDER_HEADERS = ["condition", "position", "trials", "success", "time on task (s)"]

MEASURES_NOTE = (
    "n: trials with a value; means with their 95% t interval over the trials (taken as "
    "independent), success rates with their 95% Wilson interval; shares and rates in %."
)
PAIRED_NOTE = (
    "per participant, the mean of each condition; then the mean of the participants' "
    "differences (first minus second) with its 95% t interval over the participants who "
    "have a value in both."
)
SCORES_NOTE = (
    "n: questionnaires given; mean score with its 95% t interval; post_trial and "
    "post_condition per condition, pre_study and post_study over everyone."
)
ORDER_NOTE = (
    "position: the condition's place in the participant's order (1: met first); success "
    "and mean time on task of the trials there."
)


def sections(report: StudyReport) -> list[Section]:
    """The report's tables, for the text and the page alike."""
    measures = [
        [
            _measure_label(m.measure),
            m.condition,
            str(m.mean.n),
            rate_cell(m.rate) if m.rate is not None else _value(m.measure, m.mean),
        ]
        for m in report.measures
    ]
    made = [Section("Measures by condition", MEASURE_HEADERS, measures, MEASURES_NOTE)]
    if report.paired:
        paired = [
            [
                _measure_label(p.measure),
                p.first,
                p.second,
                str(p.difference.n),
                _plain(p.measure, p.first_mean),
                _plain(p.measure, p.second_mean),
                _value(p.measure, p.difference, signed=True),
            ]
            for p in report.paired
        ]
        made.append(
            Section("Paired differences (within participants)", PAIRED_HEADERS, paired, PAIRED_NOTE)
        )
    scores = [
        [s.point, s.instrument, s.scale, s.condition or "all", str(s.mean.n), number_cell(s.mean)]
        for s in report.questionnaires
    ]
    made.append(Section("Questionnaires", SCORE_HEADERS, scores, SCORES_NOTE))
    order = [
        [
            o.condition,
            str(o.condition_position + 1),
            str(o.trials),
            _plain(SUCCESS, o.success),
            _plain("time_on_task_s", o.time_on_task_s),
        ]
        for o in report.order
    ]
    made.append(Section("Order: condition by position", ORDER_HEADERS, order, ORDER_NOTE))
    return made


def header(report: StudyReport) -> str:
    left = f"; {report.left_out} not finished, left out" if report.left_out else ""
    return (
        f"study {report.study} ({report.design} participants): {report.participants} "
        f"participants, {report.trials} finished trials (the practice left out{left})"
    )


def format_study_report(report: StudyReport) -> str:
    """The report as text: its header, then each table with its note."""
    return f"{header(report)}\n\n{render_sections(sections(report))}"


def render_study_page(report: StudyReport) -> str:
    """The report as one self-contained HTML page: its tables, then a plot per key
    measure (`PLOTTED`) of each condition's mean and interval."""
    # Only here: matplotlib and jinja2 cost an import the text report does not need.
    from app.metrics.html_report import render_page
    from app.metrics.plots import Bar, bar_plot

    by_key = {(m.condition, m.measure): m.mean for m in report.measures}
    plots = []
    for measure, title in PLOTTED:
        means = [(c, by_key[(c, measure)]) for c in report.conditions]
        bars = [Bar(c, m.value, m.interval, f"n={m.n}") for c, m in means]
        interval = "Wilson" if measure == SUCCESS else "t"
        plots.append(
            bar_plot(
                measure,
                title,
                bars,
                f"{_measure_label(measure)} by condition (bars: 95% {interval} interval)",
                share=is_share(measure),
            )
        )
    return render_page(
        f"DeskLoop study report: {report.study}",
        sections(report),
        plots,
        notes=[header(report)],
    )
