"""The LLM user offered in the start dialog: chosen with its model and a local
endpoint, it answers the agent's ASK on a real desktop, and the agent acts on it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from textual.widgets import Input, Select, Static

from app.store import Store
from app.ui.app import DeskLoopApp
from app.ui.screens.live import LiveScreen
from app.ui.screens.tasks import StartEpisodeScreen, TasksScreen
from app.users.llm import LLMUser
from tests.fake_openai import FakeEndpoint, text_reply
from tests.ui.helpers import wait_until

pytestmark = pytest.mark.desktop

TASK = """\
id: xterm-ask-llm
app: gimp
level: L1
title: Ask for the file name, then make it
instruction: Create the file the user names, in the home folder.
setup:
  - launch: [xterm]
  - wait_window: {class: XTerm, timeout: 60}
budget: {steps: 10, seconds: 180}
evaluate:
  all:
    - {check: file_exists, path: ~/proof.txt}
reference: ask.yaml
"""

# Without the LLM user's words in the active message the scripted agent FAILs.
SCRIPT = """\
kind: demonstration
steps:
  - ask: What should the file be called?
  - expect: {message: proof\\.txt}
  - type: "touch ~/proof.txt\\n"
  - wait_for: {file: ~/proof.txt, timeout: 60}
  - done
"""


async def test_the_llm_user_from_the_start_dialog_answers_the_ask(tmp_path: Path) -> None:
    folder = tmp_path / "tasks" / "gimp"
    folder.mkdir(parents=True)
    (folder / "xterm-ask-llm.yaml").write_text(textwrap.dedent(TASK))
    (folder / "ask.yaml").write_text(textwrap.dedent(SCRIPT))
    # What only the user knows: the LLM user answers from it.
    (folder / "xterm-ask-llm.hidden.md").write_text("The file must be called proof.txt.")
    db = tmp_path / "db" / "deskloop.db"
    app = DeskLoopApp(db=db, tasks_dir=tmp_path / "tasks")
    with FakeEndpoint([text_reply("Call it proof.txt, please.")]) as endpoint:
        async with app.run_test(size=(160, 50)) as pilot:
            tasks = app.screen
            assert isinstance(tasks, TasksScreen)
            await wait_until(pilot, lambda: tasks.selected is not None, 5, "a selected task")
            await pilot.press("s")
            await wait_until(
                pilot, lambda: isinstance(app.screen, StartEpisodeScreen), 5, "the dialog"
            )
            dialog = app.screen
            dialog.query_one("#user", Select).value = "llm"
            dialog.query_one("#agent", Input).focus()
            await pilot.press("enter")  # no model for the LLM user: refused, said why
            assert isinstance(app.screen, StartEpisodeScreen)
            assert "needs a model" in str(dialog.query_one("#user-error", Static).render())
            dialog.query_one("#user-model", Input).value = "fake-user"
            dialog.query_one("#user-base-url", Input).value = endpoint.base_url
            dialog.query_one("#agent", Input).focus()
            await pilot.press("enter")
            await wait_until(pilot, lambda: isinstance(app.screen, LiveScreen), 10, "Live")
            session = app.session
            assert session is not None and isinstance(session.user, LLMUser)
            await wait_until(pilot, lambda: session.ended, 180, "the episode's end")
            result = session.result
    assert result is not None and result.status == "finished" and result.passed, result
    assert endpoint.received and endpoint.received[0].body["model"] == "fake-user"
    with Store(db) as store:
        record = store.get_episode(result.episode_id)
        messages = store.messages(result.episode_id)
    assert record.user_mode == "simulated"
    assert any(m.kind == "answer" and "proof.txt" in m.text for m in messages)
