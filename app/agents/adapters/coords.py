"""Coordinate contracts: how the numbers a model writes become pixels of the screen.

Every adapter names one convention, and the screenshot it sends is made for it:

- `pixels`: pixels of the image sent. The screen is scaled down (aspect kept) to fit
  the adapter's image box; a point is mapped back by pixel centres, so the corners
  stay the corners. Anthropic's computer tool, OpenAI's computer use and OSWorld-style
  pyautogui code use it (the image size is told to the model).
- `0-1`: fractions of the image's width and height.
- `0-1000`: thousandths of the width and height (UI-TARS 1.0, Qwen3-VL, many grounding
  models).
- `qwen-grid`: pixels of the image after Qwen2.5-VL's smart resize (each side a
  multiple of 28, the area within `min_pixels`..`max_pixels`). DeskLoop sends the image
  already resized, so the server's processor leaves it as it is and the model's pixels
  are pixels of exactly that image.

A point outside the convention's range is an `ActionError` naming it; the agent turns
that into a rejected step. The contract is recorded with the episode (`public`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

# Re-exported: the adapters name them from here.
from app.agents.families import CONVENTIONS as CONVENTIONS
from app.agents.families import Convention as Convention
from app.core.errors import ActionError

QWEN_FACTOR = 28
# qwen_vl_utils' and the Qwen2-VL processor's defaults (4 and 16384 patches of 28×28).
QWEN_MIN_PIXELS = 4 * 28 * 28
QWEN_MAX_PIXELS = 16384 * 28 * 28


def fit_size(width: int, height: int, max_width: int, max_height: int) -> tuple[int, int]:
    """The largest size within the box with the screen's aspect; never larger than it."""
    scale = min(1.0, max_width / width, max_height / height)
    return max(1, round(width * scale)), max(1, round(height * scale))


def smart_resize(
    width: int,
    height: int,
    *,
    factor: int = QWEN_FACTOR,
    min_pixels: int = QWEN_MIN_PIXELS,
    max_pixels: int = QWEN_MAX_PIXELS,
) -> tuple[int, int]:
    """Qwen2-VL / Qwen2.5-VL's smart resize (as `qwen_vl_utils.smart_resize`): each side
    rounded to a multiple of `factor`, the area brought within the pixel bounds with the
    aspect kept. Returns (width, height)."""
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return w_bar, h_bar


@dataclass(frozen=True)
class CoordinateContract:
    """One convention applied to one screen: what image is sent, and the way back."""

    convention: Convention
    screen: tuple[int, int]
    sent: tuple[int, int]
    """The size of the screenshot the model is shown."""

    @classmethod
    def make(
        cls,
        convention: Convention,
        screen: tuple[int, int],
        box: tuple[int, int],
        *,
        min_pixels: int = QWEN_MIN_PIXELS,
        max_pixels: int = QWEN_MAX_PIXELS,
        max_area: int | None = None,
        max_edge: int | None = None,
    ) -> CoordinateContract:
        """The contract for a screen of `screen` pixels, the image fitted to `box` (and
        to `max_area` pixels in all, for an API that would otherwise rescale it and
        so move every point the model names), and to `max_edge` on its long side."""
        if convention not in CONVENTIONS:
            raise ActionError(
                f"unknown coordinate convention {convention!r}; known: {', '.join(CONVENTIONS)}"
            )
        sent = fit_size(*screen, *box)
        if max_area is not None and sent[0] * sent[1] > max_area:
            scale = math.sqrt(max_area / (sent[0] * sent[1]))
            sent = (max(1, int(sent[0] * scale)), max(1, int(sent[1] * scale)))
        if max_edge is not None and max(sent) > max_edge:
            sent = fit_size(*sent, max_edge, max_edge)
        if convention == "qwen-grid":
            sent = smart_resize(*sent, min_pixels=min_pixels, max_pixels=max_pixels)
        return cls(convention, screen, sent)

    @property
    def extent(self) -> tuple[float, float]:
        """The range of model coordinates: x in [0, w), y in [0, h) (pixel conventions),
        or [0, 1] and [0, 1000] for the relative ones."""
        if self.convention == "0-1":
            return 1.0, 1.0
        if self.convention == "0-1000":
            return 1000.0, 1000.0
        return float(self.sent[0]), float(self.sent[1])

    def to_screen(self, x: Any, y: Any, what: str) -> tuple[int, int]:
        """A model's point as a pixel of the screen.

        Raises:
            ActionError: not two numbers, or a point outside the convention's range.
        """
        for value in (x, y):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ActionError(f"{what}: coordinates must be numbers, got ({x!r}, {y!r})")
            if not math.isfinite(value):
                raise ActionError(f"{what}: coordinates must be finite, got ({x!r}, {y!r})")
        width, height = self.extent
        relative = self.convention in ("0-1", "0-1000")
        inside = (
            (0 <= x <= width and 0 <= y <= height)
            if relative
            else (0 <= x < width and 0 <= y < height)
        )
        if not inside:
            raise ActionError(f"{what} ({x:g}, {y:g}) is outside {self.describe_range()}")
        screen_w, screen_h = self.screen
        if relative:
            # A fraction of the screen; 1.0 (or 1000) is the last pixel, not past it.
            real_x = min(screen_w - 1, int(x / width * screen_w))
            real_y = min(screen_h - 1, int(y / height * screen_h))
        else:
            real_x = min(screen_w - 1, int((x + 0.5) * screen_w / width))
            real_y = min(screen_h - 1, int((y + 0.5) * screen_h / height))
        return real_x, real_y

    def from_screen(self, x: int, y: int) -> tuple[float, float]:
        """A screen pixel in the model's coordinates (where the pointer is, for a model
        that asks; tests that aim at a known point). Pixel conventions give integers."""
        width, height = self.extent
        screen_w, screen_h = self.screen
        if self.convention in ("0-1", "0-1000"):
            return (x + 0.5) / screen_w * width, (y + 0.5) / screen_h * height
        # The model pixel whose centre `to_screen` maps onto (x, y) (or next to it,
        # when the image is smaller than the screen).
        return float(int((x + 0.5) * width / screen_w)), float(int((y + 0.5) * height / screen_h))

    def describe_range(self) -> str:
        if self.convention == "0-1":
            return "the 0-1 range of the image"
        if self.convention == "0-1000":
            return "the 0-1000 range of the image"
        return f"the {self.sent[0]}x{self.sent[1]} screenshot"

    def public(self) -> dict[str, Any]:
        """What is recorded with a step and the episode."""
        return {
            "convention": self.convention,
            "screen": list(self.screen),
            "sent": list(self.sent),
        }
