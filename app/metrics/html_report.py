"""The report as one self-contained HTML page: the tables of `app.metrics.summary`
and the plots of `app.metrics.plots`, rendered from `templates/report.html.j2`; and
any other report's page of titled tables and plots (`render_page`, from
`templates/sections.html.j2`: the study report's).

The template is package data (pyproject's `[tool.setuptools.package-data]`), loaded
with `PackageLoader` so an installed DeskLoop finds it. Autoescape is on for every
value; the plots' SVG is the one value marked safe, since matplotlib's SVG writer
escapes the labels it draws (task ids, agent names) itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from app.metrics.plots import Plot, plots
from app.metrics.report import atomic_write
from app.metrics.scores import ScoredReport
from app.metrics.summary import (
    CHECK_COLUMNS,
    COLUMNS,
    PAIRED_COLUMNS,
    PHASE_COLUMNS,
    POLICY_NOTE,
    RELIABILITY_COLUMNS,
    RELIABILITY_NOTE,
    REPEAT_COLUMNS,
    cells,
    check_cells,
    outcome,
    paired_cells,
    phase_cells,
    reliability_cells,
    repeat_cells,
)
from app.metrics.tables import Section

_ENV = Environment(
    loader=PackageLoader("app.metrics", "templates"),
    # On whatever the template is called: the default only escapes *.html names.
    autoescape=True,
    # A misspelt name in the template fails the report instead of printing nothing.
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def render_html(report: ScoredReport) -> str:
    """The page of `report`: its figures, and the lines that say which score they count
    and how success changes without the integrity-flagged episodes, as the text report."""
    summary = report.summary
    title = f"DeskLoop report: batch {summary.batch_id}" if summary.batch_id else "DeskLoop report"
    made = plots(summary.groups, summary.checks)
    shown = [Plot(p.name, p.title, Markup(p.svg)) for p in made]
    sections = [
        (
            "Reliability",
            RELIABILITY_COLUMNS,
            [reliability_cells(g) for g in [*summary.groups, *summary.totals]],
        ),
        ("Checks (leaf success)", CHECK_COLUMNS, [check_cells(c) for c in summary.checks]),
        ("Phases", PHASE_COLUMNS, [phase_cells(p) for p in summary.phases]),
        ("Repeats: pass@k and pass^k", REPEAT_COLUMNS, [repeat_cells(r) for r in summary.repeats]),
        ("Paired agents", PAIRED_COLUMNS, [paired_cells(p) for p in summary.paired]),
    ]
    return _ENV.get_template("report.html.j2").render(
        title=title,
        generated=summary.generated_at.isoformat(timespec="seconds"),
        note=POLICY_NOTE,
        score_note=report.score_note,
        integrity_note=report.integrity_note,
        columns=COLUMNS,
        groups=[cells(g) for g in summary.groups],
        totals=[cells(g) for g in summary.totals],
        plots=shown,
        sections=[(title, columns, rows) for title, columns, rows in sections if rows],
        reliability_note=RELIABILITY_NOTE,
        unscored=summary.unscored,
        outcome=outcome,
    )


def write_html(report: ScoredReport, path: Path | str) -> None:
    atomic_write(Path(path), render_html(report))


def render_page(
    title: str,
    sections: Sequence[Section],
    plots: Sequence[Plot] = (),
    notes: Sequence[str] = (),
    generated: datetime | None = None,
) -> str:
    """A page of `sections` (each a titled table and its note, as the text report
    prints them), then `plots`, under `title` and `notes`."""
    shown = [Plot(p.name, p.title, Markup(p.svg)) for p in plots]
    return _ENV.get_template("sections.html.j2").render(
        title=title,
        generated=(generated or datetime.now(UTC)).isoformat(timespec="seconds"),
        notes=list(notes),
        sections=list(sections),
        plots=shown,
    )


def write_page(path: Path | str, page: str) -> None:
    """Write a rendered page whole or not at all (its folder made when missing)."""
    atomic_write(Path(path), page)
