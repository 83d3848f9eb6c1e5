"""Frame images on disk: PNG encoding and atomic, deduplicated writes.

`frame_png` is pure (no I/O, no shared state) and takes tens of milliseconds for a
full screen, so the runner calls it from a worker thread and keeps the asyncio loop
free; the store then only hashes and writes bytes (~1.5 ms for a 680 KiB frame).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np
import numpy.typing as npt

from app.core.errors import StoreError
from app.core.files import write_atomic
from app.core.frames import png_bytes

# Measured on a 1280×800 GIMP screenshot: level 1 takes 38-56 ms, the default (6)
# 50-146 ms for files only ~10% smaller; frames are written every step.
PNG_COMPRESS_LEVEL = 1

FRAME_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# A database's frames folder, relative to the database's folder (migration 0006).
FRAMES_FOLDER = re.compile(r"frames/[0-9a-f]{12}")


def frame_png(pixels: npt.NDArray[np.uint8]) -> bytes:
    """The PNG bytes of a frame to store: height × width × 3 (RGB), × 4 (RGBA) or
    height × width (grey) uint8 pixels, checked first.

    Raises:
        StoreError: the pixels are not uint8, not of one of those shapes, or empty.
    """
    if pixels.dtype != np.uint8:
        raise StoreError(f"frame pixels must be uint8, got {pixels.dtype}")
    shape = tuple(pixels.shape)
    if not (len(shape) == 2 or (len(shape) == 3 and shape[2] in (3, 4))):
        raise StoreError(f"frame pixels must be H×W, H×W×3 or H×W×4, got shape {shape}")
    if shape[0] == 0 or shape[1] == 0:
        raise StoreError(f"frame has no pixels (shape {shape})")
    return png_bytes(pixels, compress_level=PNG_COMPRESS_LEVEL)


class FrameDir:
    """The frames of one database: `<root>/<episode id>/<name>.png`, where `root` is
    the database's own folder, `frames/<id>/` beside it.

    Remembers the sha256 of every frame written per episode during this process's
    life, so a repeated image (the screen did not change) is stored once and later
    steps point at the first file.
    """

    def __init__(self, root: Path, relative_to: Path) -> None:
        self.root = root
        self.relative_to = relative_to
        self._seen: dict[int, dict[str, str]] = {}

    def save(self, episode_id: int, name: str | int, png: bytes) -> str:
        """Write `png` (unless this episode already has it); return its relative path."""
        name = str(name)
        if not FRAME_NAME.match(name):
            raise StoreError(
                f"frame name {name!r} must be 1-64 letters, digits, '-' or '_' "
                "(a step index or 'final')"
            )
        digest = hashlib.sha256(png).hexdigest()
        seen = self._seen.setdefault(episode_id, {})
        if digest in seen:
            return seen[digest]
        folder = self.root / str(episode_id)
        target = folder / f"{name}.png"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            write_atomic(target, png, mode=0o600)
        except OSError as exc:
            raise StoreError(f"cannot write frame {target}: {exc.strerror or exc}") from exc
        relative = target.relative_to(self.relative_to).as_posix()
        seen[digest] = relative
        return relative

    def forget(self, episode_id: int) -> None:
        self._seen.pop(episode_id, None)

    def resolve(self, relative: str) -> Path:
        return self.relative_to / relative
