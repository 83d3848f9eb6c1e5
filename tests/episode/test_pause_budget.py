"""A paused episode (the TUI's F2) keeps its time budget: the agent takes no step while
it stands paused, so the seconds do not run."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from app.agents.base import Observation
from app.core.actions import Action, Click, Done
from app.episode.control import EpisodeControl
from app.episode.events import RunnerEvent, StatusEvent
from app.episode.runner import EpisodeRunner
from app.store import Store
from app.tasks.loader import load_task
from app.users.simulated import SimulatedUser
from tests.still_desktop import QuietAgent, StillDesktop
from tests.waiting import eventually

TASK = """\
id: pause-budget
app: gimp
level: L1
title: t
instruction: Click twice.
budget: {steps: 10, seconds: 2}
evaluate: {check: file_exists, path: ~/x}
"""


class ListAgent(QuietAgent):
    name = "list"

    def __init__(self, actions: list[Action]) -> None:
        self.actions = actions

    async def decide(self, observation: Observation) -> Action:
        return self.actions.pop(0) if self.actions else Done()


async def test_paused_seconds_are_off_the_time_budget(tmp_path: Path) -> None:
    path = tmp_path / "tasks" / "gimp" / "pause-budget.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(TASK)
    task = load_task(path)
    events: list[RunnerEvent] = []
    control = EpisodeControl()
    control.pause()  # before the first step: the runner stops at its first boundary
    with Store(tmp_path / "db.sqlite") as store:
        runner = EpisodeRunner(
            task, StillDesktop(), ListAgent([Click(1, 1), Click(2, 2), Done()]),
            SimulatedUser(), store, backend="local", on_event=events.append,
            control=control,
        )  # fmt: skip
        running = asyncio.ensure_future(runner.run())
        await eventually(
            lambda: StatusEvent("paused") in events, "the runner to stand paused", timeout=10
        )
        used = runner.budget_seconds_used()
        assert used is not None and used < 1.0
        # Paused for longer than the whole 2 s budget: the seconds used stand still.
        since = time.monotonic()
        await eventually(lambda: time.monotonic() - since > 2.5, "2.5 s paused", timeout=10)
        still = runner.budget_seconds_used()
        assert still is not None and still - used < 0.2, (used, still)
        control.resume()
        result = await asyncio.wait_for(running, 10)
        # The episode ran its steps and ended on the agent's DONE, not on time.
        assert result.end_reason == "done", result
        assert store.get_episode(result.episode_id).steps == 3  # two clicks, then DONE
        # The paused seconds are kept apart, so a reader tells them from a slow agent.
        assert store.get_episode(result.episode_id).paused_seconds >= 2.5
