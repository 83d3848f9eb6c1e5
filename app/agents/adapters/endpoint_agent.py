"""What every agent backed by a model endpoint shares: its client's lifetime, the
step's recorded info, and the endpoint's failures in the agent's terms.

`DeskLoopAgent` (DeskLoop's own tools over /chat/completions) and `AdapterAgent` (a model
family's native format) differ in what they send and read, not in this.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Generic, TypeVar

from app.core.errors import AgentRefused, AgentUnavailable, EndpointRefused, EndpointUnavailable
from app.endpoints.client import EndpointClient, EndpointConfig

T = TypeVar("T")
ConfigT = TypeVar("ConfigT", bound=EndpointConfig)


class EndpointAgent(Generic[ConfigT]):
    """Base of the endpoint-backed agents; subclasses set `config` and open `_client`
    in `start`."""

    config: ConfigT
    _client: EndpointClient | None = None
    _info: dict[str, Any] | None = None

    def endpoint_address(self) -> str:
        """The address named when the endpoint fails."""
        return self.config.base_url

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def step_info(self) -> dict[str, Any] | None:
        return self._info

    def endpoint_failed(self) -> AgentUnavailable | None:
        """Why the endpoint was still failing when the episode's time ran out, if it was."""
        failing = self._client.failing if self._client is not None else None
        if failing is None:
            return None
        return AgentUnavailable(
            f"{self.config.endpoint_name} {self.endpoint_address()} had not answered when "
            f"the time budget ran out; last: {failing}"
        )

    @staticmethod
    async def call(request: Awaitable[T]) -> T:
        """Await an endpoint request, its errors raised as the agent's (see `Agent.decide`)."""
        try:
            return await request
        except EndpointUnavailable as exc:
            raise AgentUnavailable(exc.message) from exc
        except EndpointRefused as exc:
            raise AgentRefused(exc.message) from exc
