"""The Agent contract: observe, decide, act.

An agent gets an `Observation` per step and returns one action of the protocol
(a GUI action, DONE, ASK or FAIL). Model agents, scripted replays and people all
fit this shape. `AgentContext.probe` gives privileged read access to the desktop
(window titles, file existence, the screen); only scripted reference solutions use it, to wait
on meaning ("the Export dialog is open") instead of on time.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from app.core.actions import Action
from app.core.commands import CommandResult
from app.core.conversation import Message
from app.core.errors import AgentUnavailable
from app.core.frames import Frame
from app.desktops.base import Desktop
from app.desktops.xwindows import active_window_title


@dataclass(frozen=True)
class Observation:
    frame: Frame
    active_message: Message
    conversation: tuple[Message, ...]
    """Every message so far, first instruction included, oldest first."""
    steps_taken: int


class Probe(Protocol):
    """Read-only questions about the live desktop, for privileged (scripted) agents."""

    async def active_window_title(self) -> str:
        """The focused window's title, '' when none."""
        ...

    async def file_exists(self, path: str) -> bool: ...


@runtime_checkable
class CommandProbe(Protocol):
    """A probe that can also run a program in the desktop's guest: what an `oracle`
    reference (an app's own scripting producing the end state) needs."""

    async def run(self, argv: list[str], timeout: float) -> CommandResult:
        """Run argv in the guest (never a shell string).

        Raises:
            GuestError: the program could not start or ran past `timeout`.
        """
        ...


@runtime_checkable
class FrameProbe(Protocol):
    """A probe that can also read the screen: what an image-anchor guard needs."""

    async def frame(self) -> Frame: ...


class GuestProbe:
    """The `Probe` and `CommandProbe` of a live desktop, answered through its guest channel:
    what the runner gives privileged (scripted) agents."""

    def __init__(self, desktop: Desktop) -> None:
        self._desktop = desktop

    async def active_window_title(self) -> str:
        return await active_window_title(self._desktop.guest)

    async def file_exists(self, path: str) -> bool:
        return await self._desktop.guest.exists(path)

    async def run(self, argv: list[str], timeout: float) -> CommandResult:
        return await self._desktop.guest.run(argv, timeout)

    async def frame(self) -> Frame:
        return await self._desktop.frame()


KeepImage = Callable[[str, "npt.NDArray[np.uint8]"], Awaitable[str | None]]


@dataclass(frozen=True)
class AgentContext:
    task_id: str
    screen_width: int
    screen_height: int
    probe: Probe
    time_scale: float = 1.0
    """The desktop's `DesktopInfo.time_scale`: scripted waits stretch by it."""
    keep_image: KeepImage | None = None
    """Keeps an image with the episode (a PNG beside its frames) and returns its path:
    what a scripted agent shows of an anchor it did not find. None: not recorded."""


@runtime_checkable
class CallsEndpoint(Protocol):
    """An agent whose decisions are calls to a model endpoint (the model agent)."""

    def endpoint_failed(self) -> AgentUnavailable | None:
        """After a decision was cut short (the time budget ran out during it): the
        error to end the episode with when its endpoint had already failed in that
        call (a try timed out, a 5xx, a refused connection), so the endpoint, not the
        agent, is why no answer came; None when the endpoint was only slow."""
        ...


@runtime_checkable
class RecordsSettings(Protocol):
    """An agent whose settings are worth recording in the episode's config (a model
    agent: its adapter, endpoint, model and coordinate contract; never a key)."""

    def record(self) -> dict[str, Any]:
        """Keys and values merged into the episode's `config` JSON."""
        ...


class Agent(Protocol):
    name: str

    async def start(self, context: AgentContext) -> None:
        """Called once at the start of each episode, after setup."""
        ...

    async def decide(self, observation: Observation) -> Action:
        """The next action.

        Raises:
            MalformedAction: the answer was not a usable action; the step is recorded
                as rejected with the reason and the agent is asked again.
            AgentUnavailable: the agent's backend failed (the episode ends as error).
            AgentError: any other failure (the episode ends as error).
        """
        ...

    def step_info(self) -> dict[str, Any] | None:
        """What to record about the last decision (tokens, latency, raw answer), or None."""
        ...

    async def close(self) -> None: ...
