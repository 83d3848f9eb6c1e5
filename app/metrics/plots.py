"""The HTML report's plots: matplotlib figures of a summary's groups as inline SVG.

Figures are made with `matplotlib.figure.Figure`, never pyplot: no display is
opened and no backend is chosen for the whole process (as `matplotlib.use("Agg")`
would, for every other user of matplotlib in it); `savefig(format="svg")` draws
with matplotlib's SVG renderer directly. The SVG is made for inlining in one HTML
page:

- text stays text (`svg.fonttype: none`): labels can be read and searched, and
  matplotlib's XML writer escapes them;
- labels are never read as mathtext (`text.parse_math: false`): an agent named
  `a$b` is shown as written instead of failing the report;
- every id is prefixed with the plot's name, and so is every reference to one:
  matplotlib numbers its groups `figure_1`, `patch_1`... in each figure, and one
  page holds four figures;
- the same figures give the same bytes (a fixed hash salt, no date in the metadata);
- the XML prolog and its DOCTYPE (a DTD URL) are dropped: the page loads nothing.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, TypeVar

import matplotlib
from lxml import etree
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, PercentFormatter

from app.metrics.checkpoints import CheckRate
from app.metrics.summary import GroupStats

COLORS = {
    "passed": "#3a8f3a",
    "failed": "#c8443b",
    "errors": "#8a8a8a",
    "aborted": "#e0a030",
    "credit": "#4a7bd0",
    "ask rate": "#9a6fc0",
}
LEGEND: dict[str, Any] = {
    # Above the axes, where it covers no bar.
    "loc": "lower left",
    "bbox_to_anchor": (0.0, 1.0),
    "fontsize": 8,
    "frameon": False,
}
ROW_INCHES = 0.42
WIDTH_INCHES = 9.0


@dataclass(frozen=True)
class Plot:
    name: str
    """Also the SVG's id."""
    title: str
    svg: str


T = TypeVar("T")
Draw = Callable[[Axes, Sequence[T]], None]
"""Draws one plot of the rows (groups, checks) on axes whose rows are already labelled."""


def style() -> AbstractContextManager[None]:
    """The settings the plots are made and saved in (the module's docstring says why)."""
    return matplotlib.rc_context(
        {
            "svg.fonttype": "none",
            "svg.hashsalt": "deskloop",
            "text.parse_math": False,
        }
    )


LABEL_CHARS = 48
"""A row label's widest line, in characters: longer labels are wrapped (`wrap_label`),
so that the bars keep their share of the width."""
LINE_INCHES = 0.2
"""The height a row needs per line of its label."""


def wrap_label(parts: Sequence[str], width: int = LABEL_CHARS) -> str:
    """`parts` joined by " · ", a new line started where the next part would pass
    `width` characters; a part is never split (an agent's name stays whole)."""
    lines: list[str] = []
    for part in parts:
        if lines and len(lines[-1]) + len(" · ") + len(part) <= width:
            lines[-1] += " · " + part
        else:
            if lines:
                lines[-1] += " ·"
            lines.append(part)
    return "\n".join(lines)


def figure(draw: Draw[T], groups: Sequence[T], labels: Sequence[str]) -> Figure:
    """One plot of the rows, each labelled (a label may have several lines)."""
    lines = max((label.count("\n") + 1 for label in labels), default=1)
    row = max(ROW_INCHES, LINE_INCHES * lines + 0.1)
    fig = Figure(figsize=(WIDTH_INCHES, 1.4 + row * len(groups)), layout="tight")
    ax = fig.subplots()
    # The first group on top, as in the tables.
    ax.set_yticks(range(len(groups)), list(labels))
    ax.invert_yaxis()
    ax.spines[["top", "right"]].set_visible(False)
    draw(ax, groups)
    return fig


def _svg(name: str, fig: Figure) -> str:
    out = io.StringIO()
    fig.savefig(out, format="svg", metadata={"Date": None})
    return _namespaced_ids(out.getvalue(), name)


XLINK_HREF = "{http://www.w3.org/1999/xlink}href"


def _namespaced_ids(svg: str, name: str) -> str:
    """`svg` with its root's id `name` and every other id, and every reference to
    one (`href="#id"`, `url(#id)`), prefixed with `name-`. Done on the parsed tree,
    never by text substitution, so a label that reads `id="x"` stays as written."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True)
    root = etree.fromstring(svg.encode(), parser)
    for element in root.iter():
        for attr, value in element.attrib.items():
            if attr == "id":
                element.set(attr, f"{name}-{value}")
            elif attr in (XLINK_HREF, "href") and value.startswith("#"):
                element.set(attr, f"#{name}-{value[1:]}")
            elif "url(#" in value:
                element.set(attr, value.replace("url(#", f"url(#{name}-"))
    root.set("id", name)
    # Serializing the root drops the prolog and its DOCTYPE.
    return str(etree.tostring(root, encoding="unicode"))


def _bar(length: float) -> float:
    """An error bar's length, never below 0 (matplotlib refuses a negative one)."""
    return max(0.0, length)


def _success(ax: Axes, groups: Sequence[GroupStats]) -> None:
    rows = range(len(groups))
    rates = [g.success_rate or 0.0 for g in groups]
    low, high = [], []
    for g, rate in zip(groups, rates, strict=True):
        lo, hi = g.success_interval or (rate, rate)
        low.append(_bar(rate - lo))
        high.append(_bar(hi - rate))
    ax.barh(rows, rates, color=COLORS["passed"], xerr=[low, high], capsize=3)
    for row, g in zip(rows, groups, strict=True):
        shown = f"{g.passed}/{g.finished}" if g.finished else "no attempts"
        ax.text(1.02, row, shown, va="center", fontsize=9)
    ax.set_xlim(0, 1)
    ax.xaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_xlabel("success rate over the attempts (bars: 95% Wilson interval)")


