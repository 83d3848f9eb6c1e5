"""The researcher's note and tags on an episode, edited from Episodes and Replay (`n`).

The dialog returns what the person typed; the write (app.store.notes, which checks the
tags and names a bad one) runs in a worker thread, never on the UI's loop, and a
refused tag comes back through the app's one error dialog.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from app.store import EpisodeRecord
from app.ui.screens.base import LabScreen


@dataclass(frozen=True)
class NotesEdit:
    note: str
    tags: tuple[str, ...]
    """The whole set of tags wanted, as typed (words separated by spaces or commas)."""


class NotesScreen(ModalScreen[NotesEdit | None]):
    """Two lines: the note and the tags, filled with the episode's; enter in either
    saves both, esc cancels."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, episode: EpisodeRecord) -> None:
        super().__init__()
        self.episode = episode

    def compose(self) -> ComposeResult:
        e = self.episode
        with VerticalScroll(id="dialog"):
            yield Static(Text(f"Note and tags of episode {e.id}", "bold"), id="dialog-title")
            yield Static(f"{e.task_id} · agent {e.agent} · user {e.user_mode}")
            yield Static("note")
            yield Input(e.note, placeholder="what you noticed", id="notes-note")
            yield Static("tags (words; filter them with tag:WORD)")
            yield Input(" ".join(e.tags), placeholder="pilot wave-1", id="notes-tags")
            yield Static("[dim]enter saves · tab next field · esc cancels[/dim]")

    def on_mount(self) -> None:
        self.query_one("#notes-note", Input).focus()

    @on(Input.Submitted)
    def save(self) -> None:
        tags = self.query_one("#notes-tags", Input).value.replace(",", " ").split()
        self.dismiss(NotesEdit(self.query_one("#notes-note", Input).value, tuple(tags)))

    def action_cancel(self) -> None:
        self.dismiss(None)


def edit_notes(
    screen: LabScreen, episode: EpisodeRecord, saved: Callable[[EpisodeRecord], None]
) -> None:
    """Open the dialog for `episode`; once saved, write it off the UI's loop and call
    `saved` (on the UI's loop) with the episode as stored."""

    def done(edit: NotesEdit | None) -> None:
        if edit is not None:
            _write(screen, episode, edit, saved)

    screen.app.push_screen(NotesScreen(episode), done)


@work(thread=True, group="notes", exit_on_error=False, description="saving the note")
def _write(
    screen: LabScreen,
    episode: EpisodeRecord,
    edit: NotesEdit,
    saved: Callable[[EpisodeRecord], None],
) -> None:
    wanted = set(edit.tags)
    stored = screen.lab.store.annotate_episode(
        episode.id,
        note=edit.note,
        add_tags=sorted(wanted),
        # Lowercased as the store keeps them: "Pilot" typed again is not a removal.
        remove_tags=[t for t in episode.tags if t not in {w.lower() for w in wanted}],
    )
    screen.app.call_from_thread(saved, stored)
