"""End to end: a person answers an agent's ASK through the TUI's chat pane, on a
real local desktop (Xvnc + xterm), reviews its DONE, and the episode replays."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from textual.message import Message
from textual.widgets import Select

from app.episode.events import WaitingEvent
from app.store import Store
from app.ui.app import DeskLoopApp
from app.ui.chat_box import ChatBox
from app.ui.halfblock import HalfBlockView
from app.ui.screens.live import LiveScreen
from app.ui.screens.replay import ReplayScreen
from app.ui.screens.tasks import StartEpisodeScreen, TasksScreen
from tests.ui.helpers import screen_text, wait_until

pytestmark = pytest.mark.desktop

TASK = """\
id: xterm-ask
app: gimp
level: L1
title: Ask for the file name, then make it
instruction: Create the file the person names, in the home folder.
setup:
  - launch: [xterm]
  - wait_window: {class: XTerm, timeout: 60}
budget: {steps: 10, seconds: 180}
evaluate:
  all:
    - {check: file_exists, path: ~/proof.txt}
reference: ask.yaml
"""

# The `expect` makes the answer matter: without the person's words in the active
# message, the scripted agent FAILs instead of creating the file.
SCRIPT = """\
kind: demonstration
steps:
  - ask: What should the file be called?
  - expect: {message: proof\\.txt}
  - type: "touch ~/proof.txt\\n"
  - wait_for: {file: ~/proof.txt, timeout: 60}
  - done
"""


@pytest.fixture
def tasks_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "tasks" / "gimp"
    folder.mkdir(parents=True)
    (folder / "xterm-ask.yaml").write_text(textwrap.dedent(TASK))
    (folder / "ask.yaml").write_text(textwrap.dedent(SCRIPT))
    return tmp_path / "tasks"


async def test_person_answers_through_chat_pane_and_accepts(
    tasks_dir: Path, tmp_path: Path
) -> None:
    seen: list[Message] = []
    app = DeskLoopApp(db=tmp_path / "db" / "deskloop.db", tasks_dir=tasks_dir)
    async with app.run_test(size=(160, 50), message_hook=seen.append) as pilot:
        screen = app.screen
        assert isinstance(screen, TasksScreen)
        await wait_until(pilot, lambda: screen.selected is not None, 5, "a selected task")
        assert screen.selected is not None and screen.selected.id == "xterm-ask"
        await pilot.press("s")
        await wait_until(
            pilot, lambda: isinstance(app.screen, StartEpisodeScreen), 5, "the start dialog"
        )
        await pilot.press("enter")  # agent 'reference', user 'person' are the defaults
        await wait_until(pilot, lambda: isinstance(app.screen, LiveScreen), 10, "Live screen")
        session = app.session
        assert session is not None and session.person is not None

        person = session.person
        await wait_until(pilot, lambda: person.waiting == "answer", 120, "the agent's ASK")
        live = app.screen
        assert isinstance(live, LiveScreen)
        pane = live.query_one("#live-chat")
        await wait_until(
            pilot,
            lambda: "What should the file be called?" in str(pane.border_title),
            10,
            "the question in the chat pane's title",
        )
        chat = live.query_one("#chat-input", ChatBox)
        # The question never moves the cursor: `c` (the screen's key) puts it in the box.
        assert not chat.has_focus
        await pilot.press("c")
        assert chat.has_focus and chat.value == ""
        await pilot.press(*"Call it proof.txt please")
        await pilot.press("enter")

        await wait_until(pilot, lambda: person.waiting == "review", 120, "the agent's DONE")
        await pilot.press("f3")
        await wait_until(pilot, lambda: session.ended, 120, "the episode's end")
        assert live.query_one(HalfBlockView).has_frame, "the live view showed no frame"

        result = session.result
        assert result is not None and result.status == "finished", result
        assert result.passed and result.score == 1.0

        submitted = [m for m in seen if isinstance(m, ChatBox.Submitted)]
        assert any(m.value == "Call it proof.txt please" for m in submitted)
        unique = {id(m): m for m in seen}.values()  # a message bubbles: seen once per node
        waits = [
            m.event.what
            for m in unique
            if isinstance(m, LiveScreen.RunnerUpdate) and isinstance(m.event, WaitingEvent)
        ]
        assert waits == ["answer", "review"]

        # The replay shows the answer in place on the timeline.
        await pilot.press("escape", "e")
        await pilot.pause()
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ReplayScreen), 10, "replay")
        replay = app.screen
        assert isinstance(replay, ReplayScreen)
        texts = [getattr(item, "text", "") for _key, item in replay.rows]
        assert "Call it proof.txt please" in texts

    with Store(tmp_path / "db" / "deskloop.db") as store:
        episode = store.get_episode(result.episode_id)
        assert episode.user_mode == "person" and episode.passed and episode.score == 1.0
        messages = store.messages(result.episode_id)
        answer = next(m for m in messages if m.kind == "answer")
        assert answer.source == "person" and answer.text == "Call it proof.txt please"
        question = next(m for m in messages if m.kind == "question")
        assert answer.step == question.step == 1
        assert [m.kind for m in messages][-1] == "done"


PAUSE_SCRIPT = """\
kind: demonstration
steps:
  - expect: {message: only proof\\.txt}
  - type: "echo started\\n"
  - done
  - expect: {message: Not yet}
  - type: "touch ~/proof.txt\\n"
  - wait_for: {file: ~/proof.txt, timeout: 60}
  - done
