"""The Live screen's chat box in person mode, on an episode the real runner
plays with a scripted agent on a still desktop (the chat box is under test, not a
desktop): a multi-line phase message is offered and sent exactly as the script has
it; after enter the cursor leaves the box, so the `c` the border asks for is never
typed into the next answer; F3 while a phase is due is refused, saying how to send it."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agents.base import Observation
from app.core.actions import Action, Ask, Click, Done
from app.store import Store
from app.ui.app import DeskLoopApp
from app.ui.chat_box import ChatBox, message_text
from app.ui.screens.live import LiveScreen
from app.ui.services.episode import EpisodeSession
from tests.still_desktop import QuietAgent, StillDesktop
from tests.ui.helpers import screen_text, wait_until

MULTI_LINE = """\
id: multi-line-phase
app: gimp
level: L1
title: A phase message of several lines
instruction: Export the photo.
phases:
  - message: |
      Also export a copy:
        - as JPEG, quality 90
        - named photo-small.jpg
      Keep the PNG too.
    trigger: {step_count: 1}
budget: {steps: 10, seconds: 600}
evaluate: {check: file_exists, path: ~/photo-small.jpg}
"""

AT_DONE = """\
id: phase-at-done
app: gimp
level: L1
title: A phase due at the agent's DONE
instruction: Export the photo.
phases:
  - message: Now make it greyscale too.
    trigger: agent_done
