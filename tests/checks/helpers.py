"""What the check tests share: a picture with structure, encoders, a gathered state,
and running a check by name with its parameters."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from app.checks import (
    CheckResult,
    CheckState,
    FileState,
    get_check,
    run_check,
)

OUT = "~/Desktop/out.png"
REF = "assets/in.png"


def scene(width: int = 400, height: int = 300, seed: int = 0) -> Image.Image:
    """A picture with a gradient, shapes and text: structure SSIM can see, nothing symmetric."""
    pixels = np.zeros((height, width, 3), np.uint8)
    pixels[..., 0] = np.linspace(0, 255, width)[None, :]
    pixels[..., 1] = np.linspace(0, 200, height)[:, None]
    pixels[..., 2] = 90
    image = Image.fromarray(pixels)
    draw = ImageDraw.Draw(image)
    rng = np.random.default_rng(seed)
    for _ in range(12):
        x = int(rng.integers(0, max(1, width - 60)))
        y = int(rng.integers(0, max(1, height - 60)))
        side = int(rng.integers(15, 60))
        fill = (int(rng.integers(256)), int(rng.integers(256)), int(rng.integers(256)))
        shape = draw.ellipse if rng.random() < 0.5 else draw.rectangle
        shape((x, y, x + side, y + side), fill=fill)
    draw.text((10, 10), "DeskLoop", fill=(255, 255, 255))
    return image


def encode(image: Image.Image, fmt: str = "PNG", **options: Any) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, fmt, **options)
    return buffer.getvalue()


def state_with(
    files: dict[str, bytes | FileState] | None = None, assets: dict[str, bytes] | None = None
) -> CheckState:
    gathered = {
        path: value if isinstance(value, FileState) else FileState.found(path, value)
        for path, value in (files or {}).items()
    }
    return CheckState(files=gathered, assets=assets or {})


def check(name: str, state: CheckState, /, **params: Any) -> CheckResult:
    spec = get_check(name)
    return run_check(spec, state, spec.parse_params(params))
