"""The start dialog's agent timeout field: a bad value is named and keeps the dialog
open; a good one reaches the lab with the agent and the user."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, Static

from app.ui.app import DeskLoopApp
from app.ui.screens.tasks import StartEpisodeScreen, TasksScreen
from tests.ui.helpers import fixture_db, wait_until, write_tasks


@pytest.fixture
def lab(tmp_path: Path) -> DeskLoopApp:
    return DeskLoopApp(
        db=fixture_db(tmp_path / "db" / "deskloop.db"), tasks_dir=write_tasks(tmp_path / "tasks")
    )


async def test_the_agent_timeout_is_checked_and_passed_on(
    lab: DeskLoopApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The lab's start is where a desktop would boot; the test is about the dialog.
    started: list[tuple[Any, ...]] = []
    monkeypatch.setattr(lab, "start_episode", lambda *args, **_endpoint: started.append(args))
    async with lab.run_test(size=(160, 50)) as pilot:
        await wait_until(pilot, lambda: isinstance(lab.screen, TasksScreen), 5, "tasks")
        await pilot.press("s")
        await wait_until(pilot, lambda: isinstance(lab.screen, StartEpisodeScreen), 5, "dialog")
        dialog = lab.screen
        dialog.query_one("#agent", Input).value = "openai:fake-model"
        field = dialog.query_one("#agent-timeout", Input)
        assert field.placeholder == "default 600"
        for bad in ("0", "-5", "soon", "inf"):
            field.value = bad
            await pilot.press("enter")
            await pilot.pause()
            assert lab.screen is dialog  # still open
            error = str(dialog.query_one("#agent-timeout-error", Static).render())
            assert error == f"Agent timeout must be a positive number of seconds, not {bad!r}"
        field.value = "45"
        await pilot.press("enter")
        await wait_until(pilot, lambda: bool(started), 5, "the episode request")
    ((task, agent, user, timeout),) = started
    assert task in lab.tasks  # the task selected in the tree
    assert (agent, user, timeout) == ("openai:fake-model", "person", 45.0)