def _outcomes(ax: Axes, groups: Sequence[GroupStats]) -> None:
    left = [0] * len(groups)
    for name in ("passed", "failed", "errors", "aborted"):
        counts = [getattr(g, name) for g in groups]
        ax.barh(range(len(groups)), counts, left=left, color=COLORS[name], label=name)
        left = [a + b for a, b in zip(left, counts, strict=True)]
    ax.set_xlabel("episodes (one per batch slot)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(**LEGEND, ncols=4)


def _credit_and_asks(ax: Axes, groups: Sequence[GroupStats]) -> None:
    height = 0.38
    for offset, name, values in (
        (-height / 2, "credit", [g.mean_score for g in groups]),
        (height / 2, "ask rate", [g.ask_rate for g in groups]),
    ):
        rows = [i + offset for i in range(len(groups))]
        shown = [v or 0.0 for v in values]
        ax.barh(rows, shown, height=height, color=COLORS[name], label=name)
    ax.set_xlim(0, 1)
    ax.set_xlabel("mean partial credit and ask rate, over the attempts")
    ax.legend(**LEGEND, ncols=2)


def _check_rates(ax: Axes, checks: Sequence[CheckRate]) -> None:
    rows = range(len(checks))
    rates = [c.rate.value or 0.0 for c in checks]
    low, high = [], []
    for c, rate in zip(checks, rates, strict=True):
        lo, hi = c.rate.interval or (rate, rate)
        low.append(_bar(rate - lo))
        high.append(_bar(hi - rate))
    colors = [COLORS["passed"] if c.counts else COLORS["credit"] for c in checks]
    ax.barh(rows, rates, color=colors, xerr=[low, high], capsize=3)
    for row, c in zip(rows, checks, strict=True):
        ax.text(1.02, row, f"{c.rate.k}/{c.rate.n}", va="center", fontsize=9)
    ax.set_xlim(0, 1)
    ax.xaxis.set_major_formatter(PercentFormatter(1.0))
    # Two lines, ending where the axis ends: the row labels (task · agent · user: check)
    # leave the axis a narrow part of the figure, and a label centred under it ran off
    # the figure's right edge.
    ax.set_xlabel(
        "leaf success over the scored attempts (bars: 95% Wilson interval)\n"
        "blue: reported beside, does not decide pass/fail",
        loc="right",
    )


def figures(
    groups: Sequence[GroupStats], checks: Sequence[CheckRate]
) -> Iterator[tuple[str, str, Figure]]:
    """The report's plots as (name, title, figure): three of `groups` (none when there
    are no groups), then the per-check pass rates (none when no check was recorded).
    Made inside `style()`, as `plots` does."""
    if groups:
        labels = [wrap_label([f"{g.app} {g.level} {g.kind}", g.agent, g.user]) for g in groups]
        made: list[tuple[str, str, Draw[GroupStats]]] = [
            ("success", "Success rate", _success),
            ("outcomes", "Outcomes", _outcomes),
            ("credit", "Partial credit and ask rate", _credit_and_asks),
        ]
        for name, title, draw in made:
            yield name, title, figure(draw, groups, labels)
    if checks:
        labels = [
            f"{wrap_label([c.task_id, c.agent, c.user])}:\n{c.path} ({c.name})" for c in checks
        ]
        yield "checks", "Per-check pass rate", figure(_check_rates, checks, labels)


def plots(groups: Sequence[GroupStats], checks: Sequence[CheckRate]) -> list[Plot]:
    """The report's plots (`figures`) as SVG."""
    with style():
        return [Plot(name, title, _svg(name, fig)) for name, title, fig in figures(groups, checks)]


@dataclass(frozen=True)
class Bar:
    """One bar of `bar_plot`: a labelled value with its 95% interval and a note
    beside it (its n)."""

    label: str
    value: float | None
    interval: tuple[float, float] | None
    note: str = ""


def _bars(share: bool) -> Draw[Bar]:
    def draw(ax: Axes, bars: Sequence[Bar]) -> None:
        values = [b.value or 0.0 for b in bars]
        low, high = [], []
        for b, value in zip(bars, values, strict=True):
            lo, hi = b.interval or (value, value)
            low.append(_bar(value - lo))
            high.append(_bar(hi - value))
        ax.barh(range(len(bars)), values, color=COLORS["credit"], xerr=[low, high], capsize=3)
        # Beside the axes whatever the scale: x in the axes' fraction, y in rows.
        for row, b in enumerate(bars):
            shown = b.note if b.value is not None else "no values"
            ax.text(1.01, row, shown, va="center", fontsize=9, transform=ax.get_yaxis_transform())
        if share:
            ax.set_xlim(0, 1)
            ax.xaxis.set_major_formatter(PercentFormatter(1.0))
        else:
            ax.set_xlim(left=0)

    return draw


def bar_plot(
    name: str, title: str, bars: Sequence[Bar], xlabel: str, *, share: bool = False
) -> Plot:
    """A horizontal bar per row with its 95% interval as an error bar, as SVG; `share`:
    the values are shares, drawn from 0 to 100%; otherwise the axis starts at 0."""
    with style():
        fig = figure(_bars(share), bars, [wrap_label([b.label]) for b in bars])
        fig.axes[0].set_xlabel(xlabel)
        return Plot(name, title, _svg(name, fig))
