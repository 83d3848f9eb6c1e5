"""Results: success rate, partial credit and ask rate by app × level × kind."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widgets import DataTable, Footer, Header, Static

from app.metrics.summary import ResultRow, results, total
from app.ui.screens.base import LabScreen

BAR_WIDTH = 30


def bar(fraction: float, width: int, color: str) -> Text:
    """A horizontal bar of eighth blocks, `fraction` of `width` cells long."""
    eighths = round(max(0.0, min(1.0, fraction)) * width * 8)
    full, part = divmod(eighths, 8)
    text = "█" * full + (" ▏▎▍▌▋▊▉"[part] if part else "")
    return Text(text.ljust(width), color)


def chart(rows: list[ResultRow], width: int = BAR_WIDTH) -> Text:
    """Success rate (green) and mean partial credit (blue) per group, as bars."""
    out = Text()
    label_width = max((len(_label(r)) for r in rows), default=0)
    for row in rows:
        label = _label(row).ljust(label_width)
        out.append(f"{label}  success ")
        out.append(bar(row.success_rate, width, "green"))
        out.append(f" {row.success_rate:4.0%}\n")
        out.append(" " * label_width + "  credit  ")
        out.append(bar(row.mean_score, width, "blue"))
        out.append(f" {row.mean_score:4.2f}\n")
    return out


def _label(row: ResultRow) -> str:
    return f"{row.app} {row.level} {row.mode}"


class ResultsScreen(LabScreen):
    TITLE = "Results"
    HELP = """\
Every ended episode in the database, grouped by app, level and kind
(interactive tasks have phases; standard ones do not).

- **success**: share of episodes that passed (all required checks); an episode
  that ended in an error counts as not passed.
- **credit**: mean partial credit from the check weights (0 to 1).
- **asked**: share of episodes in which the agent asked at least once;
  **asks/ep**: questions per episode.
- The chart draws success (green) and credit (blue) per group.
- **g** reload.
"""
    BINDINGS: ClassVar[list[BindingType]] = [Binding("g", "reload", "Reload")]

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical():
            yield DataTable(id="results-table", cursor_type="row", zebra_stripes=True)
            with VerticalScroll(id="results-chart-box"):
                yield Static("", id="results-chart")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns(
            "app", "level", "kind", "episodes", "passed", "success", "credit", "asked", "asks/ep"
        )
        self.reload()
        table.focus()

    def on_screen_resume(self) -> None:
        self.reload()

    def reload(self) -> None:
        rows = results(self.lab.store)
        table = self.query_one(DataTable)
        table.clear()
        everything = total(rows)
        for row in [*rows, *([everything] if everything and len(rows) > 1 else [])]:
            table.add_row(
                Text(row.app, "bold" if row.app == "all" else ""),
                row.level,
                row.mode if row.app != "all" else "",
                str(row.episodes),
                str(row.passed),
                f"{row.success_rate:.0%}",
                f"{row.mean_score:.2f}",
                f"{row.ask_rate:.0%}",
                f"{row.asks / row.episodes:.1f}",
            )
        chart_box = self.query_one("#results-chart-box")
        chart_box.border_title = "success (green) and partial credit (blue)"
        self.query_one("#results-chart", Static).update(
            chart(rows) if rows else "No ended episodes yet: run one from Tasks."
        )

    def action_reload(self) -> None:
        self.reload()
