"""A person as the agent: they drive the desktop through a VNC viewer, for baselines.

The person's viewer connects to the episode's `PersonInput` (app.rfb.person: a
recording proxy on 127.0.0.1 with its own password) in front of the desktop's VNC
server; the TUI's live view sends its clicks and keys through the same proxy. Their
input reaches the desktop live; the proxy's `InputRecorder` turns it into protocol
actions, in order, which this agent hands to the episode runner one per step, so a
human episode is recorded exactly like a model's: steps with actions and frames,
messages, phases, score.
DONE (with an answer, when the person types one) / ASK / FAIL come from `command()`
(the CLI reads them from stdin).

Because the input already reached the desktop, the runner must not send it a
second time: `app.episode.launch` runs the episode on
`app.desktops.pass_through.PassThroughDesktop(desktop)`, whose `act` only records.
Frames are taken when the runner asks for the next action, so a step's frame shows the
screen shortly after the person's previous action.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from app.agents.base import AgentContext, Observation
from app.core.actions import Action, Ask, Done, Fail, GuiAction, answer_from_text
from app.core.errors import AgentError
from app.desktops.base import Desktop
from app.rfb.person import PersonInput
from app.rfb.proxy import ProxyAddress

COMMANDS_HELP = "done [ANSWER] | ask QUESTION | fail REASON"


def parse_command(line: str) -> Action:
    """'done', 'done 2', 'ask Which size?', 'fail cannot find it' → the protocol action.

    What follows `done` is the DONE's answer, for a task that asks for a value: read
    as JSON where it is JSON (`done 2` returns the number 2, `done ["a", "b"]` a list,
    `done "2"` the text 2), else as the text typed (`done Coffee still life`).

    Raises:
        ValueError: not one of the commands (the message lists them).
    """
    word, _, rest = line.strip().partition(" ")
    word, rest = word.lower(), rest.strip()
    if word == "done":
        return Done(answer_from_text(rest))
    if word == "ask" and rest:
        return Ask(rest)
    if word == "fail":
        return Fail(rest or "given up by the person")
    raise ValueError(f"unknown command {line.strip()!r}; commands: {COMMANDS_HELP}")


class PersonAgent:
    """An `Agent` fed by a person's VNC viewer (through the proxy) and commands."""

    name = "person"

    def __init__(
        self,
        desktop: Desktop,
        *,
        port: int = 0,
        announce: Callable[[ProxyAddress], None] | None = None,
    ) -> None:
        self._desktop = desktop
        self._port = port
        self._announce = announce
        self._actions: asyncio.Queue[tuple[Action, str]] = asyncio.Queue()
        self._input: PersonInput | None = None
        self._info: dict[str, Any] | None = None

    def _put(self, action: Action, source: str) -> None:
        self._actions.put_nowait((action, source))

    @property
    def address(self) -> ProxyAddress | None:
        return None if self._input is None else self._input.address

    @property
    def input(self) -> PersonInput | None:
        """The person's way in (started with the agent): viewers and the live view."""
        return self._input

    async def start(self, context: AgentContext) -> None:
        endpoint = self._desktop.info().vnc
        if endpoint is None:
            raise AgentError("person agent: the desktop has no VNC endpoint to proxy")
        if self._input is None:
            self._input = PersonInput(
                endpoint, lambda action: self._put(action, "proxy"), port=self._port
            )
            address = await self._input.start()
            if self._announce is not None:
                self._announce(address)

    def perform(self, action: GuiAction) -> None:
        """One action of the person's made from the TUI's live view: sent through the
        proxy after the ones before it, and recorded there as a viewer's would be.

        Raises:
            AgentError: the agent has not started (there is no proxy yet).
        """
        if self._input is None:
            raise AgentError("person agent: not started; its input proxy is not up yet")
        self._input.submit(action)

    def command(self, line: str) -> Action:
        """Queue DONE / ASK / FAIL after the input already made; returns the action.

        Raises:
            ValueError: not a command.
        """
        action = parse_command(line)
        if self._input is None:
            self._put(action, "command")
        else:
            # After the input the person gave before it: DONE follows their typing.
            self._input.after_input(lambda: self._put(action, "command"))
        return action

    async def decide(self, observation: Observation) -> Action:
        action, source = await self._actions.get()
        self._info = {"source": source}
        if self._input is not None:
            errors = [*self._input.proxy.errors, *self._input.errors]
            if errors:
                self._info["proxy_errors"] = errors
                self._input.proxy.errors.clear()
                self._input.errors.clear()
        return action

    def step_info(self) -> dict[str, Any] | None:
        return self._info

    async def close(self) -> None:
        if self._input is not None:
            await self._input.close()
            self._input = None
