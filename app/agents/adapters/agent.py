"""The model agent behind an adapter: each decision, the screenshot made for the
adapter's coordinate contract goes to the endpoint in the family's wire format, and the
answer comes back as DeskLoop actions.

One answer may hold several actions (a pyautogui block, Anthropic's parallel tool
calls, OpenAI's batched actions): they are taken one per step, without asking the
model again, unless a new user message arrives first (then the rest are dropped and
the model sees the message). An answer that only looks (a screenshot, the cursor
position, Qwen3's `answer`) is answered at once with the same screen, at most
`MAX_LOOKS` times in one decision, taking no step.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from app.agents.adapters.anthropic import AnthropicFamily
from app.agents.adapters.base import Family, Pointer, Shot
from app.agents.adapters.chat import ChatFamily
from app.agents.adapters.config import AdapterConfig
from app.agents.adapters.coords import CoordinateContract
from app.agents.adapters.endpoint_agent import EndpointAgent
from app.agents.adapters.openai_cua import OpenAICUAFamily
from app.agents.base import AgentContext, Observation
from app.core.actions import Action, describe_action
from app.core.errors import (
    ActionError,
    AgentError,
    MalformedAction,
)
from app.core.frames import png_base64
from app.endpoints.client import Completion, EndpointClient

MAX_LOOKS = 3
"""Answers in a row that only look before the decision is refused."""


def make_family(config: AdapterConfig) -> Family:
    if config.adapter == "anthropic":
        return AnthropicFamily(config)
    if config.adapter == "openai-cua":
        return OpenAICUAFamily(config)
    return ChatFamily(config, config.adapter)  # type: ignore[arg-type]


class AdapterAgent(EndpointAgent[AdapterConfig]):
    """An `Agent` speaking one model family's native format (`AdapterConfig.adapter`)."""

    def __init__(
        self, config: AdapterConfig, *, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self.config = config
        self.name = f"{config.adapter}:{config.model}"
        self.family = make_family(config)
        self._transport = transport
        self._client: EndpointClient | None = None
        self._context: AgentContext | None = None
        self._info: dict[str, Any] | None = None
        self._queue: list[Action] = []
        self._queued_from: dict[str, Any] = {}
        self._seen = 0
        """Conversation messages when the queue was filled."""
        self.pointer = Pointer()

    def record(self) -> dict[str, Any]:
        """The agent's settings, recorded in the episode's config (never the key)."""
        return {"agent_config": self.config.public()}

    async def start(self, context: AgentContext) -> None:
        self._context = context
        self._info = None
        self._queue = []
        self.pointer = Pointer()
        self.family.reset()
        if self._client is None:
            self._client = EndpointClient(
                self.config,
                transport=self._transport,
                key_header=self.family.key_header,
            )

    async def decide(self, observation: Observation) -> Action:
        if self._client is None or self._context is None:
            raise AgentError("model agent: decide() before start()")
        if self._queue and len(observation.conversation) > self._seen:
            # The user said something new: the model should see it, and know what of
            # its last answer was not done.
            self.family.dropped(len(self._queue))
            self._queue = []
        if self._queue:
            action = self._queue.pop(0)
            self._info = {**self._queued_from, "queued": True}
            return action
        frame = observation.frame
        row = self.config.format
        contract = CoordinateContract.make(
            self.config.convention,
            (frame.width, frame.height),
            (self.config.image_width, self.config.image_height),
            min_pixels=self.config.min_pixels,
            max_pixels=self.config.max_pixels,
            max_area=row.max_area,
            max_edge=row.max_edge,
        )
        png = await asyncio.to_thread(
            png_base64, frame.pixels, size=contract.sent, compress_level=3
        )
        shot = Shot(contract, png)
        info: dict[str, Any] = {
            "adapter": self.config.adapter,
            "model": self.config.model,
            "coordinates": contract.public(),
            "latency_s": 0.0,
            "retries": 0,
            "calls": 0,
        }
        self._info = info
        for _look in range(MAX_LOOKS + 1):
            completion = await self._post(self.family.request(observation, shot))
            self._count(info, completion)
            try:
                reading = self.family.read(completion.data, shot, self.pointer, info)
            except MalformedAction as exc:
                raise self._rejected(exc) from None
            if reading.actions:
                break
            if not reading.look_again:
                raise self._rejected(MalformedAction("the answer holds no action", completion.data))
        else:
            raise self._rejected(
                MalformedAction(f"the model only looked, {MAX_LOOKS + 1} times, without acting")
            )
        first, *rest = reading.actions
        self._queue = rest
        self._seen = len(observation.conversation)
        if rest:
            info["actions_in_answer"] = [describe_action(a) for a in reading.actions]
            self._queued_from = {
                "adapter": self.config.adapter,
                "model": self.config.model,
                "from_step": observation.steps_taken,
            }
        return first

    def _count(self, info: dict[str, Any], completion: Completion) -> None:
        """Latency, retries and tokens of one call, summed over a decision's calls."""
        info["calls"] += 1
        info["latency_s"] = round(info["latency_s"] + completion.latency, 4)
        info["retries"] += completion.retries
        for key, value in self.family.usage(completion.data).items():
            if isinstance(value, int):
                info[key] = (info.get(key) or 0) + value
            else:
                info.setdefault(key, None)

    async def _post(self, body: dict[str, Any]) -> Completion:
        assert self._client is not None
        return await self.call(self._client.post(self.family.path, body, self.family.headers()))

    def _rejected(self, exc: MalformedAction | ActionError) -> MalformedAction:
        rejected = exc if isinstance(exc, MalformedAction) else MalformedAction(str(exc))
        self.family.rejected(rejected.message)
        assert self._info is not None
        self._info["rejected"] = rejected.message
        return rejected
