"""Screen images and what waiting for the screen saw: the shapes the RFB client, the
desktops, agents, the runner and the store all pass around."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


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
