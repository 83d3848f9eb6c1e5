"""The start dialog's format fields: the computer tool and the text-turn policy a person
picks reach the lab with the agent's endpoint fields, and the agent's config takes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, Select

from app.agents.adapters import AdapterConfig
from app.agents.factory import endpoint_config
from app.ui.app import DeskLoopApp
from app.ui.screens.tasks import StartEpisodeScreen, TasksScreen
from tests.ui.helpers import fixture_db, wait_until, write_tasks


@pytest.fixture
def lab(tmp_path: Path) -> DeskLoopApp:
    return DeskLoopApp(
        db=fixture_db(tmp_path / "db" / "deskloop.db"), tasks_dir=write_tasks(tmp_path / "tasks")
    )


async def test_the_computer_tool_and_text_turn_picked_in_the_dialog_reach_the_agent(
    lab: DeskLoopApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The lab's start is where a desktop would boot; the test is about the dialog.
    started: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    monkeypatch.setattr(lab, "start_episode", lambda *args, **kw: started.append((args, kw)))
    async with lab.run_test(size=(160, 50)) as pilot:
        await wait_until(pilot, lambda: isinstance(lab.screen, TasksScreen), 5, "tasks")
        await pilot.press("s")
        await wait_until(pilot, lambda: isinstance(lab.screen, StartEpisodeScreen), 5, "dialog")
        dialog = lab.screen
        dialog.query_one("#agent", Input).value = "anthropic:claude-opus-4-6"
        dialog.query_one("#computer-tool", Select).value = "computer_20250124"
        dialog.query_one("#text-turn", Select).value = "ask"
        dialog.query_one("#agent", Input).focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: bool(started), 5, "the episode request")
    ((args, kw),) = started
    assert args[1] == "anthropic:claude-opus-4-6"
    assert kw["endpoint"] == {"computer_tool": "computer_20250124", "text_turn": "ask"}
    made = endpoint_config(args[1], **kw["endpoint"])
    assert isinstance(made, AdapterConfig) and made.format.beta == "computer-use-2025-01-24"
    assert made.text_turn == "ask" and made.public()["text_turn"] == "ask"
