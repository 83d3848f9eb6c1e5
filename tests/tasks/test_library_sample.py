"""The library sample (tests/library_sample.py) proven on the real local desktop with
the real apps, as `deskloop tasks verify` proves a task: each task's reference
solution scores 1, the null agent (DONE at once) scores 0, and for web tasks the
untouched start state (FAIL before any action) scores 0 too. The store holds what
happened: a PNG frame per step, each check's outcome, the delivered phases, the final-state
archive, and no integrity flag for a reference that works through the GUI.

One test over every app. The suite's scheduler (tests/suite_plugin.py) runs each app's
part as a unit of its own, so the apps' episodes still spread over the workers.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _pytest.mark import ParameterSet

from app.agents.factory import make_agent
from app.desktops.local.desktop import LocalDesktop
from app.episode.events import EpisodeResult
from app.episode.runner import EpisodeRunner
from app.proving.verify import MODES, Mode, UntouchedAgent, judge, reference_kind
from app.store import Store
from app.tasks.loader import load_task
from app.users.simulated import SimulatedUser
from tests.episode_story import episode_story
from tests.library_sample import SAMPLE, sample_paths

pytestmark = pytest.mark.desktop

# Web tasks also prove their untouched start; for the other apps that mode is proven
# through `tasks verify` itself (tests/proving/test_verify.py).
MODES_OF: dict[str, tuple[Mode, ...]] = {"web": MODES}
PNG = b"\x89PNG\r\n\x1a\n"


def cases() -> list[ParameterSet]:
    """(task file, mode) for every sampled task, with ids `app/task-mode`: the
    scheduler reads the app from the id."""
    return [
        pytest.param(path, mode, id=f"{app}/{path.stem}-{mode}")
        for app in SAMPLE
        for path in sample_paths(app)
        for mode in MODES_OF.get(app, ("reference", "null"))
    ]


async def run(task_path: Path, mode: Mode, store: Store) -> EpisodeResult:
    task = load_task(task_path)
    agent = UntouchedAgent() if mode == "untouched" else make_agent(mode, task)
    async with LocalDesktop() as desktop:
        runner = EpisodeRunner(task, desktop, agent, SimulatedUser(), store, backend="local")
        return await runner.run()


@pytest.mark.parametrize(("task_path", "mode"), cases())
async def test_a_sampled_task_is_proven(task_path: Path, mode: Mode, tmp_path: Path) -> None:
    with Store(tmp_path / "db.sqlite") as store:
        result = await run(task_path, mode, store)
        story = episode_story(store, result)
        ok, why = judge(mode, result)
        assert ok, f"{why}\n{story}"
        if mode == "null":
            # One DONE, plus one more for each phase a DONE delivers (agent_done / any).
            assert result.steps <= 1 + len(load_task(task_path).phases), story
        if mode != "reference":
            return
        assert result.end_reason == "done", story
        assert all(p.status == "delivered" for p in store.phases(result.episode_id)), story
        steps = store.steps(result.episode_id)
        assert [s.idx for s in steps] == list(range(result.steps)) and steps[-1].kind == "done"
        for step in steps:
            assert step.frame is not None
            assert store.frame_path(step.frame).read_bytes()[:8] == PNG
        assert store.checks(result.episode_id), story  # each leaf's outcome is kept
        assert store.get_archive(result.episode_id) is not None
        flags, checked = store.flags(result.episode_id)
        if reference_kind(load_task(task_path)) == "demonstration":
            assert flags == [] and checked, story
        else:  # an oracle's programs are named: its end state is never taken for GUI work
            assert any("in the guest itself" in f.summary for f in flags), story