"""


async def test_person_pauses_interrupts_and_gives_feedback(tasks_dir: Path, tmp_path: Path) -> None:
    (tasks_dir / "gimp" / "ask.yaml").write_text(textwrap.dedent(PAUSE_SCRIPT))
    app = DeskLoopApp(db=tmp_path / "db" / "deskloop.db", tasks_dir=tasks_dir)
    async with app.run_test(size=(100, 30)) as pilot:
        tasks = app.screen
        assert isinstance(tasks, TasksScreen)
        await wait_until(pilot, lambda: tasks.selected is not None, 5, "a selected task")
        await pilot.press("s")
        await wait_until(pilot, lambda: isinstance(app.screen, StartEpisodeScreen), 5, "dialog")
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, LiveScreen), 10, "Live screen")
        live = app.screen
        assert isinstance(live, LiveScreen)
        session = app.session
        assert session is not None
        await pilot.press("f2")  # pause before the agent's first step
        await wait_until(pilot, lambda: session.status == "paused", 60, "the pause")
        assert session.steps == []
        await wait_until(pilot, lambda: "PAUSED" in screen_text(app), 5, "PAUSED on screen")

        # Choose 'interruption' in the kind selector, then type the message.
        live.query_one("#chat-kind", Select).focus()
        await pilot.press("enter", "down", "enter")
        assert live.query_one("#chat-kind", Select).value == "interruption"
        await pilot.press("c", *"Stop: make only proof.txt", "enter")
        await pilot.press("f2")  # resume: the interruption is delivered first

        person = session.person
        assert person is not None
        await wait_until(pilot, lambda: person.waiting == "review", 120, "the first DONE")
        await pilot.press("escape", "c", *"Not yet: create proof.txt", "enter")
        await wait_until(
            pilot, lambda: person.waiting == "review" and len(session.steps) > 3, 120, "DONE"
        )
        await pilot.press("f3")
        await wait_until(pilot, lambda: session.ended, 120, "the episode's end")
        result = session.result
        assert result is not None and result.passed, result

    with Store(tmp_path / "db" / "deskloop.db") as store:
        messages = [(m.role, m.kind, m.source, m.step) for m in store.messages(result.episode_id)]
        assert messages == [
            ("user", "instruction", "task", 0),
            ("user", "interruption", "person", 0),
            ("agent", "done", "agent", 2),
            ("user", "feedback", "person", 2),
            ("agent", "done", "agent", 4),
        ]
