"""What a small terminal must still show: the start dialog's Start button
at 80×24 and 100×30, and the Results table's success and credit at 100 columns. No
desktop: the screens' layout is under test."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.geometry import Region
from textual.widgets import Button, DataTable, Input

from app.metrics.summary import num, pct
from app.ui.app import DeskLoopApp
from app.ui.screens.tasks import Choice, StartEpisodeScreen, TasksScreen
from tests.ui.helpers import fixture_db, screen_text, wait_until, write_tasks


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
        # Tab goes through the fields, then to the buttons.
        chain = [w.id for w in dialog.focus_chain if w.id]
        assert chain[-3:] == ["user-base-url", "start", "cancel"], chain
        # The fields still scroll to the last one, and it is not hidden under the buttons.
        last = dialog.query_one("#user-base-url", Input)
        last.focus()
        await wait_until(
            pilot,
            lambda: screen.contains_region(last.region),
            5,
            "the last field scrolled into view",
        )
        assert not last.region.overlaps(start.region)
        assert screen.contains_region(start.region)
        # Enter in the agent field still starts (the reference agent, a person user).
        dialog.query_one("#agent", Input).focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: bool(chosen), 5, "the dialog's choice")
        assert chosen[0] is not None and chosen[0][:2] == ("reference", "person")


@pytest.mark.parametrize("size", [(100, 30), (80, 24)])
async def test_results_show_success_and_credit_on_a_small_terminal(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    from app.metrics.summary import summarize
    from app.store import Store
    from app.ui.screens.results import ResultsScreen

    db = fixture_db(tmp_path / "db" / "deskloop.db")
    with Store(db) as store:
        totals = summarize(store).totals[-1]
    app = DeskLoopApp(db=db, tasks_dir=write_tasks(tmp_path / "tasks"), start_mode="results")
    async with app.run_test(size=size) as pilot:
        screen = app.screen
        assert isinstance(screen, ResultsScreen)
        await wait_until(pilot, lambda: screen.loaded, 5, "the results")
        await pilot.pause()
        table = screen.query_one("#results-table", DataTable)
        rows = screen_text(app).splitlines()[table.region.y : table.region.bottom]
        header, last = rows[0], rows[table.row_count]  # the header, then "all" last
        # What the table is for, without scrolling sideways: the group, its success
        # rate and its mean partial credit.
        for column in ("app", "agent", "user", "success", "credit"):
            assert f" {column}" in f" {header}", (column, header)
        assert last.split()[:1] == ["all"], last
        success, credit = pct(totals.success_rate), num(totals.mean_score)
        at = header.index("success")
        assert last[at : at + len(success) + 2].strip() == success, (header, last)
        at = header.index("credit")
        assert last[at : at + len(credit) + 2].strip() == credit, (header, last)


@pytest.mark.parametrize("size", [(80, 24), (100, 30)])
async def test_the_create_vm_dialogs_buttons_are_on_screen(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    # The same layout as the start dialog's (Desktops → c): Create was below an
    # 80×24 screen's edge.
    from app.ui.screens.vm_create import CreateVmScreen

    app = DeskLoopApp(db=tmp_path / "db" / "d.db", tasks_dir=write_tasks(tmp_path / "tasks"))
    async with app.run_test(size=size) as pilot:
        app.push_screen(CreateVmScreen([("gimp", 4096)], lambda name: None, "vm1"))
        await wait_until(pilot, lambda: isinstance(app.screen, CreateVmScreen), 5, "dialog")
        await pilot.pause()
        screen = Region(0, 0, *size)
        for name in ("#create", "#cancel"):
            button = app.screen.query_one(name, Button)
            assert screen.contains_region(button.region), (name, button.region, size)
        chain = [w.id for w in app.screen.focus_chain if w.id]
        assert chain[-3:] == ["vm-start", "create", "cancel"], chain
