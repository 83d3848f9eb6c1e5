"""Screen images and what waiting for the screen saw: the shapes the RFB client, the
desktops, agents, the runner and the store all pass around; and the one PNG encoder
of their pixels, as bytes (`png_bytes`, what the store writes), base64 text
(`png_base64`) or a data URL (`png_data_url`, what a chat request shows a model).

The encoder writes the PNG itself (`_png`: the three chunks a decoder needs, every
row unfiltered, then zlib) instead of asking Pillow to. Pillow tries PNG's row filters
on every row, and on a 1280×800 screenshot that filtering is most of its ~43 ms; an
unfiltered image compresses almost as well (flat UI colours repeat along a row,
which is what deflate finds anyway): 12 ms for a file 6% larger, measured on the
same GIMP screenshot. A frame is written every step, on the way to the agent's next
observation, so the difference is the harness's own time per step.
"""

from __future__ import annotations

import base64
import struct
import zlib
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
    if size is not None and (pixels.shape[1], pixels.shape[0]) != size:
        # Pillow picks L / RGB / RGBA from the uint8 array's shape.
        resized = Image.fromarray(np.ascontiguousarray(pixels))
        pixels = np.asarray(resized.resize(size, Image.Resampling.LANCZOS))
    return _png(pixels, compress_level)


# PNG colour types by channels: grey, RGB, RGBA.
_COLOR_TYPE = {1: 0, 3: 2, 4: 6}


def _png(pixels: npt.NDArray[np.uint8], compress_level: int) -> bytes:
    """An 8-bit PNG of the pixels, every row with filter type 0 (none)."""
    height, width = pixels.shape[:2]
    channels = 1 if pixels.ndim == 2 else pixels.shape[2]
    rows = np.zeros((height, width * channels + 1), dtype=np.uint8)  # column 0: filter
    rows[:, 1:] = pixels.reshape(height, width * channels)
    header = struct.pack(">IIBBBBB", width, height, 8, _COLOR_TYPE[channels], 0, 0, 0)
    return b"".join(
        (
            b"\x89PNG\r\n\x1a\n",
            _chunk(b"IHDR", header),
            _chunk(b"IDAT", zlib.compress(rows.data, compress_level)),
            _chunk(b"IEND", b""),
        )
    )


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


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
