"""Every web task is proven on the real local desktop with the real Chromium: its
reference solution (a GUI demonstration over VNC) scores 1, and the null agent and
the untouched start state score 0. Scoring goes through the page
contract (`evaluateTask`) over the browser's private DevTools pipe."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agents.factory import make_agent
from app.core.triggers import trigger_to_raw
from app.desktops.local.desktop import LocalDesktop
from app.episode.events import EpisodeResult
from app.episode.runner import EpisodeRunner
from app.proving.verify import MODES, Mode, UntouchedAgent, judge
from app.store import Store
from app.tasks.loader import load_task
from app.tasks.model import OpenPageStep
from app.users.simulated import SimulatedUser
from tests.episode_story import episode_story
from tests.library_sample import sample_paths

ROOT = Path(__file__).resolve().parent.parent
WEB_TASKS = sorted((ROOT / "tasks" / "web").glob("*.yaml"))

pytestmark = pytest.mark.desktop


async def run(task_path: Path, mode: Mode, store: Store) -> EpisodeResult:
    task = load_task(task_path)
    agent = UntouchedAgent() if mode == "untouched" else make_agent(mode, task)
    async with LocalDesktop() as desktop:
        runner = EpisodeRunner(task, desktop, agent, SimulatedUser(), store, backend="local")
        return await runner.run()


def test_the_library_has_every_level_and_interactive_tasks() -> None:
    tasks = [load_task(p) for p in WEB_TASKS]
    assert {t.level for t in tasks} >= {"L1", "L2", "L3"}
    sites = {s.open_page.site for t in tasks for s in t.setup if isinstance(s, OpenPageStep)}
    assert len(sites) >= 3, sites
    interactive = [t for t in tasks if t.phases]
    assert len(interactive) >= 3
    triggers = " ".join(str(trigger_to_raw(p.trigger)) for t in interactive for p in t.phases)
    assert "agent_done" in triggers


# One parametrised test per task and mode, like `deskloop tasks verify`: the reference
# scores 1; the null agent (DONE at once) and the untouched start (FAIL before any
# action, so no phase is delivered) score 0.
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("task_path", sample_paths("web"), ids=lambda p: p.stem)
async def test_each_task_is_proven(task_path: Path, mode: Mode, tmp_path: Path) -> None:
    with Store(tmp_path / "db.sqlite") as store:
        result = await run(task_path, mode, store)
        story = episode_story(store, result)
        ok, why = judge(mode, result)
        assert ok, f"{why}\n{story}"
        if mode == "reference":
            assert result.end_reason == "done", story
            phases = store.phases(result.episode_id)
            assert all(p.status == "delivered" for p in phases), story
