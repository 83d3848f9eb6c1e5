"""`wait_for.resend_every`: the scripted agent sends the previous GUI action again while
an app that drops input when busy has not reacted, and the guard's timeout still counts
from its first check."""

from __future__ import annotations

import time

import numpy as np
import pytest

from app.agents.base import AgentContext, Observation
from app.agents.reference_script import parse_script
from app.agents.scripted import ScriptedAgent
from app.core.actions import Done, Fail, Key
from app.core.errors import AgentError
from app.core.frames import Frame
from app.episode.protocol import Protocol


class TitleProbe:
    """The focused window's title, as the test's pretend app sets it."""

    def __init__(self) -> None:
        self.title = "harbour-edit / Kdenlive"

    async def active_window_title(self) -> str:
        return self.title

    async def file_exists(self, path: str) -> bool:
        return False


def _observation() -> Observation:
    protocol = Protocol("Do it.", [], max_steps=50, max_seconds=60)
    return Observation(
        frame=Frame(np.zeros((8, 8, 3), np.uint8), time.monotonic(), time.time()),
        active_message=protocol.active_message,
        conversation=tuple(protocol.conversation),
        steps_taken=0,
    )


SCRIPT = [
    {"key": "v"},
    {"wait_for": {"window": r"^harbour-edit \*", "timeout": 5, "resend_every": 0.05}},
    "done",
]


async def test_the_action_is_resent_until_the_app_reacts() -> None:
    probe = TitleProbe()
    agent = ScriptedAgent(parse_script(SCRIPT, "script"))
    await agent.start(AgentContext("t", 8, 8, probe))
    received = 0
    actions = []
    while True:
        action = await agent.decide(_observation())
        actions.append(action)
        if isinstance(action, Key):
            received += 1
            if received == 3:  # the app ignored the first two presses
                probe.title = "harbour-edit * / Kdenlive"
        else:
            break
    assert actions == [Key("v"), Key("v"), Key("v"), Done()]


async def test_no_resend_once_the_condition_holds() -> None:
    probe = TitleProbe()
    probe.title = "harbour-edit * / Kdenlive"
    agent = ScriptedAgent(parse_script(SCRIPT, "script"))
    await agent.start(AgentContext("t", 8, 8, probe))
    assert await agent.decide(_observation()) == Key("v")
    assert await agent.decide(_observation()) == Done()


async def test_the_timeout_counts_from_the_first_check_across_resends() -> None:
    script = [
        {"key": "v"},
        {"wait_for": {"window": "never", "timeout": 0.5, "resend_every": 0.1}},
        "done",
    ]
    agent = ScriptedAgent(parse_script(script, "script"))
    await agent.start(AgentContext("t", 8, 8, TitleProbe()))
    resends = -1  # the first Key is the script's own
    while isinstance(action := await agent.decide(_observation()), Key):
        resends += 1
    assert isinstance(action, Fail) and "timed out after 0.5 s" in action.reason
    # A timeout restarted by each resend would never end; one counted from the first
    # check allows about timeout / resend_every resends.
    assert 1 <= resends <= 6


@pytest.mark.parametrize(
    ("script", "problem"),
    [
        ([{"wait_for": {"window": "x", "resend_every": 1}}], "needs a GUI action"),
        (["done", {"wait_for": {"window": "x", "resend_every": 1}}], "needs a GUI action"),
        ([{"key": "v"}, {"wait_for": {"window": "x", "resend_every": 0}}], "positive"),
        ([{"key": "v"}, {"wait_for": {"window": "x", "resend_every": "often"}}], "positive"),
    ],
)
def test_bad_resend_every_is_refused_naming_the_step(script: list[object], problem: str) -> None:
    with pytest.raises(AgentError, match=problem) as info:
        parse_script(script, "ref.yaml")
    assert "ref.yaml: steps[" in str(info.value)


async def test_waits_stretch_by_the_desktops_time_scale() -> None:
    script = [
        {"key": "v"},
        {"wait_for": {"window": "never", "timeout": 0.1, "resend_every": 0.05}},
        "done",
    ]
    agent = ScriptedAgent(parse_script(script, "script"))
    # A desktop three times slower than native (a guest under software emulation).
    await agent.start(AgentContext("t", 8, 8, TitleProbe(), time_scale=3.0))
    resends = -1
    while isinstance(action := await agent.decide(_observation()), Key):
        resends += 1
    assert isinstance(action, Fail) and "timed out after 0.3 s" in action.reason
    assert 1 <= resends <= 2  # resent every 0.15 s, not every 0.05 s
