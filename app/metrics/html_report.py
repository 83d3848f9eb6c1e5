"""The report as one self-contained HTML page: the tables of `app.metrics.summary`
and the plots of `app.metrics.plots`, rendered from `templates/report.html.j2`.

The template is package data (pyproject's `[tool.setuptools.package-data]`), loaded
with `PackageLoader` so an installed DeskLoop finds it. Autoescape is on for every
value; the plots' SVG is the one value marked safe, since matplotlib's SVG writer
escapes the labels it draws (task ids, agent names) itself.
"""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from app.metrics.plots import Plot, plots
from app.metrics.report import atomic_write
from app.metrics.summary import COLUMNS, POLICY_NOTE, Summary, cells, outcome

_ENV = Environment(
    loader=PackageLoader("app.metrics", "templates"),
    # On whatever the template is called: the default only escapes *.html names.
    autoescape=True,
    # A misspelt name in the template fails the report instead of printing nothing.
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def render_html(summary: Summary) -> str:
    title = f"DeskLoop report: batch {summary.batch_id}" if summary.batch_id else "DeskLoop report"
    shown = [Plot(p.name, p.title, Markup(p.svg)) for p in plots(summary.groups)]
    return _ENV.get_template("report.html.j2").render(
        title=title,
        generated=summary.generated_at.isoformat(timespec="seconds"),
        note=POLICY_NOTE,
        columns=COLUMNS,
        groups=[cells(g) for g in summary.groups],
        totals=[cells(g) for g in summary.totals],
        plots=shown,
        unscored=summary.unscored,
        outcome=outcome,
    )


def write_html(summary: Summary, path: Path | str) -> None:
    atomic_write(Path(path), render_html(summary))
