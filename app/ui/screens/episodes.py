"""Episodes: the recorded episodes, filtered; enter opens one for replay."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import DataTable, Header, Input, Static

from app.store import EpisodeRecord
from app.ui.filters import EpisodeFilter, parse_filter
from app.ui.screens.base import LabFooter, LabScreen


def score_text(episode: EpisodeRecord) -> Text:
    if episode.score is None:
        return Text("—", "dim")
    return Text(f"{episode.score:.2f}", "green" if episode.passed else "red")


def task_text(episode: EpisodeRecord) -> Text:
    """The task id, then the researcher's tags (`#pilot`), dim."""
    text = Text(episode.task_id)
    if episode.tags:
        text.append(" " + " ".join(f"#{t}" for t in episode.tags), "dim")
    return text


class EpisodesScreen(LabScreen):
    TITLE = "Episodes"
    HELP = """\
Every episode in the database, newest first.

- **/** filter. Words that must all hold: `task:ID` (part of the id),
  `agent:NAME` (part of the agent's name, e.g. `agent:openai`),
  `user:person` or `user:simulated`, `status:finished|error|running`,
  `passed:yes|no`, `tag:WORD` (one of its tags), `note:WORD` (in its note),
  `score>=0.5` (also `>`, `<=`, `<`, `=`); a bare word
  matches the task id. **enter** applies it and the cursor stays in the box
  (what you type goes on into the filter); **esc** goes back to the table.
- **enter** on a row opens the episode's replay.
- **n** the highlighted episode's note and tags (tags show after the task
  id as `#tag`); the same as `deskloop episodes note|tag`.
- **x** export: the episodes shown (as filtered) as JSONL or a Hugging Face
  dataset, or the highlighted one as an MP4, into `exports/` beside the
  database; the same as `deskloop episodes export`.
- **g** reload from the database.
"""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "filter", "Filter", key_display="/"),
        Binding("g", "reload", "Reload"),
        Binding("n", "notes", "Note", show=False),
        Binding("x", "export", "Export", show=False),
        Binding("escape", "table", "Table", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.shown: list[EpisodeRecord] = []
        self.loaded = False
        """Whether a read of the store has been shown (reads run in a thread)."""

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical():
            yield Input(
                placeholder="filter: task:flip user:person status:finished score>=0.5",
                id="episode-filter",
            )
            yield DataTable(id="episode-table", cursor_type="row", zebra_stripes=True)
            yield Static("", id="episode-count")
        yield LabFooter()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        # Score and start time early: they stay in view at 100 columns, where the
        # columns after them scroll.
        table.add_columns(
            "id", "started", "task", "score", "status", "end", "agent", "user", "level", "steps"
        )
        self.reload()
        table.focus()

    def on_screen_resume(self) -> None:
        self.reload()

    def reload(self) -> None:
        """Read the episodes again (in a thread: the store is never read on the UI's
        loop) and show those the filter keeps."""
        text = self.query_one("#episode-filter", Input).value
        try:
            keep = parse_filter(text)
        except ValueError as exc:
            # Said where the count was: a count of the last filter would be stale.
            self.query_one("#episode-count", Static).update(
                Text(f"not a filter: {exc} · the table shows the last filter's episodes", "red")
            )
            return
        self._read(text, keep)

    @work(thread=True, exclusive=True, group="episodes", exit_on_error=False,
          description="reading the episodes")  # fmt: skip
    def _read(self, text: str, keep: EpisodeFilter) -> None:
        episodes = self.lab.store.list_episodes(limit=None)
        self.app.call_from_thread(self._show, text, episodes, keep)

    def _show(self, text: str, episodes: list[EpisodeRecord], keep: EpisodeFilter) -> None:
        self.shown = [e for e in episodes if keep(e)]
        self.loaded = True
        table = self.query_one(DataTable)
        table.clear()
        for e in self.shown:
            kind = "interactive" if e.interactive else "standard"
            table.add_row(
                str(e.id),
                e.started_at.astimezone().strftime("%m-%d %H:%M"),
                task_text(e),
                score_text(e),
                Text(e.status, "red" if e.status == "error" else ""),
                e.end_reason or "",
                e.agent,
                e.user_mode,
                f"{e.level} {kind[:5]}",
                str(e.steps),
                key=str(e.id),
            )
        self.query_one("#episode-count", Static).update(
            f"{len(self.shown)} of {len(episodes)} episodes"
            + (f" match “{text}”" if text.strip() else "")
            + " · enter: replay"
        )

    @on(Input.Submitted, "#episode-filter")
    def apply_filter(self) -> None:
        # The cursor stays in the box: letters typed next are the filter's, never
        # the screen's keys (`r` would jump to Results, `q` quit).
        self.reload()

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

    def action_notes(self) -> None:
        from app.ui.screens.notes import edit_notes

        table = self.query_one(DataTable)
        if not self.shown or not 0 <= table.cursor_row < len(self.shown):
            self.notify("No episode to annotate.", severity="warning")
            return
        edit_notes(self, self.shown[table.cursor_row], lambda _stored: self.reload())

    def action_export(self) -> None:
        from app.ui.screens.exports import export_from

        row = self.query_one(DataTable).cursor_row
        highlighted = self.shown[row] if 0 <= row < len(self.shown) else None
        export_from(self, self.shown, highlighted)
