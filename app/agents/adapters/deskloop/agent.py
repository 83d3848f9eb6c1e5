"""The agent loop: each step, the screenshot and the episode so far go to the endpoint
through the shared `EndpointClient`, and its answer comes back as an action on the
real screen."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from app.agents.adapters.deskloop.answer import read_answer
from app.agents.adapters.deskloop.config import DeskLoopConfig
from app.agents.adapters.deskloop.prompt import Turn, request_messages, tool_definitions
from app.agents.adapters.deskloop.screen import on_screen, pixels_contract
from app.agents.adapters.endpoint_agent import EndpointAgent
from app.agents.base import AgentContext, Observation
from app.core.actions import Action, describe_action
from app.core.errors import ActionError, AgentError, MalformedAction
from app.core.frames import png_data_url
from app.endpoints.client import Completion, EndpointClient


class DeskLoopAgent(EndpointAgent[DeskLoopConfig]):
    """An `Agent` backed by an OpenAI-compatible /chat/completions endpoint."""

    def __init__(
        self, config: DeskLoopConfig, *, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self.config = config
        self.name = f"openai:{config.model}"
        self._transport = transport
        self._client: EndpointClient | None = None
        self._context: AgentContext | None = None
        self._history: list[Turn] = []
        self._info: dict[str, Any] | None = None

    def record(self) -> dict[str, Any]:
        """The settings recorded in the episode's config (never the key)."""
        return {"agent_config": {"adapter": "deskloop", **self.config.public()}}

    @property
    def url(self) -> str:
        return self.config.url

    async def start(self, context: AgentContext) -> None:
        self._context = context
        self._history = []
        self._info = None
        if self._client is None:
            self._client = EndpointClient(self.config, transport=self._transport)

    def endpoint_address(self) -> str:
        return self.config.url

    async def decide(self, observation: Observation) -> Action:
        if self._client is None or self._context is None:
            raise AgentError("openai agent: decide() before start()")
        config = self.config
        frame = observation.frame
        screen = (frame.width, frame.height)
        contract = pixels_contract(screen, (config.image_width, config.image_height))
        sent = contract.sent
        image_url = await asyncio.to_thread(png_data_url, frame.pixels, size=sent, compress_level=3)
        recent = self._history[-config.history :]
        messages = request_messages(observation, recent, sent, image_url, config.tool_mode)
        info: dict[str, Any] = {"model": config.model, "mode": config.tool_mode}
        self._info = info
        completion = await self._complete(messages)
        raw_usage = completion.data.get("usage")
        usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
        info.update(
            {
                "latency_s": round(completion.latency, 4),
                "retries": completion.retries,
                "prompt_tokens": usage.get("prompt_tokens"),
                "completion_tokens": usage.get("completion_tokens"),
                "total_tokens": usage.get("total_tokens"),
                "sent_size": list(sent),
                "screen_size": list(screen),
            }
        )
        try:
            action = on_screen(contract, read_answer(completion.data, info))
        except ActionError as exc:
            rejected = MalformedAction(str(exc), info.get("tool_call"))
            raise self._rejected(observation, rejected) from None
        except MalformedAction as exc:
            raise self._rejected(observation, exc) from None
        self._history.append(Turn(observation.steps_taken, describe_action(action)))
        return action

    async def _complete(self, messages: list[dict[str, Any]]) -> Completion:
        """The endpoint's answer, its errors in the agent's terms (see `Agent.decide`)."""
        assert self._client is not None
        extra: dict[str, Any] = {}
        if self.config.tool_mode == "tools":
            extra = {"tools": tool_definitions(), "tool_choice": "auto"}
        return await self.call(self._client.complete(messages, **extra))

    def _rejected(self, observation: Observation, exc: MalformedAction) -> MalformedAction:
        self._history.append(Turn(observation.steps_taken, "(rejected answer)", exc.message))
        assert self._info is not None
        self._info["rejected"] = exc.message
        return exc
