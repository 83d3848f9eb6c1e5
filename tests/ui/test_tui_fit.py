"""What a small terminal must still show (issue 26): the start dialog's Start button
at 80×24 and 100×30, and the Results table's success and credit at 100 columns. No
desktop: the screens' layout is under test."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.geometry import Region
from textual.widgets import Button, Input

from app.ui.app import DeskLoopApp
from app.ui.screens.tasks import Choice, StartEpisodeScreen, TasksScreen
from tests.ui.helpers import wait_until, write_tasks


@pytest.mark.parametrize("size", [(80, 24), (100, 30)])
async def test_the_start_button_is_on_screen_and_enter_still_starts(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    app = DeskLoopApp(db=tmp_path / "db" / "d.db", tasks_dir=write_tasks(tmp_path / "tasks"))
    chosen: list[Choice | None] = []
    async with app.run_test(size=size) as pilot:
        tasks = app.screen
        assert isinstance(tasks, TasksScreen)
        await wait_until(pilot, lambda: tasks.selected is not None, 5, "a selected task")
        assert tasks.selected is not None
        app.push_screen(StartEpisodeScreen(tasks.selected), chosen.append)
        await wait_until(pilot, lambda: isinstance(app.screen, StartEpisodeScreen), 5, "dialog")
        await pilot.pause()
        dialog = app.screen
        start = dialog.query_one("#start", Button)
        cancel = dialog.query_one("#cancel", Button)
        screen = Region(0, 0, *size)
        # Shown whole, without scrolling first: the region the button is drawn in.
        for button in (start, cancel):
            assert button.region.area > 0 and screen.contains_region(button.region), (
                button.id,
                button.region,
                size,
            )
            assert dialog.query_one("#dialog").region.contains_region(button.region)
        # The fields still scroll to the last one, and it is not hidden under the buttons.
        last = dialog.query_one("#user-base-url", Input)
        last.focus()
        await pilot.pause()
        assert screen.contains_region(last.region) and not last.region.overlaps(start.region)
        assert screen.contains_region(start.region)
        # Enter in the agent field still starts (the reference agent, a person user).
        dialog.query_one("#agent", Input).focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: bool(chosen), 5, "the dialog's choice")
        assert chosen[0] is not None and chosen[0][:2] == ("reference", "person")
