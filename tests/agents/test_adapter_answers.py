"""Every adapter, and the person, can return an answer with DONE, each family in its
own way (provider-shaped answers from tests.fake_providers, served over real HTTP):

- pyautogui: `DONE(answer)`, Agent-S's `agent.done(return_value=...)`, OpenCUA-style
  `computer.terminate(status='success', answer=...)`;
- UI-TARS: `finished(content='...')`;
- Qwen: the `answer` action, then `terminate(status=success)`;
- Anthropic and OpenAI computer use: DeskLoop's `done` tool / function.

Then, per adapter, a task that asks for a number scores 1 with the right answer and 0
with a wrong one (a runner on a still desktop: the answer checks read no screen). The
web page's own verdict, on a real desktop, is in tests/agents/test_adapter_web_answers.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from app.agents.adapters import AdapterAgent
from app.agents.adapters.base import Pointer
from app.agents.adapters.coords import CoordinateContract
from app.agents.adapters.pyautogui_code import read_pyautogui
from app.agents.adapters.uitars import read_uitars
from app.agents.person import parse_command
from app.core.actions import Done, answer_from_text
from app.core.errors import MalformedAction
from app.episode.runner import EpisodeRunner
from app.store import Store
from app.tasks.loader import load_task
from app.users.simulated import SimulatedUser
from tests.agents.test_adapter_agents import config, observation, started
from tests.fake_openai import FakeEndpoint, Reply
from tests.fake_providers import (
    anthropic_reply,
    code_reply,
    computer,
    function_call,
    output_message,
    qwen_reply,
    responses_reply,
    tool_use,
    uitars_reply,
)
from tests.still_desktop import StillDesktop


def contract() -> CoordinateContract:
    return CoordinateContract.make("pixels", (1280, 800), (1280, 800))


# -- text answers ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("2", 2),
        (" 2.5 ", 2.5),
        ('["a", "b"]', ["a", "b"]),
        ('{"n": 1}', {"n": 1}),
        ("true", True),
        ('"2"', "2"),  # quoted: the text 2
        ("Coffee still life", "Coffee still life"),
        ("  2 cards ", "2 cards"),
        ("null", "null"),  # not "no answer": the word itself
        ("NaN", "NaN"),  # not JSON
        ("", None),
        ("   ", None),
    ],
)
def test_a_text_answer_is_json_where_it_reads_as_json(text: str, answer: Any) -> None:
    got = answer_from_text(text)
    assert got == answer and type(got) is type(answer)


# -- each family's way to finish with content -------------------------------------------------


@pytest.mark.parametrize(
    ("code", "done"),
    [
        ("DONE", Done()),
        ("DONE(2)", Done(2)),
        ("DONE('2')", Done(2)),
        ('DONE("Coffee still life")', Done("Coffee still life")),
        ("DONE(answer=['a', 'b'])", Done(["a", "b"])),
        ("DONE(('a', 'b'))", Done(["a", "b"])),
        ("agent.done()", Done()),
        ("agent.done(return_value={'count': 2})", Done({"count": 2})),
        ("agent.done('42')", Done(42)),
        ("computer.terminate(status='success')", Done()),
        ("computer.terminate(status='success', answer='42')", Done(42)),
        ("computer.terminate(status='success', answer='The Coffee one')", Done("The Coffee one")),
    ],
)
def test_pyautogui_done_with_an_answer(code: str, done: Done) -> None:
    text = f"I have the answer.\n```python\n{code}\n```"
    assert read_pyautogui(text, contract(), Pointer()).actions == [done]


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        ("DONE(value=2)", "no argument(s) value"),
        ("agent.done(answer=2)", "no argument(s) answer"),
        ("DONE(1, 2)", "at most 1 positional"),
        ("DONE(len('ab'))", "literal values"),
        ("DONE(b'2')", "done's answer must be text or JSON"),
        ("DONE(2)\npyautogui.click(1, 2)", "comes after the episode's end word"),
    ],
)
def test_pyautogui_answers_that_are_refused(code: str, reason: str) -> None:
    with pytest.raises(MalformedAction, match=re.escape(reason)):
        read_pyautogui(f"```python\n{code}\n```", contract(), Pointer())


def test_uitars_finished_content_is_the_answer() -> None:
    text = "Thought: The board shows two cards in progress.\nAction: finished(content='2')"
    assert read_uitars(text, contract(), Pointer()).actions == [Done(2)]
    quoted = "Thought: Found it.\nAction: finished(content='Coffee \\'still\\' life')"
    assert read_uitars(quoted, contract(), Pointer()).actions == [Done("Coffee 'still' life")]
    with pytest.raises(MalformedAction, match="finished: content must be text"):
        read_uitars("Thought: x\nAction: finished(content=2)", contract(), Pointer())


async def test_qwen_answer_then_terminate_in_one_message_and_in_two() -> None:
    both = Reply(
        body={
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {
                                    "name": "computer_use",
                                    "arguments": json.dumps({"action": "answer", "text": "2"}),
                                },
                            },
                            {
                                "id": "call_2",
                                "type": "function",
                                "function": {
                                    "name": "computer_use",
                                    "arguments": json.dumps(
                                        {"action": "terminate", "status": "success"}
                                    ),
                                },
                            },
                        ],
                    },
                }
            ]
        }
    )
    replies = [
        both,
        # Qwen3-VL's agents answer, are shown the screen again, then terminate.
        qwen_reply({"action": "answer", "text": "Coffee still life"}),
        qwen_reply({"action": "terminate", "status": "success"}),
        # A DONE carries an answer once: the next terminate has none.
        qwen_reply({"action": "terminate", "status": "success"}),
    ]
    with FakeEndpoint(replies) as endpoint:
        agent = await started(config(endpoint, "qwen"))
        assert await agent.decide(observation()) == Done(2)
        assert await agent.decide(observation(1)) == Done("Coffee still life")
        info = agent.step_info()
        assert await agent.decide(observation(2)) == Done()
        await agent.close()
    assert info is not None and info["calls"] == 2 and info["answer"] == "Coffee still life"
    tools = endpoint.received[0].body["tools"]
    assert "answer" in tools[0]["function"]["parameters"]["properties"]["action"]["enum"]
    assert "action=answer" in endpoint.received[0].body["messages"][0]["content"]


async def test_anthropic_done_tool_carries_the_answer_and_a_final_text_does_not() -> None:
    replies = [
        anthropic_reply(tool_use("done", {"answer": 2}), text="Two cards are in progress."),
        anthropic_reply(tool_use("done", {"answer": "Coffee still life"})),
        anthropic_reply(tool_use("done", {})),
        # A summary is not a value a check could compare: no answer.
        anthropic_reply(text="I have counted the cards: 2."),
        anthropic_reply(computer("screenshot")),
    ]
    with FakeEndpoint(replies) as endpoint:
        agent = await started(config(endpoint, "anthropic"))
        got = [await agent.decide(observation(step)) for step in range(4)]
        await agent.close()
    assert got == [Done(2), Done("Coffee still life"), Done(), Done()]
    # The done tool is offered, and its tool use is answered like give_up's.
    body = endpoint.received[1].body
    assert [t["name"] for t in body["tools"]][1:] == ["ask_user", "done", "give_up"]
    result = body["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and result["content"] == "Noted."
    assert "call done with that value as answer" in body["system"]


async def test_openai_cua_done_function_carries_the_answer() -> None:
    replies = [
        responses_reply(function_call("done", {"answer": 2})),
        responses_reply(function_call("done", {"answer": ["interview-01.mp4"]})),
        responses_reply(output_message("There are 2 cards in progress.")),
    ]
    with FakeEndpoint(replies) as endpoint:
        agent = await started(config(endpoint, "openai-cua"))
        got = [await agent.decide(observation(step)) for step in range(3)]
        await agent.close()
    assert got == [Done(2), Done(["interview-01.mp4"]), Done()]
    body = endpoint.received[1].body
    assert [t.get("name") for t in body["tools"][1:]] == ["ask_user", "done", "give_up"]
    assert body["input"][0]["type"] == "function_call_output"


def test_the_person_types_an_answer_with_done() -> None:
    assert parse_command("done") == Done()
    assert parse_command("done 2") == Done(2)
    assert parse_command("DONE  Coffee still life ") == Done("Coffee still life")
    assert parse_command('done ["a", "b"]') == Done(["a", "b"])
    assert parse_command('done "2"') == Done("2")


# -- a task that asks for a number, through every adapter -------------------------------------

COUNT_TASK = """\
id: adapter-count-answer
app: gimp
level: L1
title: Count the cards
instruction: How many cards are in progress? Answer with the number when you are done.
answer_schema: {type: integer}
budget: {steps: 4, seconds: 120}
evaluate:
  all:
    - {check: answer_equals, value: 2}
