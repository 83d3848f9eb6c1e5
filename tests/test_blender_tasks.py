"""Every Blender task is proven on a real local desktop with the real Blender.

Its reference solution (a GUI demonstration replayed over VNC, or for L3 an oracle
made with Blender's own scripting) scores 1; the null agent, which says DONE at
once, scores 0. Scoring runs the real `blender_scene` probe in the guest. The
task library itself is checked too: at least 10 tasks across L1, L2 and L3, at
least 3 interactive ones that together use every trigger and both compositions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from app.agents.factory import make_agent
from app.desktops.local.desktop import LocalDesktop
from app.episode.events import EpisodeResult
from app.episode.runner import EpisodeRunner
from app.store import Store
from app.tasks.loader import load_task
from app.users.simulated import SimulatedUser
from tests.episode_story import episode_story
from tests.library_sample import sample_paths

ROOT = Path(__file__).resolve().parent.parent
BLENDER_TASKS = sorted((ROOT / "tasks" / "blender").glob("*.yaml"))


async def run(task_path: Path, agent_spec: str, store: Store) -> EpisodeResult:
    task = load_task(task_path)
    async with LocalDesktop() as desktop:
        runner = EpisodeRunner(
            task, desktop, make_agent(agent_spec, task), SimulatedUser(), store, backend="local"
        )
        return await runner.run()


def _why(result: EpisodeResult) -> str:
    return f"{result.error or ''} {[c.evidence for c in result.checks]}"


@pytest.mark.desktop
@pytest.mark.parametrize("task_path", sample_paths("blender"), ids=lambda p: p.stem)
async def test_reference_solution_scores_one(task_path: Path, tmp_path: Path) -> None:
    with Store(tmp_path / "db.sqlite") as store:
        result = await run(task_path, "reference", store)
        story = episode_story(store, result)
        assert result.status == "finished", story
        assert result.end_reason == "done", story
        assert result.passed is True and result.score == pytest.approx(1.0), story
        task = load_task(task_path)
        delivered = [p.status for p in store.phases(result.episode_id)]
        assert delivered == ["delivered"] * len(task.phases)


@pytest.mark.desktop
@pytest.mark.parametrize("task_path", sample_paths("blender"), ids=lambda p: p.stem)
async def test_null_agent_scores_zero(task_path: Path, tmp_path: Path) -> None:
    with Store(tmp_path / "db.sqlite") as store:
        result = await run(task_path, "null", store)
        assert result.status == "finished", _why(result)
        assert result.passed is False and result.score == pytest.approx(0.0), _why(result)


def _triggers(trigger: Any) -> set[str]:
    if isinstance(trigger, str):
        return {trigger}
    ((key, value),) = trigger.items()
    if key in ("any", "all"):
        return {key}.union(*(_triggers(t) for t in value))
    return {key}


def test_the_library_covers_levels_and_interaction() -> None:
    tasks = [load_task(p) for p in BLENDER_TASKS]
    assert len(tasks) >= 10
    assert {t.app for t in tasks} == {"blender"}
    assert {t.level for t in tasks} == {"L1", "L2", "L3"}
    interactive = [t for t in tasks if t.phases]
    assert len(interactive) >= 3
    used: set[str] = set()
    for path in BLENDER_TASKS:
        raw = yaml.safe_load(path.read_text())
        for phase in raw.get("phases") or []:
            used |= _triggers(phase["trigger"])
    assert used >= {"agent_done", "agent_ask", "step_count", "any", "all"}, used
    for path in BLENDER_TASKS:
        raw = yaml.safe_load(path.read_text())
        ref = yaml.safe_load((path.parent / raw["reference"]).read_text())
        # L3 workflows may be proven by an oracle; L1 and L2 by a GUI demonstration.
        expected = {"demonstration", "oracle"} if raw["level"] == "L3" else {"demonstration"}
        assert ref["kind"] in expected, path.name
