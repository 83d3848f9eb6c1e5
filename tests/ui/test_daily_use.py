"""The TUI as a researcher uses it every day, with Pilot: the Tasks screen and its
filter, the start dialog, the Live screen without a desktop, Episodes, Replay and
quitting while an episode runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Select, Static, Tree

from app.ui.app import DeskLoopApp
from app.ui.screens.tasks import StartEpisodeScreen, TasksScreen
from tests.ui.helpers import fixture_db, wait_until, write_tasks


@pytest.fixture
def lab(tmp_path: Path) -> DeskLoopApp:
    return DeskLoopApp(
        db=fixture_db(tmp_path / "db" / "deskloop.db"), tasks_dir=write_tasks(tmp_path / "tasks")
    )


def markdown_source(screen: TasksScreen) -> str:
    return str(screen.query_one("#task-md")._markdown)  # type: ignore[attr-defined]


async def test_s_after_k_starts_a_task_the_filter_shows(lab: DeskLoopApp) -> None:
    async with lab.run_test(size=(160, 50)) as pilot:
        screen = lab.screen
        assert isinstance(screen, TasksScreen)
        await wait_until(pilot, lambda: screen.selected is not None, 5, "a selected task")
        assert screen.selected is not None and screen.selected.id == "alpha-touch"
        await pilot.press("k", "s")  # interactive only: alpha-touch is hidden now
        await wait_until(pilot, lambda: isinstance(lab.screen, StartEpisodeScreen), 5, "dialog")
        title = lab.screen.query_one("#dialog-title", Static)
        assert "beta-steps" in str(title.render())


REPO = Path(__file__).resolve().parents[2]


async def test_rapid_moves_leave_the_detail_on_the_cursors_task(tmp_path: Path) -> None:
    # The library's own tasks: long details, which take a while to render.
    lab = DeskLoopApp(db=tmp_path / "d.db", tasks_dir=REPO / "tasks")
    async with lab.run_test(size=(160, 50)) as pilot:
        screen = lab.screen
        assert isinstance(screen, TasksScreen)
        await wait_until(pilot, lambda: screen.selected is not None, 5, "a selected task")
        tree: Tree[Any] = screen.query_one(Tree)
        for keys in (["down"] * 6, ["up"] * 2, ["down"] * 9, ["up"] * 5):
            for key in keys:  # as fast as keys repeat: no pause between them
                tree.action_cursor_down() if key == "down" else tree.action_cursor_up()
            await pilot.pause(0.3)
            node = tree.cursor_node
            assert node is not None
            if node.data is None:
                continue  # an app or a level: the pane keeps the last task
            task = node.data

            # What is on screen, not the source the widget was last given: one title,
            # the cursor's task's (before the fix, earlier tasks' blocks stayed).
            def titles() -> list[str]:
                return [str(h.render()) for h in screen.query("#task-md MarkdownH2")]

            shown = [task.title]  # the lambda is awaited within this iteration
            await wait_until(pilot, lambda: titles() == shown, 10, f"{task.id} alone")  # noqa: B023
            assert screen.selected is task


async def test_enter_in_the_start_dialog_after_choosing_the_user_starts(
    lab: DeskLoopApp,
) -> None:
    requested: list[TasksScreen.EpisodeRequested] = []
    async with lab.run_test(
        size=(160, 50),
        message_hook=lambda m: (
            requested.append(m) if isinstance(m, TasksScreen.EpisodeRequested) else None
        ),
    ) as pilot:
        screen = lab.screen
        assert isinstance(screen, TasksScreen)
        await wait_until(pilot, lambda: screen.selected is not None, 5, "a selected task")
        lab.start_episode = lambda *args, **kwargs: None  # type: ignore[assignment,method-assign]
        await pilot.press("s")
        await wait_until(pilot, lambda: isinstance(lab.screen, StartEpisodeScreen), 5, "dialog")
        dialog = lab.screen
        user = dialog.query_one("#user", Select)
        user.focus()
        await pilot.press("enter")  # opens the list
        await wait_until(pilot, lambda: user.expanded, 5, "the list")
        await pilot.press("down", "enter")  # simulated
        await wait_until(pilot, lambda: not user.expanded, 5, "the list to close")
        assert user.value == "simulated"
        await pilot.press("enter")  # starts; it does not open the list again
        await wait_until(pilot, lambda: bool(requested), 5, "the episode's request")
        assert not user.expanded
        assert (requested[0].agent, requested[0].user) == ("reference", "simulated")


def live_session(lab: DeskLoopApp, tmp_path: Path, task_id: str = "alpha-touch") -> Any:
    """An episode session the Live screen shows, fed its runner's events by the test
    (the screen's own logic is under test; no desktop or runner is needed)."""
    from app.ui.services.episode import EpisodeSession
    from tests.still_desktop import StillDesktop

    task = next(t for t in lab.tasks if t.id == task_id)
    session = EpisodeSession(
        task=task,
        agent_spec="reference",
        user_mode="person",
        store=lab.store,
        desktop=StillDesktop(),
        backend="local",
    )
    lab.session = session
    return session


async def show_live_session(
    lab: DeskLoopApp, pilot: Pilot[None], tmp_path: Path, task_id: str = "alpha-touch"
) -> Any:
    """`live_session`, shown on the Live screen once that screen is up."""
    from app.ui.screens.live import LiveScreen

    session = live_session(lab, tmp_path, task_id)
    lab.show_live()
    await wait_until(pilot, lambda: isinstance(lab.screen, LiveScreen), 5, "live")
    return session


async def test_live_step_numbers_timing_columns_and_rewrap(
    lab: DeskLoopApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.core.actions import Ask, Type
    from app.core.conversation import Message as ChatMessage
    from app.episode.events import MessageEvent, StepEvent
    from app.ui.screens.live import LiveScreen
    from tests.ui.helpers import screen_text

    monkeypatch.setattr(LiveScreen, "fps", 0)  # no desktop to draw
    async with lab.run_test(size=(160, 50)) as pilot:
        session = await show_live_session(lab, pilot, tmp_path)
        long_text = "a very long line of text typed into the terminal " * 4
        for idx in range(11):
            session._on_event(
                StepEvent(idx, Type(long_text), f"type {long_text!r}", 0.5, 0.25, 1.0, None)
            )
        session._on_event(StepEvent(11, Ask("Which one?"), "ASK Which one?", 0.5, 0.0, 0.0, None))
        question = ChatMessage("agent", "question", "Which one? " + "and why " * 30, 12, "agent")
        answer = ChatMessage("user", "answer", "The first.", 12, "person")
        session._on_event(MessageEvent(question))
        session._on_event(MessageEvent(answer))
        await wait_until(pilot, lambda: "person answer" in screen_text(lab), 5, "the answer")
        text = screen_text(lab)
        # The step log's row 11 is the ASK; the conversation calls it step 11 too.
        assert "[step 11] agent question" in text and "[after step 11] person answer" in text
        assert "[step 12]" not in text
        # The timing columns stay in view although the typed text is long.
        rows = [line for line in text.splitlines() if "type 'a very long" in line]
        assert rows and all("0.50" in row and "1.00" in row for row in rows)

        # Narrower: the conversation is wrapped again at the new width, nothing cut.
        await pilot.resize_terminal(100, 30)
        log: Any = lab.screen.query_one("#live-log")

        def rewrapped() -> bool:
            lines = log.lines
            words = " ".join(strip.text.strip() for strip in lines) + " "
            fits = all(strip.cell_length <= log.size.width for strip in lines)
            return fits and "and why " * 30 in words

        await wait_until(pilot, rewrapped, 10, "the conversation wrapped at 100 columns")


async def test_chat_text_without_an_episode_is_not_sent_to_the_next(
    lab: DeskLoopApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.ui.chat_box import ChatBox
    from app.ui.screens.live import LiveScreen

    monkeypatch.setattr(LiveScreen, "fps", 0)
    async with lab.run_test(size=(100, 30)) as pilot:
        await pilot.press("l")
        await wait_until(pilot, lambda: isinstance(lab.screen, LiveScreen), 5, "live")
        await pilot.press("c", *"stale words")  # typed, not sent: no episode runs
        live_session(lab, tmp_path)
        lab.show_live()  # as start_episode does
        await pilot.pause()
        assert lab.screen.query_one("#chat-input", ChatBox).value == ""


async def test_watching_a_desktop_drops_the_ended_episodes_header(
    lab: DeskLoopApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.episode.events import EndedEvent, EpisodeResult
    from app.ui.screens.live import LiveScreen
    from tests.ui.helpers import screen_text

    monkeypatch.setattr(LiveScreen, "fps", 0)
    async with lab.run_test(size=(160, 50)) as pilot:
        session = live_session(lab, tmp_path)
        session._on_event(
            EndedEvent(EpisodeResult(7, "alpha-touch", "finished", "done", True, 1.0, 3))
        )
        lab.show_live()
        await wait_until(pilot, lambda: "alpha-touch" in screen_text(lab), 5, "the header")
        lab.watch_desktop("local-2")  # `v` on the Desktops screen
        await pilot.pause()
        text = screen_text(lab)
        assert "watching desktop local-2" in text or "local-2" in text
        assert "alpha-touch" not in text.splitlines()[1] + text.splitlines()[2]


async def test_episodes_filter_keeps_the_cursor_and_says_what_is_wrong(lab: DeskLoopApp) -> None:
    from textual.widgets import DataTable, Input

    from app.ui.screens.episodes import EpisodesScreen
    from tests.ui.helpers import screen_text

    async with lab.run_test(size=(100, 30)) as pilot:
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(lab.screen, EpisodesScreen), 5, "episodes")
        screen = lab.screen
        assert isinstance(screen, EpisodesScreen)
        await wait_until(pilot, lambda: screen.loaded, 5, "the episodes")
        # At 100 columns the score and the start time are in view.
        header = screen_text(lab)
        assert "score" in header and "started" in header and "01-15 " in header
        await pilot.press("slash", *"agent:ref", "enter")  # part of the agent's name
        await wait_until(pilot, lambda: "match “agent:ref”" in screen_text(lab), 5, "count")
        assert len(screen.shown) == 4
        await pilot.press("r")  # typed into the filter, not the Results key
        assert isinstance(lab.screen, EpisodesScreen)
        filter_box = screen.query_one("#episode-filter", Input)
        assert filter_box.value == "agent:refr" and filter_box.has_focus
        await pilot.press("backspace", " ", *"user:nobody", "enter")
        await wait_until(pilot, lambda: "not a filter" in screen_text(lab), 5, "the error")
        assert "match “agent:ref”" not in screen_text(lab)  # no stale count
        await pilot.press("escape")
        assert screen.query_one(DataTable).has_focus


async def test_the_replay_caption_shows_a_long_message_whole(tmp_path: Path) -> None:
    from app.store import Store
    from app.ui.screens.replay import ReplayScreen
    from tests.ui.helpers import record_episode, screen_text

    db = tmp_path / "d.db"
    long = " ".join(f"word{i}" for i in range(60)) + " THE-END."
    with Store(db) as store:
        episode = record_episode(store, task_id="gimp-long")
        store.record_message(
            episode, role="user", kind="clarification", text=long, step=1, source="person"
        )
    lab = DeskLoopApp(db=db, tasks_dir=write_tasks(tmp_path / "tasks"))
    async with lab.run_test(size=(100, 30)) as pilot:
        lab.push_screen(ReplayScreen(episode))
        await wait_until(pilot, lambda: isinstance(lab.screen, ReplayScreen), 5, "replay")
        replay = lab.screen
        assert isinstance(replay, ReplayScreen)
        await wait_until(pilot, lambda: bool(replay.rows), 5, "the episode read")
        row = next(
            i for i, (_k, item) in enumerate(replay.rows) if getattr(item, "text", "") == long
        )
        await pilot.pause()
        replay.query_one("#replay-timeline").move_cursor(row=row)  # type: ignore[attr-defined]
        await wait_until(
            pilot,
            lambda: "word59 THE-END." in " ".join(screen_text(lab).split()),
            5,
            "the message's end in the caption",
        )
        assert "word0" in " ".join(screen_text(lab).split())


async def test_q_and_f4_ask_before_ending_a_running_episode(
    lab: DeskLoopApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.ui.modals import ConfirmScreen
    from app.ui.screens.live import LiveScreen

    monkeypatch.setattr(LiveScreen, "fps", 0)
    async with lab.run_test(size=(100, 30)) as pilot:
        session = await show_live_session(lab, pilot, tmp_path)
        await pilot.press("f4")
        await wait_until(pilot, lambda: isinstance(lab.screen, ConfirmScreen), 5, "confirm")
        await pilot.press("n")
        await wait_until(pilot, lambda: isinstance(lab.screen, LiveScreen), 5, "back")
        assert not session.control.abort_requested
        await pilot.press("q")
        await wait_until(pilot, lambda: isinstance(lab.screen, ConfirmScreen), 5, "confirm")
        assert "episode of alpha-touch" in str(lab.screen.question)  # type: ignore[attr-defined]
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(lab.screen, LiveScreen), 5, "back")
        assert lab.is_running
        await pilot.press("f4", "y")
        await wait_until(pilot, lambda: session.control.abort_requested, 5, "the abort")
        await pilot.press("q", "y")
        await wait_until(pilot, lambda: not lab.is_running, 5, "the exit")


async def test_q_quits_at_once_with_no_episode_running(lab: DeskLoopApp) -> None:
    async with lab.run_test(size=(80, 24)) as pilot:
        await pilot.press("q")
        await wait_until(pilot, lambda: not lab.is_running, 5, "the exit")


async def test_an_end_by_fail_with_passing_checks_is_said_without_contradiction(
    lab: DeskLoopApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.episode.events import EndedEvent, EpisodeResult
    from app.ui.screens.live import LiveScreen
    from tests.ui.helpers import screen_text

    monkeypatch.setattr(LiveScreen, "fps", 0)
    async with lab.run_test(size=(160, 50)) as pilot:
        session = await show_live_session(lab, pilot, tmp_path)
        # The reference agent FAILs after feedback at its last DONE; the state it left
        # still passes every check.
        result = EpisodeResult(9, "alpha-touch", "finished", "fail", True, 1.0, 5)
        session._on_event(EndedEvent(result))
        await wait_until(pilot, lambda: "gave up" in screen_text(lab), 5, "the end")
        text = screen_text(lab)
        assert "finished (fail)" not in text
        assert "the agent gave up (FAIL) · the final state passes the checks (score 1.00)" in text


async def test_episodes_and_replay_read_the_store_off_the_ui_loop(
    lab: DeskLoopApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from app.ui.screens.episodes import EpisodesScreen
    from app.ui.screens.replay import ReplayScreen

    readers: dict[str, set[str]] = {}
    store = lab.store
    for name in ("list_episodes", "get_episode", "steps", "messages", "checks"):
        real = getattr(store, name)

        def spy(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            readers.setdefault(_name, set()).add(threading.current_thread().name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(store, name, spy)
    async with lab.run_test(size=(100, 30)) as pilot:
        loop_thread = threading.current_thread().name
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(lab.screen, EpisodesScreen), 5, "episodes")
        screen = lab.screen
        assert isinstance(screen, EpisodesScreen)
        await wait_until(pilot, lambda: screen.loaded, 5, "the episodes")
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(lab.screen, ReplayScreen), 5, "replay")
        replay = lab.screen
        assert isinstance(replay, ReplayScreen)
        await wait_until(pilot, lambda: bool(replay.rows), 5, "the episode")
    assert set(readers) == {"list_episodes", "get_episode", "steps", "messages", "checks"}
    assert all(loop_thread not in threads for threads in readers.values()), readers


async def test_the_start_dialog_reaches_its_buttons_at_80x24(lab: DeskLoopApp) -> None:
    from textual.widgets import Button

    async with lab.run_test(size=(80, 24)) as pilot:
        screen = lab.screen
        assert isinstance(screen, TasksScreen)
        await wait_until(pilot, lambda: screen.selected is not None, 5, "a selected task")
        await pilot.press("s")
        await wait_until(pilot, lambda: isinstance(lab.screen, StartEpisodeScreen), 5, "dialog")
        dialog = lab.screen
        start = dialog.query_one("#start", Button)
        start.focus()
        # The focused button is on screen: its label is drawn, not cut off below.
        from tests.ui.helpers import screen_text

        def buttons_shown() -> bool:
            rows = [line for line in screen_text(lab).splitlines() if " Cancel " in line]
            return bool(rows) and " Start " in rows[0]

        await wait_until(pilot, buttons_shown, 5, "the dialog's buttons on screen")


async def test_a_due_phase_is_offered_in_the_chat_box_and_marked(
    lab: DeskLoopApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from app.episode.events import WaitingEvent
    from app.ui.chat_box import ChatBox
    from app.ui.screens.live import LiveScreen
    from tests.ui.helpers import screen_text

    monkeypatch.setattr(LiveScreen, "fps", 0)
    draft = "Also create ~/c.txt."
    async with lab.run_test(size=(100, 30)) as pilot:
        session = await show_live_session(lab, pilot, tmp_path, "beta-steps")
        live = lab.screen
        assert isinstance(live, LiveScreen)
        await wait_until(pilot, lambda: bool(live.query("#chat-input")), 5, "the chat box")
        chat = live.query_one("#chat-input", ChatBox)

        # As the runner does when a GUI action makes phase 1 due.
        reply = asyncio.ensure_future(session.person.reply("phase", draft=draft))
        await pilot.pause()
        session._on_event(WaitingEvent("phase", None, draft, 0))
        await wait_until(pilot, lambda: chat.value == draft, 5, "the draft in the box")
        text = screen_text(lab)
        assert "due now, waiting for you" in text and "script's draft" in text
        assert not chat.has_focus
        await pilot.press("c", *" and ~/d.txt", "enter")  # c: the cursor after the draft
        sent = await asyncio.wait_for(reply, 5)
        assert (sent.text, sent.origin, sent.scripted) == (draft + " and ~/d.txt", "edited", draft)
        assert chat.value == "" and "-draft" not in chat.classes

        # Own words typed before the phase came due are never replaced by the draft.
        assert not chat.has_focus  # the cursor left the box with the message
        await pilot.press("c", *"Stop for a moment")
        reply = asyncio.ensure_future(session.person.reply("phase", draft=draft))
        await pilot.pause()
        session._on_event(WaitingEvent("phase", None, draft, 0))
        await wait_until(pilot, lambda: "due now" in screen_text(lab), 5, "the due phase")
        assert chat.value == "Stop for a moment"
        await pilot.press("enter")
        sent = await asyncio.wait_for(reply, 5)
        assert (sent.text, sent.origin, sent.scripted) == ("Stop for a moment", "free", draft)
