"""Pilot tests for every screen: keys, messages (message_hook) and what is shown."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.message import Message
from textual.widgets import DataTable, Input, Static, Tree
from textual.widgets.tree import TreeNode

from app.ui.app import DeskLoopApp
from app.ui.chat_box import ChatBox
from app.ui.halfblock import HalfBlockView
from app.ui.modals import ErrorScreen, HelpScreen
from app.ui.screens.author import AuthorScreen
from app.ui.screens.base import LabScreen
from app.ui.screens.desktops import DesktopsScreen
from app.ui.screens.episodes import EpisodesScreen
from app.ui.screens.live import LiveScreen
from app.ui.screens.replay import ReplayScreen
from app.ui.screens.results import ResultsScreen
from app.ui.screens.tasks import StartEpisodeScreen, TasksScreen
from tests.ui.helpers import STANDARD, fixture_db, screen_text, wait_until, write_tasks


@pytest.fixture
def lab(tmp_path: Path) -> DeskLoopApp:
    return DeskLoopApp(
        db=fixture_db(tmp_path / "db" / "deskloop.db"), tasks_dir=write_tasks(tmp_path / "tasks")
    )


def unique(seen: list[Message]) -> list[Message]:
    """Each message once (a bubbling message reaches the hook once per node)."""
    return list({id(m): m for m in seen}.values())


async def test_keys_reach_every_screen_and_help_explains_it(lab: DeskLoopApp) -> None:
    async with lab.run_test(size=(100, 30)) as pilot:
        screens: list[tuple[str, type[LabScreen]]] = [
            ("d", DesktopsScreen),
            ("t", TasksScreen),
            ("l", LiveScreen),
            ("e", EpisodesScreen),
            ("r", ResultsScreen),
            ("a", AuthorScreen),
        ]
        for key, screen_type in screens:

            def showing(t: type[LabScreen] = screen_type) -> bool:
                return isinstance(lab.screen, t)

            await pilot.press(key)
            await wait_until(pilot, showing, 5, key)
            await pilot.press("question_mark")
            await wait_until(pilot, lambda: isinstance(lab.screen, HelpScreen), 5, "help")
            help_screen = lab.screen
            assert isinstance(help_screen, HelpScreen)
            assert help_screen.text.startswith(screen_type.HELP) and len(screen_type.HELP) > 100
            assert "**e** Episodes" in help_screen.text
            await pilot.press("escape")
            await wait_until(pilot, showing, 5, "back")
        assert "backend: local" in lab.sub_title and "deskloop.db" in lab.sub_title


async def test_tasks_browse_filter_validate_and_refuse_a_bad_agent(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "tasks", broken=True)
    app = DeskLoopApp(db=tmp_path / "db" / "d.db", tasks_dir=tasks)
    seen: list[Message] = []
    async with app.run_test(size=(160, 50), message_hook=seen.append) as pilot:
        screen = app.screen
        assert isinstance(screen, TasksScreen)
        await wait_until(pilot, lambda: screen.selected is not None, 5, "first task selected")
        assert screen.selected is not None and screen.selected.id == "alpha-touch"
        status = screen.query_one("#task-filter", Static)
        assert "1 invalid" in str(status.render())

        tree: Tree[Any] = screen.query_one(Tree)

        def leaves() -> list[str]:
            return [n.data.id for n in _walk(tree.root) if n.data is not None]

        assert len(leaves()) == 2
        await pilot.press("k")  # interactive only
        assert leaves() == ["beta-steps"]
        await pilot.press("k")  # standard only
        assert leaves() == ["alpha-touch"]
        await pilot.press("k")

        await pilot.press("down", "down", "down")
        await wait_until(
            pilot,
            lambda: screen.selected is not None and screen.selected.id == "beta-steps",
            5,
            "the interactive task",
        )
        markdown = screen.query_one("#task-md")
        source = markdown._markdown  # type: ignore[attr-defined]
        assert "after 3 GUI actions" in source and "when the agent says DONE" in source
        assert "file_exists: path=~/c.txt (weight 2)" in source

        await pilot.press("v")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), 5, "the report")
        report = app.screen.text  # type: ignore[attr-defined]
        assert "1 task file(s) failed validation" in report and "gamma-broken" in report
        assert "level" in report  # the field at fault is named
        await pilot.press("escape")

        await pilot.press("s")
        await wait_until(pilot, lambda: isinstance(app.screen, StartEpisodeScreen), 5, "dialog")
        agent = app.screen.query_one("#agent", Input)
        agent.value = "no-such-agent"
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ErrorScreen), 5, "error dialog")
        assert "unknown agent 'no-such-agent'" in app.screen.text  # type: ignore[attr-defined]
        assert app.session is None and not app.pool.entries  # no desktop was started
        requested = [m for m in unique(seen) if isinstance(m, TasksScreen.EpisodeRequested)]
        assert [(m.task.id, m.agent, m.user) for m in requested] == [
            ("beta-steps", "no-such-agent", "person")
        ]
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, TasksScreen), 5, "dialog closed")


def _walk(node: TreeNode[Any]) -> Iterator[TreeNode[Any]]:
    yield node
    for child in node.children:
        yield from _walk(child)


async def test_episodes_filter_and_replay(lab: DeskLoopApp) -> None:
    seen: list[Message] = []
    async with lab.run_test(size=(160, 50), message_hook=seen.append) as pilot:
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(lab.screen, EpisodesScreen), 5, "episodes")
        screen = lab.screen
        assert isinstance(screen, EpisodesScreen)
        table = screen.query_one("#episode-table", DataTable)
        await wait_until(pilot, lambda: table.row_count == 4, 5, "the episodes")
        await pilot.press("slash")
        await pilot.press(*"user:person")
        await pilot.press("enter")
        await wait_until(pilot, lambda: table.row_count == 1, 5, "the filtered episodes")
        assert [e.task_id for e in screen.shown] == ["gimp-badge-interactive"]
        assert not table.has_focus  # the cursor stays in the filter box
        submitted = [m for m in unique(seen) if isinstance(m, Input.Submitted)]
        assert submitted[-1].value == "user:person"

        await pilot.press("ctrl+u", *"score>x", "enter")  # refused, named
        assert [e.task_id for e in screen.shown] == ["gimp-badge-interactive"]

        await pilot.press("escape", "enter")
        await wait_until(pilot, lambda: isinstance(lab.screen, ReplayScreen), 5, "replay")
        replay = lab.screen
        assert isinstance(replay, ReplayScreen)
        await wait_until(pilot, lambda: bool(replay.rows), 5, "the episode read")
        kinds = [key[0] for key, _ in replay.rows]
        # instruction, step 0, question + answer (arrived after step 0), step 1, final
        assert kinds == ["m", "s", "m", "m", "s", "f"]
        caption = replay.query_one("#replay-caption", Static)
        await pilot.press("right")
        await wait_until(pilot, lambda: "click at (40, 20)" in str(caption.render()), 5, "step 0")
        await wait_until(pilot, lambda: replay.query_one(HalfBlockView).has_frame, 5, "the frame")
        await pilot.press("right")  # skips the messages to the next step
        await wait_until(pilot, lambda: "types: 'hello'" in str(caption.render()), 5, "step 1")
        await pilot.press("up")  # the person's answer, in place
        await wait_until(
            pilot,
            lambda: "person answer (after step 0): 200 pixels." in str(caption.render()),
            5,
            "the answer",
        )
        await pilot.press("end")
        await wait_until(pilot, lambda: "final state" in str(caption.render()), 5, "final")
        checks = replay.query_one("#replay-checks", DataTable)
        assert checks.row_count == 1
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(lab.screen, EpisodesScreen), 5, "back")


async def test_results_table_and_chart(lab: DeskLoopApp) -> None:
    async with lab.run_test(size=(100, 30)) as pilot:
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(lab.screen, ResultsScreen), 5, "results")
        screen = lab.screen
        assert isinstance(screen, ResultsScreen)
        await wait_until(pilot, lambda: screen.loaded, 5, "the results read")
        table = lab.screen.query_one(DataTable)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        assert [r[:5] for r in rows] == [
            ["blender", "L1", "standard", "reference", "simulated"],
            ["gimp", "L1", "standard", "reference", "simulated"],
            ["gimp", "L2", "interactive", "reference", "person"],
            ["all", "all", "all", "reference", "all"],
            ["all", "all", "all", "all", "all"],
        ]
        # At 100 columns: success and credit after the group; aborted, retries and
        # asks/ep left out.
        header = [str(c.label) for c in table.ordered_columns]
        assert header[5:] == [
            *("success", "credit", "episodes", "passed", "failed", "errors", "steps", "asked")
        ]
        # The blender episode ended in an error: counted apart, in no rate.
        assert rows[0][5:] == ["-", "-", "1", "0", "0", "1", "-", "-"]
        assert rows[1][5:11] == ["50%", "0.70", "2", "1", "1", "0"]
        assert rows[2][12:] == ["100%"]
        assert rows[4][5:11] == ["67%", "0.80", "4", "2", "1", "1"]
        chart = str(lab.screen.query_one("#results-chart", Static).render())
        assert "gimp L2 interactive · reference · person" in chart and "100%" in chart


async def test_results_are_summarized_off_the_ui_thread(
    lab: DeskLoopApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.metrics.summary import summarize

    release = threading.Event()
    threads: list[str] = []

    def slow(store: Any) -> Any:
        # The real summary of the real store, held back until the UI has answered.
        threads.append(threading.current_thread().name)
        release.wait(30)
        return summarize(store)

    monkeypatch.setattr("app.ui.screens.results.summarize", slow)
    try:
        async with lab.run_test(size=(100, 30)) as pilot:
            await pilot.press("r")
            await wait_until(pilot, lambda: bool(threads), 5, "the summary to begin")
            screen = lab.screen
            assert isinstance(screen, ResultsScreen) and not screen.loaded
            await pilot.press("question_mark")  # the UI answers while the read waits
            await wait_until(pilot, lambda: isinstance(lab.screen, HelpScreen), 5, "help")
            await pilot.press("escape")
            release.set()
            await wait_until(pilot, lambda: screen.loaded, 5, "the summary shown")
            assert screen.query_one("#results-table", DataTable).row_count == 5
            assert threads[0] != threading.main_thread().name
    finally:
        release.set()


async def test_live_screen_without_an_episode(lab: DeskLoopApp) -> None:
    async with lab.run_test(size=(100, 30)) as pilot:
        await pilot.press("l")
        await wait_until(pilot, lambda: isinstance(lab.screen, LiveScreen), 5, "live")
        screen = lab.screen
        assert "No episode is running" in screen_text(lab)
        await pilot.press("f2", "f3", "f4")  # nothing to pause, accept or abort: no crash
        await pilot.press("c", *"hello", "enter")
        # Not sent anywhere, and not kept for the next episode.
        assert screen.query_one("#chat-input", ChatBox).value == ""
        notes = [n.message for n in lab._notifications]
        assert any("nothing was sent" in note for note in notes), notes


@pytest.mark.desktop
async def test_desktops_start_view_snapshot_and_stop(lab: DeskLoopApp) -> None:
    seen: list[Message] = []
    async with lab.run_test(size=(160, 50), message_hook=seen.append) as pilot:
        await pilot.press("d")
        await wait_until(pilot, lambda: isinstance(lab.screen, DesktopsScreen), 5, "desktops")
        screen = lab.screen
        assert isinstance(screen, DesktopsScreen)
        await pilot.press("n")
        assert len(lab.pool.entries) == 1
        (name, entry) = next(iter(lab.pool.entries.items()))
        await wait_until(pilot, lambda: entry.info().state == "running", 60, "the desktop")
        await wait_until(pilot, lambda: entry.busy is None, 10, "the start to finish")
        info = entry.info()
        assert info.vnc is not None
        table = screen.query_one(DataTable)
        await wait_until(
            pilot,
            lambda: f"127.0.0.1:{info.vnc.port}" in [str(c) for c in table.get_row_at(0)],  # type: ignore[union-attr]
            5,
            "the VNC address in the table",
        )
        detail = str(screen.query_one("#desktop-detail", Static).render())
        assert info.vnc.password in detail

        # The local backend has no snapshots: a documented limitation, said as such,
        # not a "Desktop error" dialog.
        await pilot.press("p")
        await pilot.press("b")
        await pilot.pause(0.3)
        assert isinstance(lab.screen, DesktopsScreen)
        notes = [n.message for n in lab._notifications]
        assert sum("local backend has no snapshots" in note for note in notes) == 2, notes

        await pilot.press("v")
        await wait_until(pilot, lambda: isinstance(lab.screen, LiveScreen), 5, "live")
        view = lab.screen.query_one(HalfBlockView)
        await wait_until(pilot, lambda: view.has_frame, 20, "a live frame")
        await wait_until(pilot, lambda: f"watching desktop {name}" in screen_text(lab), 5, "name")

        await pilot.press("d", "x")
        await wait_until(pilot, lambda: entry.info().state == "closed", 30, "the stop")
        changed = [m for m in unique(seen) if isinstance(m, DesktopsScreen.Changed)]
        assert len(changed) >= 2  # start and stop each end with a message


@pytest.mark.desktop
async def test_live_shows_why_an_episode_failed(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "tasks")
    (tasks / "gimp" / "delta-broken.yaml").write_text(
        STANDARD.replace("alpha-touch", "delta-broken").replace(
            "launch: [xterm]", "launch: [no-such-program-deskloop]"
        )
    )
    app = DeskLoopApp(db=tmp_path / "db" / "d.db", tasks_dir=tasks)
    async with app.run_test(size=(160, 50)) as pilot:
        task = next(t for t in app.tasks if t.id == "delta-broken")
        session = app.start_episode(task, "null", "simulated")
        await wait_until(pilot, lambda: session.ended, 60, "the failed episode's end")
        assert session.result is not None and session.result.status == "error"
        assert "no-such-program-deskloop" in (session.result.error or "")
        await wait_until(
            pilot, lambda: "no-such-program-deskloop" in screen_text(app), 5, "the reason shown"
        )
        entry = next(iter(app.pool.entries.values()))
        await wait_until(pilot, lambda: entry.info().state == "closed", 30, "desktop closed")
