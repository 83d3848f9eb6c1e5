"""A web task with a returned answer, through every adapter on the real local desktop:
the model's answer, in its family's own format (pyautogui's `computer.terminate(...,
answer=...)`, UI-TARS's `finished(content=...)`, Qwen's `answer` then `terminate`, the
`done` tool of Anthropic's and OpenAI's computer-use conversations), reaches the page's
`evaluateTask(id, returned)` over the DevTools pipe and `answer_equals`; the right
photo name scores 1 and a wrong one 0, with the page's own words.

The model's answers come from a local fake endpoint (tests.fake_providers): what is
under test is the path from the family's answer to the page's verdict, not a model.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from app.agents.adapters import AdapterAgent
from app.desktops.local.desktop import LocalDesktop
from app.episode.runner import EpisodeRunner
from app.store import Store
from app.tasks.loader import load_task
from app.users.simulated import SimulatedUser
from tests.agents.test_adapter_agents import config
from tests.episode_story import episode_story
from tests.fake_openai import FakeEndpoint, Reply
from tests.fake_providers import (
    anthropic_reply,
    code_reply,
    function_call,
    qwen_reply,
    responses_reply,
    tool_use,
    uitars_reply,
)

ROOT = Path(__file__).resolve().parents[2]
CHEAPEST_TASK = ROOT / "tasks" / "web" / "web-photostore-cheapest-answer.yaml"
RIGHT, WRONG = "Coffee still life", "Desert road at dusk"

pytestmark = pytest.mark.desktop

ANSWERS: dict[str, Callable[[str], list[Reply]]] = {
    "pyautogui": lambda name: [
        code_reply(f"computer.terminate(status='success', answer='{name}')")
    ],
    "uitars": lambda name: [
        uitars_reply(f"finished(content='{name}')", thought="The cheapest extended license.")
    ],
    "anthropic": lambda name: [
        anthropic_reply(tool_use("done", {"answer": name}), text="I found the photo.")
    ],
    "qwen": lambda name: [
        qwen_reply({"action": "answer", "text": name}),
        qwen_reply({"action": "terminate", "status": "success"}),
    ],
    "openai-cua": lambda name: [responses_reply(function_call("done", {"answer": name}))],
}


async def test_a_web_answer_through_every_adapter_scores_1_right_and_0_wrong(
    tmp_path: Path,
) -> None:
    task = load_task(CHEAPEST_TASK)
    results = {}
    with Store(tmp_path / "db.sqlite") as store:
        # One desktop for all the episodes: each episode's setup opens the page and
        # resets it, as a batch reuses a desktop.
        async with LocalDesktop() as desktop:
            for adapter, replies in ANSWERS.items():
                for name in (RIGHT, WRONG):
                    with FakeEndpoint(replies(name)) as endpoint:
                        agent = AdapterAgent(config(endpoint, adapter))
                        runner = EpisodeRunner(
                            task, desktop, agent, SimulatedUser(), store, backend="local"
                        )
                        result = await runner.run()
                    story = episode_story(store, result)
                    assert result.status == "finished", story
                    assert store.steps(result.episode_id)[-1].action == {
                        "kind": "done",
                        "answer": name,
                    }, story
                    results[adapter, name] = result
    for adapter in ANSWERS:
        right, wrong = results[adapter, RIGHT], results[adapter, WRONG]
        assert right.passed is True and right.score == pytest.approx(1.0), adapter
        assert wrong.passed is False and wrong.score == pytest.approx(0.0), adapter
        page = next(c for c in wrong.checks if c.name == "web_evaluate")
        assert page.passed is False and f'returned "{WRONG}"' in page.evidence, page.evidence
        page = next(c for c in right.checks if c.name == "web_evaluate")
        assert page.passed is True and f'returned "{RIGHT}"' in page.evidence, page.evidence
