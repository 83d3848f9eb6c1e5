"""`deskloop human` from the TUI, on a real local desktop: the person is the agent,
drives the desktop from the live view, and ends with `done 2` in the chat box; the
episode records their click as a step with its frame and the DONE with its answer."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from textual.widgets import Input, Select

from app.store import Store
from app.ui.app import DeskLoopApp
from app.ui.chat_box import ChatBox
from app.ui.halfblock import HalfBlockView
from app.ui.screens.live import LiveScreen
from app.ui.services.episode import HUMAN
from tests.ui.helpers import open_start_dialog, screen_text, wait_until

pytestmark = pytest.mark.desktop

TASK = """\
id: xterm-human
app: gimp
level: L1
title: Click the xterm, then say done
instruction: Click the terminal and answer 2.
setup:
  - launch: [xterm, -geometry, 80x20+0+0]
  - wait_window: {class: XTerm, timeout: 60}
budget: {steps: 10, seconds: 300}
evaluate:
  all:
    - {check: file_exists, path: ~/never.txt}
"""


async def test_a_human_episode_started_and_driven_from_the_tui(tmp_path: Path) -> None:
    folder = tmp_path / "tasks" / "gimp"
    folder.mkdir(parents=True)
    (folder / "xterm-human.yaml").write_text(textwrap.dedent(TASK))
    db = tmp_path / "db" / "deskloop.db"
    app = DeskLoopApp(db=db, tasks_dir=tmp_path / "tasks")
    async with app.run_test(size=(160, 50)) as pilot:
        dialog = await open_start_dialog(pilot)
        assert HUMAN in screen_text(app)  # offered in the agent field's label
        dialog.query_one("#agent", Input).value = HUMAN
        dialog.query_one("#user", Select).value = "simulated"
        dialog.query_one("#agent", Input).focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, LiveScreen), 10, "Live screen")
        live = app.screen
        assert isinstance(live, LiveScreen)
        session = app.session
        assert session is not None and session.human is not None
        human = session.human
        await wait_until(pilot, lambda: human.address is not None, 120, "the agent's start")
        proxy = human.address
        assert proxy is not None
        await wait_until(
            pilot, lambda: f":{proxy.port} pw" in screen_text(app), 10, "the proxy address"
        )
        view = live.frame_view
        assert isinstance(view, HalfBlockView)
        await wait_until(pilot, lambda: view._shown is not None, 30, "a frame in the view")
        col, row = view._pad + 3, 3
        point = view.desktop_point(col, row)
        assert point is not None
        await pilot.click("#live-frame", offset=(col, row))
        await wait_until(pilot, lambda: len(session.steps) == 1, 30, "the click as a step")
        await pilot.press("c")
        live.query_one("#chat-input", ChatBox).value = "done 2"
        await pilot.press("enter")
        await wait_until(pilot, lambda: session.ended, 120, "the end of the episode")
        episode_id = session.episode_id
        assert episode_id is not None
    with Store(db) as store:
        steps = store.steps(episode_id)
        episode = store.get_episode(episode_id)
        messages = store.messages(episode_id)
    assert episode.agent == "person"  # as `deskloop human` records it
    assert steps[0].action == {"kind": "click", "x": point[0], "y": point[1],
                               "button": "left", "count": 1}  # fmt: skip
    assert steps[0].agent_info == {"source": "proxy"} and steps[0].frame
    assert steps[1].description.startswith("DONE")
    assert any(m.role == "agent" and m.text == "DONE: 2" for m in messages)
    assert episode.status == "finished" and episode.end_reason == "done"
