"""The scripted agent's `oracle` entry runs a real program through a real guest channel."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from app.agents.base import AgentContext, Observation
from app.agents.reference_script import Oracle, parse_script
from app.agents.scripted import ScriptedAgent
from app.core.actions import Done, Fail
from app.core.commands import CommandResult
from app.core.errors import AgentError
from app.core.frames import Frame
from app.desktops.local.guest import LocalGuest
from app.episode.protocol import Protocol


class GuestProbe:
    """A probe answered by a real local guest channel (no display needed)."""

    def __init__(self, guest: LocalGuest) -> None:
        self.guest = guest

    async def active_window_title(self) -> str:
        return ""

    async def file_exists(self, path: str) -> bool:
        return await self.guest.exists(path)

    async def run(self, argv: list[str], timeout: float) -> CommandResult:
        return await self.guest.run(argv, timeout)


class TitleOnlyProbe:
    async def active_window_title(self) -> str:
        return ""

    async def file_exists(self, path: str) -> bool:
        return False


def _observation() -> Observation:
    protocol = Protocol("Do it.", [], max_steps=10, max_seconds=60)
    pixels = np.zeros((8, 8, 3), np.uint8)
    return Observation(
        frame=Frame(pixels, time.monotonic(), time.time()),
        active_message=protocol.active_message,
        conversation=tuple(protocol.conversation),
        steps_taken=0,
    )


def _guest(tmp_path: Path) -> LocalGuest:
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home)}
    return LocalGuest(home, env, tmp_path, sandbox=None)


async def _decide(agent: ScriptedAgent, probe: object) -> object:
    await agent.start(AgentContext("t", 8, 8, probe))  # type: ignore[arg-type]
    return await agent.decide(_observation())


async def test_oracle_runs_in_the_guest_then_the_script_goes_on(tmp_path: Path) -> None:
    guest = _guest(tmp_path)
    script = parse_script(
        [
            {"oracle": ["sh", "-c", 'echo made > "$HOME/out.txt"']},
            {"wait_for": {"file": "~/out.txt", "timeout": 5}},
            "done",
        ],
        "ref.yaml",
    )
    assert isinstance(script[0], Oracle) and script[0].timeout == 300
    action = await _decide(ScriptedAgent(script), GuestProbe(guest))
    assert isinstance(action, Done)
    assert (tmp_path / "home" / "out.txt").read_text() == "made\n"


async def test_a_failing_oracle_fails_the_agent_with_its_output(tmp_path: Path) -> None:
    script = parse_script(
        [{"oracle": {"run": ["sh", "-c", "echo broken >&2; exit 3"], "timeout": 5}}, "done"],
        "ref.yaml",
    )
    action = await _decide(ScriptedAgent(script), GuestProbe(_guest(tmp_path)))
    assert isinstance(action, Fail)
    assert "ref.yaml: steps[0]" in action.reason and "exited 3: broken" in action.reason


async def test_an_oracle_needs_a_probe_that_can_run_commands() -> None:
    action = await _decide(
        ScriptedAgent(parse_script([{"oracle": ["true"]}], "r")), TitleOnlyProbe()
    )
    assert isinstance(action, Fail) and "cannot run oracle commands" in action.reason


@pytest.mark.parametrize(
    "raw",
    [
        {"oracle": "blender -b x.blend"},  # a shell string, refused
        {"oracle": []},
        {"oracle": {"run": ["true"], "timeout": 0}},
        {"oracle": {"argv": ["true"]}},
    ],
)
def test_bad_oracle_entries_are_refused(raw: object) -> None:
    with pytest.raises(AgentError):
        parse_script([raw], "ref.yaml")


class RecordingProbe(GuestProbe):
    """The real local guest channel, keeping the timeout each command was given."""

    def __init__(self, guest: LocalGuest) -> None:
        super().__init__(guest)
        self.timeouts: list[float] = []

    async def run(self, argv: list[str], timeout: float) -> CommandResult:
        self.timeouts.append(timeout)
        return await super().run(argv, timeout)


async def test_an_oracle_timeout_stretches_with_the_desktops_time_scale(tmp_path: Path) -> None:
    # A VM under software emulation reports time scale 3: Blender's render in the guest
    # takes about that much longer than on the local desktop.
    probe = RecordingProbe(_guest(tmp_path))
    agent = ScriptedAgent(parse_script([{"oracle": {"run": ["true"], "timeout": 40}}], "r"))
    await agent.start(AgentContext("t", 8, 8, probe, time_scale=3))
    await agent.decide(_observation())
    assert probe.timeouts == [120]
