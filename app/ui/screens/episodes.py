"""Episodes: the recorded episodes, filtered; enter opens one for replay."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import DataTable, Footer, Header, Input, Static

from app.store import EpisodeRecord
from app.ui.filters import parse_filter
from app.ui.screens.base import LabScreen


def score_text(episode: EpisodeRecord) -> Text:
    if episode.score is None:
        return Text("—", "dim")
    return Text(f"{episode.score:.2f}", "green" if episode.passed else "red")


class EpisodesScreen(LabScreen):
    TITLE = "Episodes"
    HELP = """\
Every episode in the database, newest first.

- **/** filter. Words that must all hold: `task:ID` (part of the id),
  `agent:reference`, `user:person` or `user:simulated`,
  `status:finished|error|running`, `passed:yes|no`, `score>=0.5`
  (also `>`, `<=`, `<`, `=`); a bare word matches the task id.
  **enter** applies it, **esc** goes back to the table.
- **enter** on a row opens the episode's replay.
- **g** reload from the database.
"""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "filter", "Filter", key_display="/"),
        Binding("g", "reload", "Reload"),
        Binding("escape", "table", "Table", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.shown: list[EpisodeRecord] = []

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical():
            yield Input(
                placeholder="filter: task:flip user:person status:finished score>=0.5",
                id="episode-filter",
            )
            yield DataTable(id="episode-table", cursor_type="row", zebra_stripes=True)
            yield Static("", id="episode-count")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns(
            "id", "task", "level", "agent", "user", "status", "end", "steps", "score", "started"
        )
        self.reload()
        table.focus()

    def on_screen_resume(self) -> None:
        self.reload()

    def reload(self) -> None:
        text = self.query_one("#episode-filter", Input).value
        try:
            keep = parse_filter(text)
        except ValueError as exc:
            self.notify(str(exc), severity="error")
            return
        episodes = self.lab.store.list_episodes(limit=None)
        self.shown = [e for e in episodes if keep(e)]
        table = self.query_one(DataTable)
        table.clear()
        for e in self.shown:
            kind = "interactive" if e.interactive else "standard"
            table.add_row(
                str(e.id),
                e.task_id,
                f"{e.level} {kind[:5]}",
                e.agent,
                e.user_mode,
                Text(e.status, "red" if e.status == "error" else ""),
                e.end_reason or "",
                str(e.steps),
                score_text(e),
                e.started_at.astimezone().strftime("%Y-%m-%d %H:%M"),
                key=str(e.id),
            )
        self.query_one("#episode-count", Static).update(
            f"{len(self.shown)} of {len(episodes)} episodes"
            + (f" match “{text}”" if text.strip() else "")
            + " · enter: replay"
        )

    @on(Input.Submitted, "#episode-filter")
    def apply_filter(self) -> None:
        self.reload()
        self.query_one(DataTable).focus()

    @on(DataTable.RowSelected, "#episode-table")
    def open_episode(self, event: DataTable.RowSelected) -> None:
        from app.ui.screens.replay import ReplayScreen

        assert event.row_key.value is not None
        self.app.push_screen(ReplayScreen(int(event.row_key.value)))

    def action_filter(self) -> None:
        self.query_one("#episode-filter", Input).focus()

    def action_table(self) -> None:
        self.query_one(DataTable).focus()

    def action_reload(self) -> None:
        self.reload()