"""

ANSWERS: dict[str, Callable[[str], list[Reply]]] = {
    "pyautogui": lambda v: [code_reply(f"computer.terminate(status='success', answer='{v}')")],
    "uitars": lambda v: [uitars_reply(f"finished(content='{v}')")],
    "qwen": lambda v: [
        qwen_reply({"action": "answer", "text": v}),
        qwen_reply({"action": "terminate", "status": "success"}),
    ],
    "anthropic": lambda v: [anthropic_reply(tool_use("done", {"answer": json.loads(v)}))],
    "openai-cua": lambda v: [responses_reply(function_call("done", {"answer": json.loads(v)}))],
}


@pytest.mark.parametrize("adapter", list(ANSWERS))
async def test_every_adapter_scores_the_right_answer_1_and_a_wrong_one_0(
    adapter: str, tmp_path: Path
) -> None:
    (tmp_path / "adapter-count-answer.yaml").write_text(COUNT_TASK)
    task = load_task(tmp_path / "adapter-count-answer.yaml")
    scores = {}
    with Store(tmp_path / "db.sqlite") as store:
        for said in ("2", "3"):
            with FakeEndpoint(ANSWERS[adapter](said)) as endpoint:
                agent = AdapterAgent(config(endpoint, adapter))
                runner = EpisodeRunner(
                    task, StillDesktop(), agent, SimulatedUser(), store, backend="local"
                )
                result = await runner.run()
            assert result.status == "finished" and result.end_reason == "done", result.error
            steps = store.steps(result.episode_id)
            # Returned as the number, whichever way the family wrote it.
            assert steps[-1].action == {"kind": "done", "answer": int(said)}
            scores[said] = (result.passed, result.score, result.checks[0].evidence)
    assert scores["2"][0] is True and scores["2"][1] == pytest.approx(1.0), scores
    assert scores["3"][0] is False and scores["3"][1] == pytest.approx(0.0), scores
    assert scores["3"][2] == "answer 3, expected 2"
