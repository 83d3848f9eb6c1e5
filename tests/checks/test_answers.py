"""DONE with an answer: the action's forms, the protocol's returned value, the answer
checks, the task's declared schema, and the agents and the environment that send one.
(A web task scored through `evaluateTask(id, returned)` is in test_web_answers.py.)"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from app.agents.adapters.deskloop.answer import action_from_call, action_from_text
from app.checks.base import CheckState
from app.checks.registry import get_check, run_check
from app.core.actions import (
    Click,
    Done,
    action_to_dict,
    compact_action,
    describe_action,
    parse_action,
)
from app.core.errors import ActionError, TaskError
from app.core.triggers import AgentDone
from app.env.spaces import from_space, to_space
from app.episode.protocol import PhaseSpec, Protocol
from app.tasks.loader import load_task


def test_done_carries_text_or_json_in_every_form() -> None:
    assert parse_action("done") == Done()
    assert parse_action({"done": {"answer": 3}}) == Done(answer=3)
    assert parse_action({"done": {"answer": "Coffee still life"}}) == Done("Coffee still life")
    explicit = action_to_dict(Done(answer={"cards": ["a", "b"]}))
    assert explicit == {"kind": "done", "answer": {"cards": ["a", "b"]}}
    assert parse_action(explicit) == Done(answer={"cards": ["a", "b"]})
    assert compact_action(Done()) == "done"
    assert parse_action(compact_action(Done(answer=[1, 2]))) == Done(answer=[1, 2])
    assert describe_action(Done(answer=2)) == "DONE: 2"
    assert describe_action(Done(answer="yes")) == "DONE: yes"


def test_an_answer_that_is_not_json_or_too_long_is_refused() -> None:
    with pytest.raises(ActionError, match="done takes nothing or"):
        parse_action({"done": {"value": 3}})
    with pytest.raises(ActionError, match="text or JSON"):
        parse_action({"kind": "done", "answer": {1, 2}})
    with pytest.raises(ActionError, match="text or JSON"):
        parse_action({"kind": "done", "answer": float("nan")})
    with pytest.raises(ActionError, match="more than 10000"):
        parse_action({"done": {"answer": "x" * 10_001}})


def _protocol(phases: list[PhaseSpec] | None = None) -> Protocol:
    return Protocol("count the cards", phases or [], max_steps=10, max_seconds=60)


def test_the_returned_value_is_the_answer_of_the_done_that_ended_the_episode() -> None:
    p = _protocol([PhaseSpec("now count again", AgentDone())])
    # The first DONE delivers the phase: its answer is not the returned value.
    p.on_agent(Done(answer=1), 1.0)
    assert p.ended is None and p.returned is None
    p.on_agent(Click(1, 1), 2.0)
    p.on_agent(Done(answer=2), 3.0)
    assert p.ended == "done" and p.returned == 2
    assert p.conversation[-1].text == "DONE: 2"
    silent = _protocol()
    silent.on_agent(Done(), 1.0)
    assert silent.returned is None


def _check(
    name: str, params: Mapping[str, object], answer: object, schema: dict[str, Any] | None = None
) -> bool:
    spec = get_check(name)
    state = CheckState(files={}, assets={}, answer=answer, answer_schema=schema)
    result = run_check(spec, state, spec.parse_params(params))
    return result.passed


def test_answer_equals_compares_text_as_text_and_the_rest_as_json() -> None:
    assert _check("answer_equals", {"value": 2}, 2)
    assert _check("answer_equals", {"value": 2}, 2.0)
    assert not _check("answer_equals", {"value": 2}, "2")
    assert not _check("answer_equals", {"value": 1}, True)
    assert not _check("answer_equals", {"value": 2}, None)
    assert _check("answer_equals", {"value": "Coffee still life"}, " Coffee still life ")
    assert not _check("answer_equals", {"value": "Coffee still life"}, "coffee still life")
    assert _check("answer_equals", {"value": "A", "ignore_case": True}, "a")
    assert _check("answer_equals", {"value": {"n": [1, 2]}}, {"n": [1, 2]})


def test_answer_matches_schema_takes_the_checks_schema_or_the_tasks() -> None:
    assert _check("answer_matches_schema", {}, 2, {"type": "integer"})
    assert not _check("answer_matches_schema", {}, "2", {"type": "integer"})
    assert not _check("answer_matches_schema", {}, None, {"type": "integer"})
    assert not _check("answer_matches_schema", {}, 2)  # no schema anywhere
    own = {"schema": {"type": "array", "items": {"type": "string"}}}
    assert _check("answer_matches_schema", own, ["a"], {"type": "integer"})
    assert not _check("answer_matches_schema", own, [1])


TASK = """\
id: web-x
app: web
level: L1
title: x
instruction: x
setup:
  - open_page: {{site: assets/kanban, page: index.html}}
answer_schema: {schema}
evaluate: {{check: answer_matches_schema}}
"""


def test_a_task_declares_a_json_schema_and_a_broken_one_is_refused(tmp_path: Path) -> None:
    site = tmp_path / "assets" / "kanban"
    site.mkdir(parents=True)
    (site / "index.html").write_text("<title>x</title>")
    good = tmp_path / "web-x.yaml"
    good.write_text(TASK.format(schema="{type: integer, minimum: 0}"))
    assert load_task(good).answer_schema == {"type": "integer", "minimum": 0}
    good.write_text(TASK.format(schema="{type: integr}"))
    with pytest.raises(TaskError, match=r"answer_schema: .*not a JSON schema"):
        load_task(good)


def test_the_model_agent_sends_an_answer_with_done() -> None:
    assert action_from_call("done", '{"answer": 3}') == Done(answer=3)
    assert action_from_call("done", "{}") == Done()
    assert action_from_text('{"action": "done", "answer": "Coffee still life"}') == Done(
        answer="Coffee still life"
    )


def test_the_environment_carries_an_answer_in_the_text_field() -> None:
    kind = 7  # done, in app.env.spaces' fixed order
    assert parse_action(from_space({"kind": kind, "text": ""})) == Done()
    # Text that is JSON is that value, as a person's typed answer is read.
    assert parse_action(from_space({"kind": kind, "text": "2"})) == Done(answer=2)
    assert parse_action(from_space({"kind": kind, "text": '"2"'})) == Done(answer="2")
    assert to_space(Done(answer=[1, 2]))["text"] == "[1, 2]"
    assert to_space(Done())["text"] == ""
