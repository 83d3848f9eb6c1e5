"""Running one task's episodes on a given desktop, for the VM tests of each app."""

from __future__ import annotations

from pathlib import Path

from app.agents.factory import make_agent
from app.desktops.base import Desktop
from app.episode.events import EpisodeResult
from app.episode.runner import EpisodeRunner
from app.store import Store
from app.tasks.loader import load_task
from app.users.simulated import SimulatedUser
from tests.episode_story import episode_story


async def run_episode(
    task_path: Path, desktop: Desktop, agent: str, store: Store, backend: str
) -> EpisodeResult:
    """One episode of the task with `agent` ("null", "reference"); it must finish."""
    task = load_task(task_path)
    runner = EpisodeRunner(
        task, desktop, make_agent(agent, task), SimulatedUser(), store, backend=backend
    )
    result = await runner.run()
    assert result.status == "finished", episode_story(store, result)
    return result


def verdicts(store: Store, result: EpisodeResult) -> list[tuple[str, bool]]:
    """Each check's name and whether it passed, in the task's order."""
    return [(c.name, c.passed) for c in store.checks(result.episode_id)]
