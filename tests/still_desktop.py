"""A desktop that needs no display: a still black screen and a guest with no files.

It stands in for a real desktop where a test is about the runner and the store, not
about what happens on a screen; every check that reads a file fails on it. Beside it,
`QuietAgent`: the parts of a test's agent that do nothing.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import numpy as np

from app.agents.base import AgentContext
from app.core.actions import GuiAction
from app.core.commands import CommandResult
from app.core.errors import GuestError
from app.core.frames import Frame, SettleResult
from app.desktops.base import DesktopInfo


class EmptyGuest:
    home = "/home/user"

    async def run(self, argv: list[str], timeout: float = 30.0) -> CommandResult:
        return CommandResult(tuple(argv), 1, b"", b"this guest runs nothing")

    async def launch(self, argv: list[str]) -> None:
        raise GuestError("this guest launches nothing")

    async def read_file(self, path: str, max_bytes: int = 64 * 1024 * 1024) -> bytes:
        raise GuestError(f"{path}: no such file")

    async def write_file(self, path: str, data: bytes) -> None:
        raise GuestError("this guest writes nothing")

    async def exists(self, path: str) -> bool:
        return False


class StillDesktop:
    guest = EmptyGuest()

    def info(self) -> DesktopInfo:
        return DesktopInfo(name="still", backend="local", state="running", width=64, height=48)

    async def reset(self) -> None:
        return None

    async def frame(self, timeout: float = 5.0) -> Frame:
        return Frame(np.zeros((48, 64, 3), np.uint8), time.monotonic(), time.time())

    async def act(self, action: GuiAction) -> None:
        return None

    async def settle(
        self,
        timeout: float = 3.0,
        quiet: float = 0.1,
        change_wait: float = 0.3,
        *,
        adaptive: bool = False,
    ) -> SettleResult:
        return SettleResult(False, True, 0.0)

    async def until_dead(self) -> str:
        await asyncio.Event().wait()  # it never dies
        return "never"

    async def close(self) -> None:
        return None


class QuietAgent:
    """An agent's parts that do nothing: starting, step information, closing. A test's
    agent subclasses it and writes only what it decides (and what else it must do)."""

    async def start(self, context: AgentContext) -> None:
        return None

    def step_info(self) -> dict[str, Any] | None:
        return None

    async def close(self) -> None:
        return None
