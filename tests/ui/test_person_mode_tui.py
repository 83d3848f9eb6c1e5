"""Person mode end to end: the agent asks, the due
phase's scripted answer is offered in the chat box, the person edits it, and the store
records it as edited with the script's original; on a real local desktop (an xterm)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from app.store import Store
from app.ui.app import DeskLoopApp
from app.ui.chat_box import ChatBox
from app.ui.screens.live import LiveScreen
from app.ui.screens.tasks import StartEpisodeScreen, TasksScreen
from tests.ui.helpers import wait_until

pytestmark = pytest.mark.desktop

TASK = """\
id: xterm-phase-ask
app: gimp
level: L1
title: The name comes as a phase
instruction: Create the file the person names, in the home folder.
setup:
  - launch: [xterm]
  - wait_window: {class: XTerm, timeout: 60}
phases:
  - message: Call it proof.txt.
    trigger: agent_ask
budget: {steps: 10, seconds: 180}
evaluate:
  all:
    - {check: file_exists, path: ~/proof.txt}
reference: ask.yaml
"""

SCRIPT = """\
kind: demonstration
steps:
  - ask: What should the file be called?
  - expect: {message: proof\\.txt}
  - type: "touch ~/proof.txt\\n"
  - wait_for: {file: ~/proof.txt, timeout: 60}
  - done
"""


async def test_the_person_edits_the_scripts_answer(tmp_path: Path) -> None:
    folder = tmp_path / "tasks" / "gimp"
    folder.mkdir(parents=True)
    (folder / "xterm-phase-ask.yaml").write_text(textwrap.dedent(TASK))
    (folder / "ask.yaml").write_text(textwrap.dedent(SCRIPT))
    db = tmp_path / "db" / "deskloop.db"
    app = DeskLoopApp(db=db, tasks_dir=tmp_path / "tasks")
    async with app.run_test(size=(100, 30)) as pilot:
        tasks = app.screen
        assert isinstance(tasks, TasksScreen)
        await wait_until(pilot, lambda: tasks.selected is not None, 5, "a selected task")
        await pilot.press("s")
        await wait_until(pilot, lambda: isinstance(app.screen, StartEpisodeScreen), 5, "dialog")
        await pilot.press("enter")  # reference agent, user person
        await wait_until(pilot, lambda: isinstance(app.screen, LiveScreen), 10, "Live screen")
        live = app.screen
        assert isinstance(live, LiveScreen)
        session = app.session
        assert session is not None and session.person is not None
        person = session.person
        await wait_until(pilot, lambda: person.waiting == "answer", 120, "the agent's ASK")
        chat = live.query_one("#chat-input", ChatBox)
        await wait_until(pilot, lambda: chat.value == "Call it proof.txt.", 5, "the draft")
        assert "-draft" in chat.classes and live.from_draft
        pane = live.query_one("#live-chat")
        assert "phase 1 is due" in str(pane.border_title)
        # The budget stands still while the episode waits for the person.
        before = session.budget_left()[1]
        await pilot.pause(1.5)
        assert session.budget_left()[1] >= before - 0.2

        await pilot.press("c")  # the screen's key: never typed into the draft
        assert chat.has_focus and chat.value == "Call it proof.txt."
        await pilot.press("backspace", *" please, in lower case.", "enter")  # after the draft
        await wait_until(pilot, lambda: person.waiting == "review", 120, "the agent's DONE")
        await pilot.press("f3")
        await wait_until(pilot, lambda: session.ended, 120, "the episode's end")
        result = session.result
        assert result is not None and result.passed, result

        # The replay shows the answer with what the person made of the script's.
        from app.ui.screens.replay import ReplayScreen

        app.push_screen(ReplayScreen(result.episode_id))
        await wait_until(pilot, lambda: isinstance(app.screen, ReplayScreen), 5, "replay")
        replay = app.screen
        assert isinstance(replay, ReplayScreen)
        await wait_until(pilot, lambda: bool(replay.rows), 5, "the episode read")
        await pilot.pause()
        row = next(i for i, (_k, m) in enumerate(replay.rows) if getattr(m, "kind", "") == "answer")
        replay.query_one("#replay-timeline").move_cursor(row=row)  # type: ignore[attr-defined]
        caption = replay.query_one("#replay-caption")
        await wait_until(
            pilot,
            lambda: "edited from the script's: Call it proof.txt." in str(caption.render()),
            5,
            "the answer's origin in the caption",
        )

    with Store(db) as store:
        answer = next(m for m in store.messages(result.episode_id) if m.kind == "answer")
        assert answer.text == "Call it proof.txt please, in lower case."
        assert (answer.source, answer.origin, answer.scripted, answer.phase_index) == (
            "person",
            "edited",
            "Call it proof.txt.",
            0,
        )
        assert answer.wait_seconds is not None and answer.wait_seconds >= 1.5
        (phase,) = store.phases(result.episode_id)
        assert phase.status == "delivered"
        assert store.get_episode(result.episode_id).person_wait_seconds >= 1.5
