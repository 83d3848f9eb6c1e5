"""Notes and tags from the TUI: set with `n` in Episodes and Replay, shown there,
stored (the same as `deskloop episodes note|tag`), filterable with `tag:`/`note:`."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable, Input, Static

from app.store import Store
from app.ui.app import DeskLoopApp
from app.ui.modals import ErrorScreen
from app.ui.screens.episodes import EpisodesScreen
from app.ui.screens.notes import NotesScreen
from app.ui.screens.replay import ReplayScreen
from tests.ui.helpers import fixture_db, wait_until, write_tasks


async def test_notes_and_tags_set_shown_and_filtered_in_the_tui(tmp_path: Path) -> None:
    db = fixture_db(tmp_path / "db" / "deskloop.db")
    lab = DeskLoopApp(db=db, tasks_dir=write_tasks(tmp_path / "tasks"), start_mode="episodes")
    async with lab.run_test(size=(100, 30)) as pilot:
        screen = lab.screen
        assert isinstance(screen, EpisodesScreen)
        await wait_until(pilot, lambda: screen.loaded, 5, "the episodes")
        table = screen.query_one("#episode-table", DataTable)
        first = screen.shown[0]
        await pilot.press("n")
        await wait_until(pilot, lambda: isinstance(lab.screen, NotesScreen), 5, "the dialog")
        await pilot.press(*"odd cursor", "tab", *"Pilot wave-1", "enter")

        def task_cell() -> str:
            return str(table.get_row_at(0)[2])

        await wait_until(pilot, lambda: "#pilot #wave-1" in task_cell(), 5, "the tags shown")
        with Store(db) as store:
            stored = store.get_episode(first.id)
        assert (stored.note, stored.tags) == ("odd cursor", ("pilot", "wave-1"))

        # The filter keeps the tagged episode only.
        await pilot.press("slash", *"tag:pilot note:cursor", "enter")
        await wait_until(pilot, lambda: table.row_count == 1, 5, "the filter applied")
        assert screen.shown[0].id == first.id

        # Replay shows them and edits them: a tag left out is removed.
        await pilot.press("escape", "enter")
        await wait_until(pilot, lambda: isinstance(lab.screen, ReplayScreen), 5, "replay")
        replay = lab.screen
        assert isinstance(replay, ReplayScreen)
        await wait_until(pilot, lambda: replay.episode is not None, 5, "the episode read")
        head = replay.query_one("#replay-head", Static)
        assert "#pilot #wave-1 · odd cursor" in str(head.render())
        await pilot.press("n")
        await wait_until(pilot, lambda: isinstance(lab.screen, NotesScreen), 5, "the dialog")
        tags = lab.screen.query_one("#notes-tags", Input)
        assert tags.value == "pilot wave-1"
        tags.value = "pilot"
        await pilot.press("enter")
        await wait_until(pilot, lambda: "wave-1" not in str(head.render()), 5, "the head")
        assert "#pilot · odd cursor" in str(head.render())

        # A bad tag is refused through the error dialog, naming it; nothing changes.
        await pilot.press("n")
        await wait_until(pilot, lambda: isinstance(lab.screen, NotesScreen), 5, "the dialog")
        lab.screen.query_one("#notes-tags", Input).value = "pilot bad!"
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(lab.screen, ErrorScreen), 5, "the error")
        assert any("tag 'bad!'" in str(w.render()) for w in lab.screen.query(Static))
    with Store(db) as store:
        assert store.get_episode(first.id).tags == ("pilot",)
