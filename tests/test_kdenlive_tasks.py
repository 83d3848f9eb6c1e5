"""Every Kdenlive task is proven on the real local desktop with the real Kdenlive: its
reference solution (a GUI demonstration over VNC, or a melt oracle for L3) scores 1,
and the null agent, which leaves the start state untouched, scores 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agents.factory import make_agent
from app.core.triggers import trigger_to_raw
from app.desktops.local.desktop import LocalDesktop
from app.episode.events import EpisodeResult
from app.episode.runner import EpisodeRunner
from app.store import Store
from app.tasks.loader import load_task
from app.users.simulated import SimulatedUser
from tests.episode_story import episode_story
from tests.library_sample import sample_paths

ROOT = Path(__file__).resolve().parent.parent
KDENLIVE_TASKS = sorted((ROOT / "tasks" / "kdenlive").glob("*.yaml"))

pytestmark = pytest.mark.desktop


async def run(task_path: Path, agent_spec: str, store: Store) -> EpisodeResult:
    task = load_task(task_path)
    async with LocalDesktop() as desktop:
        runner = EpisodeRunner(
            task, desktop, make_agent(agent_spec, task), SimulatedUser(), store, backend="local"
        )
        return await runner.run()


def test_the_library_has_every_level_and_trigger() -> None:
    tasks = [load_task(p) for p in KDENLIVE_TASKS]
    assert {t.level for t in tasks} >= {"L1", "L2", "L3"}
    interactive = [t for t in tasks if t.phases]
    assert len(interactive) >= 3
    triggers = " ".join(str(trigger_to_raw(p.trigger)) for t in interactive for p in t.phases)
    for word in ("agent_done", "agent_ask", "step_count", "any", "all"):
        assert word in triggers, f"no interactive Kdenlive task uses {word}"


@pytest.mark.parametrize("task_path", sample_paths("kdenlive"), ids=lambda p: p.stem)
async def test_reference_solution_scores_one(task_path: Path, tmp_path: Path) -> None:
    with Store(tmp_path / "db.sqlite") as store:
        result = await run(task_path, "reference", store)
        story = episode_story(store, result)
        assert result.status == "finished", story
        assert result.end_reason == "done", story
        assert result.passed is True and result.score == pytest.approx(1.0), story
        phases = store.phases(result.episode_id)
        assert all(p.status == "delivered" for p in phases)


@pytest.mark.parametrize("task_path", sample_paths("kdenlive"), ids=lambda p: p.stem)
async def test_null_agent_scores_zero(task_path: Path, tmp_path: Path) -> None:
    with Store(tmp_path / "db.sqlite") as store:
        result = await run(task_path, "null", store)
        assert result.status == "finished" and result.end_reason == "done"
        assert result.passed is False and result.score == pytest.approx(0.0)
