"""Skip replays: a reference's sub-goals are read off its done/expect steps, one can be
left out, and lenient guards pass over what the skipped sub-goal would have made."""

from __future__ import annotations

import time

import numpy as np

from app.agents.base import AgentContext, Observation
from app.agents.reference_script import Script, parse_script
from app.agents.scripted import ScriptedAgent
from app.core.actions import Done, Type
from app.core.frames import Frame
from app.core.validation import validate
from app.episode.protocol import Protocol
from app.proving.prove import skip_script, subgoal_spans

STEPS = [
    {"wait_for": {"window": "^A$"}},
    {"key": "ctrl+o"},
    {"type": "one"},
    "done",
    {"expect": {"message": "second"}},
    {"wait_for": {"window": "^B$", "timeout": 30}},
    {"type": "two"},
    "done",
    {"expect": {"message": "third"}},
    {"type": "three"},
    "done",
]


def script() -> Script:
    return validate(Script, {"steps": STEPS}, "ref.yaml", "reference script")


def test_sub_goals_are_the_steps_between_boundaries() -> None:
    assert [list(r) for r in subgoal_spans(script())] == [[0, 1, 2], [5, 6], [9]]


def test_a_skip_keeps_the_boundaries_and_drops_one_sub_goal() -> None:
    skipped = skip_script(script(), 1)
    assert skipped.steps[:5] == script().steps[:5]
    assert [type(s).__name__ for s in skipped.steps[5:]] == [
        "Done", "ExpectStep", "Type", "Done"]  # fmt: skip


class Titles:
    async def active_window_title(self) -> str:
        return "A"

    async def file_exists(self, path: str) -> bool:
        return False


def observation(text: str) -> Observation:
    protocol = Protocol(text, [], max_steps=50, max_seconds=60)
    frame = Frame(np.zeros((4, 4, 3), np.uint8), time.monotonic(), time.time())
    return Observation(frame, protocol.active_message, tuple(protocol.conversation), 0)


async def test_lenient_guards_pass_over_a_timeout_strict_ones_fail() -> None:
    steps = [{"wait_for": {"window": "^never$", "timeout": 0.2}}, {"type": "x"}, "done"]
    strict = ScriptedAgent(parse_script(steps, "ref.yaml"))
    await strict.start(AgentContext("t", 4, 4, Titles()))
    assert "timed out" in getattr(await strict.decide(observation("go")), "reason", "")
    lenient = ScriptedAgent(parse_script(steps, "ref.yaml"), lenient_guards=True)
    await lenient.start(AgentContext("t", 4, 4, Titles()))
    assert await lenient.decide(observation("go")) == Type("x")
    assert await lenient.decide(observation("go")) == Done()
