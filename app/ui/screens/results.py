"""Results: success rate, partial credit and ask rate by app × level × kind × agent ×
user, with `deskloop report`'s figures and policy (`app.metrics.summary`)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widgets import DataTable, Footer, Header, Static

from app.metrics.report import reliability_sections
from app.metrics.summary import (
    ALL,
    COLUMNS,
    RELIABILITY_COLUMNS,
    RELIABILITY_NOTE,
    GroupStats,
    Summary,
    cells,
    num,
    pct,
    reliability_cells,
    summarize,
)
from app.ui.screens.base import LabScreen

BAR_WIDTH = 30

ORDER = [
    *("app", "level", "kind", "agent", "user"),
    *("success", "credit"),
    *("episodes", "passed", "failed", "errors", "aborted", "retries", "steps", "asked", "asks/ep"),
]
"""The table's columns (`COLUMNS`, reordered): the group, then the two rates the
screen is for, then the counts. In `deskloop report`'s order success and credit came
after eleven columns and were off a 100-column terminal."""

WIDE = 140
"""Below this many columns the table leaves out `NARROW_DROPS` and cuts long agent
names, so that the group, success and credit fit on a 100×30 or 80×24 terminal."""

NARROW_DROPS = frozenset({"aborted", "retries", "asks/ep"})
"""The counts a narrow table leaves out: rarely other than 0, or shown by `asked`."""

AGENT_WIDTH = 18
"""A narrow table's cut for an agent's name (the full name is in the chart)."""


def table_columns(width: int) -> list[str]:
    """The Results table's columns on a terminal `width` cells wide."""
    return [c for c in ORDER if width >= WIDE or c not in NARROW_DROPS]


def table_cells(row: GroupStats, columns: list[str]) -> list[str]:
    """`row`'s figures in `columns`' order; a long agent name cut on a narrow table."""
    by_name = dict(zip(COLUMNS, cells(row), strict=True))
    if len(columns) < len(ORDER) and len(by_name["agent"]) > AGENT_WIDTH:
        by_name["agent"] = by_name["agent"][: AGENT_WIDTH - 1] + "…"
    return [by_name[c] for c in columns]


def bar(fraction: float | None, width: int, color: str) -> Text:
    """A horizontal bar of eighth blocks, `fraction` of `width` cells long (none for
    a group without a finished episode, which has no rate)."""
    eighths = round(max(0.0, min(1.0, fraction or 0.0)) * width * 8)
    full, part = divmod(eighths, 8)
    text = "█" * full + (" ▏▎▍▌▋▊▉"[part] if part else "")
    return Text(text.ljust(width), color)


def chart(rows: list[GroupStats], width: int = BAR_WIDTH) -> Text:
    """Success rate (green) and mean partial credit (blue) per group, as bars."""
    out = Text()
    label_width = max((len(r.label) for r in rows), default=0)
    for row in rows:
        out.append(f"{row.label.ljust(label_width)}  success ")
        out.append(bar(row.success_rate, width, "green"))
        out.append(f" {pct(row.success_rate):>4}\n")
        out.append(" " * label_width + "  credit  ")
        out.append(bar(row.mean_score, width, "blue"))
        out.append(f" {num(row.mean_score):>4}\n")
    return out


