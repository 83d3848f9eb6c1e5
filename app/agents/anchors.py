"""Image anchors: "the target looks as recorded", for compiled demonstrations.

An anchor is a small PNG cut from a recorded frame around where the author clicked,
and where on the screen it was (its top-left corner). A reference step guarded by an
anchor waits until the live screen shows that region looking as recorded before it
acts, instead of sleeping a fixed time.

Looking the same is measured per pixel: a pixel agrees when no colour channel differs
by more than `tolerance` (0-255); the region matches when at least `match` of its
pixels agree. A share rather than a mean, because what differs between a recording and
a replay is small and local (a hover highlight, a blinking text cursor), while a
region that is not there yet (a dialog not open, a menu not shown) differs nearly
everywhere. DeskLoop pins the desktop's geometry, fonts and theme, so the region is
compared where it was recorded, with no search.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from PIL import Image, UnidentifiedImageError

DEFAULT_TOLERANCE = 24
DEFAULT_MATCH = 0.9
MAX_ANCHOR_SIDE = 512


@dataclass(frozen=True)
class Anchor:
    pixels: npt.NDArray[np.uint8]
    """height × width × 3 RGB."""
    left: int
    top: int
    tolerance: int = DEFAULT_TOLERANCE
    match: float = DEFAULT_MATCH
    name: str = ""
    """The anchor's file, for messages."""

    @property
    def width(self) -> int:
        return int(self.pixels.shape[1])

    @property
    def height(self) -> int:
        return int(self.pixels.shape[0])


def load_anchor_image(path: Path) -> npt.NDArray[np.uint8]:
    """An anchor's PNG as RGB pixels.

    Raises:
        ValueError: missing, unreadable, not an image, or larger than MAX_ANCHOR_SIDE.
    """
    try:
        with Image.open(path) as image:
            if max(image.size) > MAX_ANCHOR_SIDE:
                raise ValueError(
                    f"{path}: {image.size[0]}x{image.size[1]} is larger than an anchor "
                    f"may be ({MAX_ANCHOR_SIDE} px a side)"
                )
            return np.asarray(image.convert("RGB"), dtype=np.uint8)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such anchor image") from None
    except (OSError, UnidentifiedImageError) as exc:
        raise ValueError(f"{path}: not a readable image ({exc})") from None


def agreement(screen: npt.NDArray[np.uint8], anchor: Anchor) -> float:
    """The share (0-1) of the anchor's pixels the screen shows within tolerance; 0 when
    the region does not fit on the screen (a different geometry)."""
    bottom, right = anchor.top + anchor.height, anchor.left + anchor.width
    if anchor.top < 0 or anchor.left < 0 or bottom > screen.shape[0] or right > screen.shape[1]:
        return 0.0
    region = screen[anchor.top : bottom, anchor.left : right].astype(np.int16)
    difference = np.abs(region - anchor.pixels.astype(np.int16)).max(axis=2)
    return float(np.count_nonzero(difference <= anchor.tolerance)) / float(difference.size)


def matches(screen: npt.NDArray[np.uint8], anchor: Anchor) -> bool:
    return agreement(screen, anchor) >= anchor.match


def cut_anchor(
    screen: npt.NDArray[np.uint8], x: int, y: int, half: int = 24
) -> tuple[npt.NDArray[np.uint8], int, int]:
    """The region of `screen` around (x, y), clipped to the screen: (pixels, left, top)."""
    height, width = screen.shape[:2]
    left, top = max(0, x - half), max(0, y - half)
    right, bottom = min(width, x + half), min(height, y + half)
    return screen[top:bottom, left:right].copy(), left, top


def region(screen: npt.NDArray[np.uint8], anchor: Anchor) -> npt.NDArray[np.uint8] | None:
    """What the screen shows where the anchor should be (None: it does not fit)."""
    bottom, right = anchor.top + anchor.height, anchor.left + anchor.width
    if anchor.top < 0 or anchor.left < 0 or bottom > screen.shape[0] or right > screen.shape[1]:
        return None
    return screen[anchor.top : bottom, anchor.left : right].copy()


def difference(live: npt.NDArray[np.uint8], anchor: Anchor) -> npt.NDArray[np.uint8]:
    """An image of where the live region disagrees: disagreeing pixels red over a dimmed
    copy of the recorded region."""
    off = np.abs(live.astype(np.int16) - anchor.pixels.astype(np.int16)).max(axis=2)
    out = (anchor.pixels // 3).astype(np.uint8)
    out[off > anchor.tolerance] = (255, 0, 0)
    return out
