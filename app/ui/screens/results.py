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
        table.add_columns(*COLUMNS)
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

    def _show(self, summary: Summary) -> None:
        self.loaded = True
        table = self.query_one("#results-table", DataTable)
        table.clear()
        for row in [*summary.groups, *summary.totals]:
            style = "bold" if row.app == ALL else ""
            table.add_row(*(Text(cell, style) for cell in cells(row)))
        self.show_reliability(summary)
        chart_box = self.query_one("#results-chart-box")
        chart_box.border_title = "success (green) and partial credit (blue)"
        self.query_one("#results-chart", Static).update(
            chart(summary.groups)
            if summary.groups
            else "No ended episodes yet: run one from Tasks."
        )

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
