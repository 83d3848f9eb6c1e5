"""The null agent: claims DONE at once. Every shipped task must score 0 with it."""

from __future__ import annotations

from typing import Any

from app.agents.base import AgentContext, Observation
from app.core.actions import Action, Done


class NullAgent:
    name = "null"

    async def start(self, context: AgentContext) -> None:
        return None

    async def decide(self, observation: Observation) -> Action:
        return Done()

    def step_info(self) -> dict[str, Any] | None:
        return None

    async def close(self) -> None:
        return None
