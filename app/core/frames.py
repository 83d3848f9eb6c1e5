"""Screen images and what waiting for the screen saw: the shapes the RFB client, the
desktops, agents, the runner and the store all pass around; and the one PNG encoder
of their pixels, as bytes (`png_bytes`, what the store writes), base64 text
(`png_base64`) or a data URL (`png_data_url`, what a chat request shows a model)."""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from PIL import Image


@dataclass(frozen=True)
class Frame:
    """One screen image: raw RGB pixels (height × width × 3, uint8) and when it was read.

    Pixels stay raw on the hot path; PNG encoding happens only when the store
    writes a frame to disk.
    """

    pixels: npt.NDArray[np.uint8]
    monotonic: float
    wall: float

    @property
    def width(self) -> int:
        return int(self.pixels.shape[1])

    @property
    def height(self) -> int:
        return int(self.pixels.shape[0])


@dataclass(frozen=True)
class SettleResult:
    """What `Desktop.settle` saw: whether the screen changed and then went quiet."""

    changed: bool
    settled: bool
    seconds: float


def png_bytes(
    pixels: npt.NDArray[np.uint8], *, size: tuple[int, int] | None = None, compress_level: int
) -> bytes:
    """PNG of height × width (grey), × 3 (RGB) or × 4 (RGBA) uint8 pixels, resized to
    `size` (width, height) first when given. CPU-bound (tens of milliseconds for a
    full screen): call it in a worker thread from a loop."""
    # Pillow picks L / RGB / RGBA from the uint8 array's shape.
    image = Image.fromarray(np.ascontiguousarray(pixels))
    if size is not None and image.size != size:
        image = image.resize(size, Image.Resampling.LANCZOS)
    out = io.BytesIO()
    image.save(out, format="PNG", compress_level=compress_level)
    return out.getvalue()


def png_base64(
    pixels: npt.NDArray[np.uint8], *, size: tuple[int, int] | None = None, compress_level: int
) -> str:
    """`png_bytes` as base64 text (what a request's image field carries)."""
    png = png_bytes(pixels, size=size, compress_level=compress_level)
    return base64.b64encode(png).decode("ascii")


def png_data_url(
    pixels: npt.NDArray[np.uint8], *, size: tuple[int, int] | None = None, compress_level: int
) -> str:
    """`png_bytes` as a `data:image/png;base64,` URL."""
    return "data:image/png;base64," + png_base64(pixels, size=size, compress_level=compress_level)
