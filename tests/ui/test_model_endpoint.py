"""The start dialog's model fields: a person points a model agent at an endpoint on
127.0.0.1 with a chosen adapter, and the episode runs against it on a real desktop."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input, Select

from app.agents.adapters import AdapterAgent
from app.store import Store
from app.ui.app import DeskLoopApp
from app.ui.screens.live import LiveScreen
from app.ui.screens.tasks import StartEpisodeScreen, TasksScreen
from tests.fake_openai import FakeEndpoint
from tests.fake_providers import code_reply
from tests.ui.helpers import wait_until
from tests.xterm_task import write_xterm_task

pytestmark = pytest.mark.desktop


async def test_the_tui_starts_an_episode_against_a_local_endpoint_with_an_adapter(
    tmp_path: Path,
) -> None:
    write_xterm_task(tmp_path, steps=6, seconds=180)
    replies = [code_reply("pyautogui.write('touch ~/proof.txt\\n')"), code_reply("DONE")]
    app = DeskLoopApp(db=tmp_path / "db" / "deskloop.db", tasks_dir=tmp_path / "tasks")
    with FakeEndpoint(replies) as endpoint:
        async with app.run_test(size=(160, 50)) as pilot:
            tasks = app.screen
            assert isinstance(tasks, TasksScreen)
            await wait_until(pilot, lambda: tasks.selected is not None, 5, "a selected task")
            await pilot.press("s")
            await wait_until(
                pilot, lambda: isinstance(app.screen, StartEpisodeScreen), 5, "the dialog"
            )
            dialog = app.screen
            dialog.query_one("#agent", Input).value = "model"
            dialog.query_one("#adapter", Select).value = "pyautogui"
            dialog.query_one("#model", Input).value = "fake-osworld-1"
            dialog.query_one("#base-url", Input).value = endpoint.base_url
            dialog.query_one("#api-key-env", Input).value = "DESKLOOP_NO_SUCH_KEY"
            dialog.query_one("#user", Select).value = "simulated"
            dialog.query_one("#agent-timeout", Input).value = "60"
            dialog.query_one("#agent", Input).focus()
            await pilot.press("enter")
            await wait_until(pilot, lambda: isinstance(app.screen, LiveScreen), 10, "Live")
            session = app.session
            assert session is not None
            assert isinstance(session.agent, AdapterAgent)
            assert session.agent.config.deadline == 60.0
            await wait_until(pilot, lambda: session.ended, 180, "the episode's end")
            result = session.result
    assert result is not None and result.status == "finished" and result.passed, result
    assert endpoint.received[0].path == "/v1/chat/completions"
    assert endpoint.received[0].body["model"] == "fake-osworld-1"
    with Store(tmp_path / "db" / "deskloop.db") as store:
        record = store.get_episode(result.episode_id)
        assert record.agent == "pyautogui:fake-osworld-1"
        settings = record.config["agent_config"]
        assert settings["adapter"] == "pyautogui" and settings["base_url"] == endpoint.base_url
        assert settings["api_key_env"] == "DESKLOOP_NO_SUCH_KEY"
