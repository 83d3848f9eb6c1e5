"""The model agent's settings: the endpoint's (shared with the LLM user) plus its own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

# Re-exported: the family's package names it from here.
from app.agents.families import ToolMode as ToolMode
from app.core.errors import AgentError, DeskLoopError
from app.endpoints.client import EndpointConfig


@dataclass(frozen=True)
class DeskLoopConfig(EndpointConfig):
    """The fields keep the names they had before `EndpointConfig` took the endpoint's
    share, so configs recorded with earlier batches load with `DeskLoopConfig(**data)`."""

    image_width: int = 1280
    image_height: int = 800
    """The screenshot is scaled down (aspect kept) to fit this box; never up."""
    tool_mode: ToolMode = "tools"
    history: int = 12
    """How many recent actions are described in each request."""
    # A vision model may think for minutes over a screenshot.
    timeout: float = 120.0
    max_retries: int = 4
    # About the worst case of the retries before there was a deadline (5 x 120 s + waits).
    deadline: float = 600.0

    who: ClassVar[str] = "openai agent"
    config_error: ClassVar[type[DeskLoopError]] = AgentError

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.image_width < 64 or self.image_height < 64:
            raise AgentError(
                f"openai agent: image size {self.image_width}x{self.image_height} is too small"
            )
        if self.history < 0:
            raise AgentError(f"openai agent: history must be >= 0, not {self.history}")
        if self.tool_mode not in ("tools", "json"):
            raise AgentError(f"openai agent: tool_mode must be tools or json, not {self.tool_mode}")

    def public(self) -> dict[str, Any]:
        """The settings worth recording with an episode (never the key itself)."""
        return {
            "model": self.model,
            "base_url": self.base_url,
            "api_key_env": self.api_key_env,
            "coordinates": "pixels",
            "image": [self.image_width, self.image_height],
            "tool_mode": self.tool_mode,
            "history": self.history,
            "deadline": self.deadline,
            "temperature": self.temperature,
            "seed": self.seed,
        }
