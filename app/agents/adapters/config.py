"""The settings of a model agent behind an adapter: the endpoint's plus the adapter's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from app.agents.adapters.coords import QWEN_MAX_PIXELS, QWEN_MIN_PIXELS
from app.agents.adapters.formats import CHECKED, TOOLS, Format, model_format
from app.agents.families import (
    ADAPTER_FAMILIES,
    CONVENTIONS,
    FAMILIES,
    TEXT_TURNS,
    Convention,
    TextTurn,
    family_row,
)
from app.core.errors import AgentError, DeskLoopError
from app.endpoints.client import EndpointConfig

ADAPTERS: tuple[str, ...] = ADAPTER_FAMILIES
"""The families DeskLoop reads natively (besides its own tools, `--adapter deskloop`)."""

TEXT_TURN_FAMILIES = tuple(row.name for row in FAMILIES.values() if row.text_turns)
"""The families whose model may answer with text and no tool call: `text_turn` says what
such a turn is. The chat families read their text as actions, so they have none."""


def family_base_url(adapter: str) -> str:
    """A family's own endpoint, else OpenAI's (`EndpointConfig`'s default)."""
    row = family_row(adapter)
    return (row.base_url if row is not None else None) or EndpointConfig.base_url


def family_key_env(adapter: str) -> str:
    """A family's own key variable, else OpenAI's."""
    row = family_row(adapter)
    return (row.key_env if row is not None else None) or EndpointConfig.api_key_env


@dataclass(frozen=True)
class AdapterConfig(EndpointConfig):
    """A model agent speaking one family's native format (`adapter`)."""

    adapter: str = "pyautogui"
    coords: Convention | None = None
    """The coordinate convention; None: the model's, as the format table says
    (`app.agents.adapters.formats`)."""
    computer_tool: str | None = None
    """The computer tool (anthropic, openai-cua; its beta header follows) instead of the
    one the format table names for the model."""
    text_turn: TextTurn = "done"
    """What a turn of text without a tool call is (anthropic, openai-cua): `done`, a DONE
    whose text is a summary; `ask`, the agent's question to the user (for interactive
    tasks, where a model may ask in words rather than through `ask_user`). The model's
    prompt says which."""
    image_width: int = 1280
    image_height: int = 800
    """The screenshot is scaled down (aspect kept) to fit this box; never up."""
    history: int = 8
    """How many of the model's earlier answers each request repeats (chat families)."""
    screenshots: int = 1
    """Screenshots each request of a chat family shows: the current one and the N-1
    before it, each with the answer the model gave to it (UI-TARS is trained on such
    a history)."""
    images_kept: int = 3
    """Screenshots kept in a stateful conversation (Anthropic); older ones are replaced
    by a note, as Anthropic's reference loop does, so requests stay small."""
    min_pixels: int = QWEN_MIN_PIXELS
    max_pixels: int = QWEN_MAX_PIXELS
    """Bounds of the `qwen-grid` smart resize (the server's processor's)."""
    # A vision model may think for minutes over a screenshot (as DeskLoopConfig).
    timeout: float = 120.0
    max_retries: int = 4
    deadline: float = 600.0
    max_tokens: int = 2048

    who: ClassVar[str] = "model agent"
    config_error: ClassVar[type[DeskLoopError]] = AgentError

    def __post_init__(self) -> None:
        super().__post_init__()
        # Left as OpenAI's, the endpoint and the key variable are the family's own.
        if self.base_url == EndpointConfig.base_url:
            object.__setattr__(self, "base_url", family_base_url(self.adapter))
        if self.api_key_env == EndpointConfig.api_key_env:
            object.__setattr__(self, "api_key_env", family_key_env(self.adapter))
        if self.adapter not in ADAPTERS:
            raise AgentError(
                f"model agent: unknown adapter {self.adapter!r}; known: "
                f"deskloop, {', '.join(ADAPTERS)}"
            )
        if self.computer_tool is not None:
            tools = TOOLS.get(self.adapter)
            if tools is None:
                raise AgentError(
                    f"model agent: {self.adapter} has no computer tool to choose; "
                    f"{' and '.join(TOOLS)} have"
                )
            if self.computer_tool not in tools:
                raise AgentError(
                    f"model agent: {self.computer_tool!r} is not one of {self.adapter}'s "
                    f"computer tools: {', '.join(tools)}"
                )
        if self.text_turn not in TEXT_TURNS:
            raise AgentError(f"model agent: text_turn must be ask or done, not {self.text_turn!r}")
        if self.coords is not None and self.coords not in CONVENTIONS:
            raise AgentError(
                f"model agent: unknown coordinate convention {self.coords!r}; known: "
                f"{', '.join(CONVENTIONS)}"
            )
        if self.image_width < 64 or self.image_height < 64:
            raise AgentError(
                f"model agent: image size {self.image_width}x{self.image_height} is too small"
            )
        if self.history < 0 or self.images_kept < 1 or self.screenshots < 1:
            raise AgentError("model agent: history must be >= 0, screenshots and images_kept >= 1")

    @property
    def format(self) -> Format:
        """What the model takes, as the format table says (`computer_tool` replacing
        its tool)."""
        return model_format(self.adapter, self.model, self.computer_tool)

    @property
    def convention(self) -> Convention:
        """`coords`, else the model's convention in the format table (a family's
        checkpoints may differ: Qwen3-VL writes 0-1000, UI-TARS-1.5 pixels of the
        smart-resized image)."""
        return self.coords if self.coords is not None else self.format.coords

    def public(self) -> dict[str, Any]:
        """The settings recorded with an episode (never the key itself)."""
        return {
            "adapter": self.adapter,
            "model": self.model,
            "base_url": self.base_url,
            "api_key_env": self.api_key_env,
            "coordinates": self.convention,
            "image": [self.image_width, self.image_height],
            "history": self.history,
            "screenshots": self.screenshots,
            "images_kept": self.images_kept,
            "deadline": self.deadline,
            "temperature": self.temperature,
            **(
                {"min_pixels": self.min_pixels, "max_pixels": self.max_pixels}
                if self.convention == "qwen-grid"
                else {}
            ),
            **({"computer_tool": self._tool_record()} if self.adapter in TOOLS else {}),
            **({"text_turn": self.text_turn} if self.adapter in TEXT_TURN_FAMILIES else {}),
        }

    def _tool_record(self) -> dict[str, Any]:
        """The computer tool the episode used, its beta header, whether the format
        table or an option chose it, and when the table was checked."""
        row = self.format
        return {
            "type": row.tool,
            "beta": row.beta,
            "by": "table" if self.computer_tool is None else "option",
            "table_checked": CHECKED,
        }
