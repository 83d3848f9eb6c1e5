"""Requests from another process (app.store.requests): a running episode's runner
pauses, resumes and aborts as another connection to its database asks, as the
researcher's TUI asks of a participant's trial run by the participant's process."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from app.agents.base import Observation
from app.core.actions import Action, Click
from app.core.errors import StoreError
from app.episode.events import RunnerEvent, StatusEvent, StepEvent
from app.episode.runner import EpisodeRunner
from app.store import Store
from app.tasks.loader import load_task
from app.users.simulated import SimulatedUser
from tests.still_desktop import QuietAgent, StillDesktop
from tests.waiting import eventually

TASK = """\
id: asked-from-outside
app: gimp
level: L1
title: t
instruction: Click until told to stop.
budget: {steps: 10000, seconds: 600}
evaluate: {check: file_exists, path: ~/x}
"""


class ClickingAgent(QuietAgent):
    """Clicks until stopped, a step about every 20 ms."""

    name = "clicking"

    async def decide(self, observation: Observation) -> Action:
        await asyncio.sleep(0.02)
        return Click(1, 1)


async def test_another_connection_pauses_resumes_and_aborts_a_running_episode(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tasks" / "gimp" / "asked-from-outside.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(TASK)
    events: list[RunnerEvent] = []
    db = tmp_path / "db.sqlite"
    with Store(db) as store, Store(db) as researcher:
        runner = EpisodeRunner(
            load_task(path), StillDesktop(), ClickingAgent(), SimulatedUser(), store,
            backend="local", on_event=events.append,
        )  # fmt: skip
        running = asyncio.ensure_future(runner.run())
        await eventually(lambda: runner.episode_id is not None, "the episode to start")
        episode = runner.episode_id
        assert episode is not None

        def steps() -> int:
            return sum(isinstance(e, StepEvent) for e in events)

        await eventually(lambda: steps() > 0, "a first step")
        assert researcher.request_episode(episode, "pause") == 0
        await eventually(lambda: StatusEvent("paused") in events, "the runner to pause")
        stood = steps()
        # Paused: the agent takes no step while two more request polls go by (a
        # stretch of time is what is checked, so the test waits it out).
        await asyncio.sleep(2.5)
        assert steps() == stood
        researcher.request_episode(episode, "resume")
        await eventually(lambda: steps() > stood, "steps again after the resume")
        researcher.request_episode(episode, "abort")
        result = await asyncio.wait_for(running, 10)
    assert result.end_reason == "aborted"
    with Store(db) as store:
        assert [r for _, r in store.episode_requests(episode)] == ["pause", "resume", "abort"]
        # A finished episode takes no request: nobody is there to follow it.
        with pytest.raises(StoreError, match="not running"):
            store.request_episode(episode, "pause")