budget: {steps: 10, seconds: 600}
evaluate: {check: file_exists, path: ~/photo.png}
"""


class ListAgent(QuietAgent):
    name = "list"

    def __init__(self, actions: list[Action]) -> None:
        self.actions = actions

    async def decide(self, observation: Observation) -> Action:
        return self.actions.pop(0) if self.actions else Done()


@pytest.fixture
def lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> DeskLoopApp:
    monkeypatch.setattr(LiveScreen, "fps", 0)  # a still desktop: nothing to draw
    folder = tmp_path / "tasks" / "gimp"
    folder.mkdir(parents=True)
    (folder / "multi-line-phase.yaml").write_text(MULTI_LINE)
    (folder / "phase-at-done.yaml").write_text(AT_DONE)
    return DeskLoopApp(db=tmp_path / "db" / "deskloop.db", tasks_dir=tmp_path / "tasks")


def start(lab: DeskLoopApp, task_id: str, actions: list[Action]) -> EpisodeSession:
    """A person-mode episode of `task_id` run by the real runner, shown on Live (as
    `DeskLoopApp.start_episode` does, with a scripted agent on a still desktop)."""
    task = next(t for t in lab.tasks if t.id == task_id)
    session = EpisodeSession(
        task=task,
        agent_spec="list",
        user_mode="person",
        store=lab.store,
        desktop=StillDesktop(),
        backend="local",
        agent=ListAgent(actions),
    )
    lab.session = session
    lab.run_worker(session.run(), group="episode", exit_on_error=False)
    lab.show_live()
    return session


async def test_a_multi_line_phase_is_sent_as_written_and_c_then_moves_the_cursor(
    lab: DeskLoopApp,
) -> None:
    async with lab.run_test(size=(100, 30)) as pilot:
        session = start(lab, "multi-line-phase", [Click(1, 1), Ask("Which format?"), Done()])
        script = session.task.phases[0].message
        assert script.count("\n") == 4 and "\n  - as JPEG" in script  # lines, indentation
        await wait_until(pilot, lambda: isinstance(lab.screen, LiveScreen), 5, "Live")
        live = lab.screen
        assert isinstance(live, LiveScreen)
        person = session.person
        assert person is not None
        await wait_until(pilot, lambda: person.waiting == "phase", 30, "the due phase")
        chat = live.query_one("#chat-input", ChatBox)
        shown = script.rstrip("\n")  # the script's lines (its final newline is no line)
        await wait_until(pilot, lambda: chat.text == shown, 5, "the script's draft in the box")
        # Shown whole: a row for each of its lines, none cut or run together.
        await pilot.pause()
        assert chat.content_region.height >= 4 and chat.scroll_offset.y == 0, chat.content_region
        assert [chat.document.get_line(i) for i in range(4)] == script.splitlines()
        text = screen_text(lab).splitlines()
        top = chat.content_region.y
        for row, line in enumerate(script.splitlines()):
            assert line in text[top + row], (line, text[top + row])

        await pilot.press("c")  # the screen's key: the cursor goes into the box
        assert chat.has_focus and chat.text == shown
        await pilot.press("enter")  # sends the draft as offered
        await wait_until(pilot, lambda: person.waiting == "answer", 30, "the agent's ASK")
        # The cursor left the box with the message: `c` is the screen's key again.
        assert not chat.has_focus and chat.text == ""
        await pilot.press("c")
        assert chat.has_focus and chat.text == ""
        await pilot.press(*"PNG", "enter")
        await wait_until(pilot, lambda: person.waiting == "review", 30, "the agent's DONE")
        assert not chat.has_focus
        await pilot.press("f3")
        await wait_until(pilot, lambda: session.ended, 30, "the episode's end")
        result = session.result
        assert result is not None

    with Store(lab.store.path) as store:
        sent = [m for m in store.messages(result.episode_id) if m.source == "person"]
        assert [(m.kind, m.text, m.origin, m.scripted) for m in sent] == [
            ("interruption", script, "script", script),  # exactly the script's text
            ("answer", "PNG", "free", None),
        ]
        (phase,) = store.phases(result.episode_id)
        assert phase.status == "delivered"


async def test_f3_while_a_phase_is_due_is_refused_and_says_how_to_send_it(
    lab: DeskLoopApp,
) -> None:
    async with lab.run_test(size=(100, 30)) as pilot:
        session = start(lab, "phase-at-done", [Done(), Done()])
        await wait_until(pilot, lambda: isinstance(lab.screen, LiveScreen), 5, "Live")
        live = lab.screen
        assert isinstance(live, LiveScreen)
        person = session.person
        assert person is not None
        await wait_until(pilot, lambda: person.waiting == "review", 30, "the agent's DONE")
        assert person.draft == "Now make it greyscale too."
        chat = live.query_one("#chat-input", ChatBox)
        await wait_until(pilot, lambda: chat.text == person.draft, 5, "the draft in the box")

        await pilot.press("f3")
        await wait_until(pilot, lambda: bool(lab._notifications), 5, "a notice")
        notes = [str(n.message).lower() for n in lab._notifications]
        assert any(
            "phase 1 is due" in n and "c, then enter" in n and "not accepted" in n for n in notes
        ), notes
        await pilot.pause()
        # Nothing was accepted: the episode still waits for the review.
        assert not session.ended and person.waiting == "review"

        await pilot.press("c", "enter")  # the script's message, as the notice says
        await wait_until(pilot, lambda: session.phases[0].delivered_step is not None, 30, "sent")
        await wait_until(pilot, lambda: person.waiting == "review", 30, "the second DONE")
        assert person.draft is None
        await pilot.press("f3")  # no phase due now: accepted
        await wait_until(pilot, lambda: session.ended, 30, "the episode's end")
        result = session.result
        assert result is not None and result.end_reason == "done"

    with Store(lab.store.path) as store:
        (phase,) = store.phases(result.episode_id)
        assert phase.status == "delivered"
        (message,) = [m for m in store.messages(result.episode_id) if m.source == "person"]
        assert (message.kind, message.text, message.origin) == (
            "feedback",
            "Now make it greyscale too.",
            "script",
        )


def test_what_the_chat_box_sends() -> None:
    script = "Also export a copy:\n  - as JPEG\nKeep the PNG too.\n"
    # The script's draft, as offered (its final newline was not shown): the script's text.
    assert message_text(script.rstrip("\n"), script) == script
    assert message_text("\n" + script + "  \n", script) == script
    # Edited: the lines and their indentation kept, blank space around them dropped.
    edited = "\nAlso export a copy:\n  - as WebP\nKeep the PNG too.  \n\n"
    assert message_text(edited, script) == "Also export a copy:\n  - as WebP\nKeep the PNG too."
    assert message_text("  \n    indented first\n  next\n", None) == "    indented first\n  next"
    # One line: stripped, as the one-line box did.
    assert message_text("  PNG is right. \n", None) == "PNG is right."
    assert message_text(" \n ", None) == ""


async def test_ctrl_j_starts_a_line_and_escape_leaves_the_box(lab: DeskLoopApp) -> None:
    async with lab.run_test(size=(80, 24)) as pilot:
        await pilot.press("l")
        await wait_until(pilot, lambda: isinstance(lab.screen, LiveScreen), 5, "Live")
        chat = lab.screen.query_one("#chat-input", ChatBox)
        await pilot.press("c", *"Also:", "ctrl+j", *"  - a JPEG")
        assert chat.text == "Also:\n  - a JPEG" and chat.has_focus
        await wait_until(pilot, lambda: chat.content_region.height == 2, 5, "the box grown")
        await pilot.press("escape")  # the screen's keys work again
        assert not chat.has_focus and chat.text == "Also:\n  - a JPEG"
