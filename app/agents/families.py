"""The model families DeskLoop speaks, and the coordinate conventions their models write:
the one table every part that names them reads.

The command line's choices, a suite file's fields, the agent spec parser
(`app.agents.spec`), the adapters' configs and their format table all take their names
from here. The module imports nothing heavier than `typing`, so the command line's
parser can be built from it without loading the endpoint client.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeGuard, get_args

Family = Literal["deskloop", "pyautogui", "uitars", "anthropic", "openai-cua", "qwen"]
"""A model family's wire format. `deskloop` is DeskLoop's own tools (or JSON actions)
over chat completions; the others are the adapters' (`app.agents.adapters`)."""

Convention = Literal["pixels", "0-1", "0-1000", "qwen-grid"]
"""How a model's numbers name a point (`app.agents.adapters.coords`)."""

ComputerTool = Literal[
    "computer_20241022",
    "computer_20250124",
    "computer_20251124",
    "computer_use_preview",
    "computer",
]
"""The computer tools of the families that are offered one (anthropic, openai-cua)."""

TextTurn = Literal["done", "ask"]
"""What a turn of text without a tool call is, for the families whose models may answer
so (`AdapterConfig.text_turn`)."""

ToolMode = Literal["tools", "json"]
"""How the `deskloop` family offers its actions: as tools, or as the JSON action format."""


@dataclass(frozen=True)
class FamilyRow:
    """What DeskLoop knows of one family before any model is named."""

    name: Family
    summary: str
    """What the family's models write, in a few words (the TUI's choices)."""
    base_url: str | None = None
    """The family's own endpoint; None: OpenAI's (`EndpointConfig`'s default), which
    every hosted or local server of an OpenAI-compatible family takes."""
    key_env: str | None = None
    """The environment variable of the family's own key; None: OpenAI's."""
    tools: Mapping[ComputerTool, str | None] = field(default_factory=dict)
    """The computer tools the family may be offered, each with the beta header it
    needs (None: none); empty for families without a computer tool."""
    text_turns: bool = False
    """Whether the family's model may answer with text and no tool call (`text_turn`
    says what such a turn is); the chat families read their text as actions."""


FAMILIES: Mapping[Family, FamilyRow] = {
    row.name: row
    for row in (
        FamilyRow("deskloop", "DeskLoop's own tools"),
        FamilyRow("pyautogui", "OSWorld-style code"),
        FamilyRow("uitars", "UI-TARS actions"),
        FamilyRow(
            "anthropic",
            "Claude's computer tool",
            base_url="https://api.anthropic.com/v1",
            key_env="ANTHROPIC_API_KEY",
            tools={
                "computer_20241022": "computer-use-2024-10-22",
                "computer_20250124": "computer-use-2025-01-24",
                "computer_20251124": "computer-use-2025-11-24",
            },
            text_turns=True,
        ),
        FamilyRow(
            "openai-cua",
            "OpenAI computer use",
            tools={
                # The preview tool, declared with the display's size and environment.
                "computer_use_preview": None,
                # The built-in tool of GPT-5.4 and later: `{"type": "computer"}`,
                # batched actions.
                "computer": None,
            },
            text_turns=True,
        ),
        FamilyRow("qwen", "Qwen-VL computer_use"),
    )
}

FAMILY_NAMES: tuple[Family, ...] = get_args(Family)
ADAPTER_FAMILIES: tuple[Family, ...] = tuple(name for name in FAMILY_NAMES if name != "deskloop")
"""The families read by an adapter (`app.agents.adapters`): all but DeskLoop's own."""
CONVENTIONS: tuple[Convention, ...] = get_args(Convention)
COMPUTER_TOOLS: tuple[ComputerTool, ...] = get_args(ComputerTool)
TEXT_TURNS: tuple[TextTurn, ...] = get_args(TextTurn)
TOOL_MODES: tuple[ToolMode, ...] = get_args(ToolMode)

# The Literals are what mypy checks; the rows are what the code reads. Both must name
# the same families and tools, in the same order (the command line lists them so).
assert tuple(FAMILIES) == FAMILY_NAMES, "FAMILIES and Family name different families"
assert tuple(t for row in FAMILIES.values() for t in row.tools) == COMPUTER_TOOLS, (
    "the families' tools and ComputerTool differ"
)


def is_family(name: str) -> TypeGuard[Family]:
    return name in FAMILIES


def family_row(name: str) -> FamilyRow | None:
    """The row of the family named `name`; None: no family is named so."""
    return FAMILIES[name] if is_family(name) else None
