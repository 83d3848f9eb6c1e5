"""A web task with a returned answer, on the real local desktop: the page's
`evaluateTask(id, returned)` receives the DONE's answer over the DevTools pipe, so
the right number passes and a wrong one fails, with the page's own words."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agents.factory import make_agent
from app.desktops.local.desktop import LocalDesktop
from app.episode.events import EpisodeResult
from app.episode.runner import EpisodeRunner
from app.store import Store
from app.tasks.loader import load_task
from app.users.simulated import SimulatedUser
from tests.episode_story import episode_story

ROOT = Path(__file__).resolve().parents[2]
COUNT_TASK = ROOT / "tasks" / "web" / "web-kanban-count-answer.yaml"

pytestmark = pytest.mark.desktop


async def _run_with(answer: str, tmp_path: Path, store: Store) -> EpisodeResult:
    script = tmp_path / "answer.yaml"
    script.write_text(f"steps:\n  - done: {{answer: {answer}}}\n")
    task = load_task(COUNT_TASK)
    async with LocalDesktop() as desktop:
        agent = make_agent(f"scripted:{script}", task)
        runner = EpisodeRunner(task, desktop, agent, SimulatedUser(), store, backend="local")
        return await runner.run()


async def test_a_wrong_answer_fails_and_the_right_one_passes(tmp_path: Path) -> None:
    with Store(tmp_path / "db.sqlite") as store:
        wrong = await _run_with("3", tmp_path, store)
        story = episode_story(store, wrong)
        assert wrong.status == "finished" and wrong.passed is False, story
        page = next(c for c in wrong.checks if c.name == "web_evaluate")
        assert page.passed is False
        assert "returned 3, in progress: 2" in page.evidence, page.evidence
        # The schema holds (an integer), so only the page's verdict fails.
        schema = next(c for c in wrong.checks if c.name == "answer_matches_schema")
        assert schema.passed is True

        text = await _run_with('"two"', tmp_path, store)
        assert text.passed is False
        schema = next(c for c in text.checks if c.name == "answer_matches_schema")
        assert schema.passed is False and "is not of type 'integer'" in schema.evidence

        right = await _run_with("2", tmp_path, store)
        assert right.passed is True and right.score == pytest.approx(1.0)
        # The answer is recorded with the DONE step.
        steps = store.steps(right.episode_id)
        assert steps[-1].action == {"kind": "done", "answer": 2}
