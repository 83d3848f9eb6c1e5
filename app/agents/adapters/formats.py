"""Each adapter's wire format per model family, as data: the one table `FORMATS`.

A row names a family (the adapter), the models it holds (a regular expression searched
in the model's name), and what they take: the computer tool (its version; the beta
header follows from it, `TOOLS`), the coordinate convention, and the bounds an API keeps
screenshots within (beyond them it rescales the image, and every point the model names
would be of an image DeskLoop never sent). The first row of the family whose pattern
matches is the model's; each family ends with a catch-all row ('').

The table was checked against the providers' documentation on `CHECKED`;
docs/agents.md ("Tool versions") names each source and what it said. A model the table
gets wrong, or one newer than it, takes `--computer-tool` (`AdapterConfig.computer_tool`:
the tool and its beta header; the rest of the row stays) and `--coords`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from app.agents.adapters.coords import Convention
from app.agents.families import FAMILIES

CHECKED = "2026-12-05"
"""When `FORMATS` and `TOOLS` were last checked against the providers' documentation."""

TOOLS: dict[str, dict[str, str | None]] = {
    row.name: {tool: beta for tool, beta in row.tools.items()}
    for row in FAMILIES.values()
    if row.tools
}
"""The computer tools of each family that has them, and the beta header each needs
(None: none): the families' table's (`app.agents.families`)."""

CLAUDE_AREA, CLAUDE_EDGE = 1_150_000, 1568
"""Claude's native image resolution (about 1.15 megapixels, 1568 px on the long side):
1280x800 (1.02 MP) goes as it is, 1920x1080 is sent as 1429x804."""
OPUS_4_7_AREA, OPUS_4_7_EDGE = 4784 * 750, 2576
"""Claude Opus 4.7's: 4784 image tokens (at about 750 pixels a token) and 2576 px on the
long side."""


@dataclass(frozen=True)
class Format:
    """One row: what the models of a family matching `models` take."""

    adapter: str
    models: str
    """A regular expression searched in the model's name, lower case, with '_' and '.'
    read as '-' ('claude-opus-4.6' is 'claude-opus-4-6'); '' matches every model."""
    coords: Convention
    tool: str | None = None
    """The computer tool (anthropic, openai-cua); None for families without one."""
    max_area: int | None = None
    max_edge: int | None = None
    """The screenshot's bounds (pixels in all, pixels on its long side); None: the
    image box alone."""

    @property
    def beta(self) -> str | None:
        """The beta header the tool needs (`anthropic-beta`), None when none."""
        return TOOLS.get(self.adapter, {}).get(self.tool) if self.tool else None

    def holds(self, model: str) -> bool:
        return re.search(self.models, model_key(model)) is not None


FORMATS: tuple[Format, ...] = (
    Format(
        "anthropic",
        r"3-5-sonnet|sonnet-3-5",
        "pixels",
        "computer_20241022",
        CLAUDE_AREA,
        CLAUDE_EDGE,
    ),
    Format("anthropic", r"opus-4-7", "pixels", "computer_20251124", OPUS_4_7_AREA, OPUS_4_7_EDGE),
    Format(
        "anthropic",
        r"opus-4-[56]|sonnet-4-6",
        "pixels",
        "computer_20251124",
        CLAUDE_AREA,
        CLAUDE_EDGE,
    ),
    # Sonnet 4.5, Haiku 4.5, Opus 4.1, Sonnet 4, Opus 4, Sonnet 3.7, and any other name.
    Format("anthropic", "", "pixels", "computer_20250124", CLAUDE_AREA, CLAUDE_EDGE),
    # GPT-5.4 and later GPT-5 models; computer-use-preview and any other name: the preview.
    Format("openai-cua", r"gpt-5-(?:[4-9]|[1-9][0-9])(?![0-9])", "pixels", "computer"),
    Format("openai-cua", "", "pixels", "computer_use_preview"),
    Format("pyautogui", "", "pixels"),
    # UI-TARS-1.5 (and OpenCUA, with --coords) write pixels of the smart-resized image.
    Format("uitars", r"1-5", "qwen-grid"),
    Format("uitars", "", "0-1000"),
    Format("qwen", r"qwen3", "0-1000"),
    Format("qwen", "", "qwen-grid"),
)


def model_key(model: str) -> str:
    """A model's name as the table's patterns read it."""
    return model.lower().replace("_", "-").replace(".", "-")


def model_format(adapter: str, model: str, tool: str | None = None) -> Format:
    """The row of `adapter` that holds `model`; `tool`, when given, replaces its tool
    (and so its beta header).

    Raises:
        KeyError: an adapter the table has no row for.
    """
    row = next((row for row in FORMATS if row.adapter == adapter and row.holds(model)), None)
    if row is None:
        raise KeyError(adapter)
    return row if tool is None else replace(row, tool=tool)