class ResultsScreen(LabScreen):
    TITLE = "Results"
    HELP = """\
Every ended episode in the database, grouped by app, level, kind (interactive
tasks have phases; standard ones do not), agent and user; then per agent, then
all. The figures and their policy are `deskloop report`'s.

- **episodes**: a batch slot counts once (its finished try, else its last);
  **retries** are the slot's other tries and count nowhere else.
- **passed** / **failed**: finished and scored R=1 / R=0. An agent's FAIL,
  running out of budget or an error of its own (kind agent or action) is a
  failure.
- **errors** (infrastructure: desktop, VNC, endpoint, time limit; and other
  errors that are not the agent's) and **aborted** episodes are counted apart
  and left out of every rate.
- **success**: passed / (passed + failed), the attempts; **credit**: mean
  partial credit; **steps**; **asked**: share of attempts with a question;
  **asks/ep**. All over the attempts; "-" where there is none.
- The table puts success and credit right after the group; below 140
  columns it leaves out aborted, retries and asks/ep and cuts long agent
  names (the chart and `deskloop report` have them all).
- The chart draws success (green) and credit (blue) per group.
- Under it, **reliability**: every rate over the attempts (n) with its 95%
  Wilson interval: success, success at partial credit ≥ 0.5, 0.75 and 1,
  the ask rate; then the pass rate of each check across episodes, of each
  phase with checks (of the attempts that reached it), pass@k and pass^k
  over repeats of a task, and every two agents' paired difference on the
  tasks both attempted. The same tables as `deskloop report`.
- **g** reload.
"""
    DEFAULT_CSS = """
    #reliability-table { height: auto; margin-top: 1; }
    #results-checkpoints { margin-top: 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("g", "reload", "Reload")]

    def __init__(self) -> None:
        super().__init__()
        self.loaded = False
        """Whether a read of the store has been shown (reads run in a thread)."""
        self.columns: list[str] = list(ORDER)
        """The table's columns now (`table_columns` of the terminal's width)."""
        self.summary: Summary | None = None
        """The summary shown, kept to fill the table again at another width."""

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical():
            yield DataTable(id="results-table", cursor_type="row", zebra_stripes=True)
            with VerticalScroll(id="results-chart-box"):
                yield Static("", id="results-chart")
                yield DataTable(id="reliability-table", cursor_type="row", zebra_stripes=True)
                yield Static("", id="results-checkpoints")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        table = self.query_one("#results-table", DataTable)
        self.columns = table_columns(self.app.size.width)
        table.add_columns(*self.columns)
        self.query_one("#reliability-table", DataTable).add_columns(*RELIABILITY_COLUMNS)
        self.reload()
        table.focus()

    def on_screen_resume(self) -> None:
        self.reload()

    def reload(self) -> None:
        """Summarize the store again, in a thread: a large database takes seconds to
        read and summarize, and the UI's loop must keep drawing meanwhile."""
        self._read()

    @work(thread=True, exclusive=True, group="results", exit_on_error=False,
          description="summarizing the episodes")  # fmt: skip
    def _read(self) -> None:
        summary = summarize(self.lab.store)
        self.app.call_from_thread(self._show, summary)

    def on_resize(self) -> None:
        columns = table_columns(self.app.size.width)
        if columns != self.columns:
            self.columns = columns
            table = self.query_one("#results-table", DataTable)
            table.clear(columns=True)
            table.add_columns(*columns)
            if self.summary is not None:
                self._fill(self.summary)

    def _show(self, summary: Summary) -> None:
        self.loaded = True
        self.summary = summary
        self._fill(summary)
        self.show_reliability(summary)
        chart_box = self.query_one("#results-chart-box")
        chart_box.border_title = "success (green) and partial credit (blue)"
        self.query_one("#results-chart", Static).update(
            chart(summary.groups)
            if summary.groups
            else "No ended episodes yet: run one from Tasks."
        )

    def _fill(self, summary: Summary) -> None:
        table = self.query_one("#results-table", DataTable)
        table.clear()
        for row in [*summary.groups, *summary.totals]:
            style = "bold" if row.app == ALL else ""
            table.add_row(*(Text(cell, style) for cell in table_cells(row, self.columns)))

    def show_reliability(self, summary: Summary) -> None:
        """The checkpoint and reliability figures, from the same summary."""
        table = self.query_one("#reliability-table", DataTable)
        table.clear()
        for row in [*summary.groups, *summary.totals]:
            style = "bold" if row.app == ALL else ""
            table.add_row(*(Text(cell, style) for cell in reliability_cells(row)))
        sections = reliability_sections(summary, groups=False)
        self.query_one("#results-checkpoints", Static).update(
            Text("\n".join([*sections, "", RELIABILITY_NOTE])) if summary.totals else ""
        )

    def action_reload(self) -> None:
        self.reload()
