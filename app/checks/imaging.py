"""Pixels for the image checks: decoding a file, flattening it onto white, its alpha,
regions of it, colour measures and SSIM.

Every image check decodes the guest file with Pillow; a file that is missing,
unreadable or not an image becomes the failed result saying so. Where colours are
compared, transparency is first composited onto white (`on_white`), as an image
viewer shows it, so "the same picture" does not depend on how an app stored its
alpha channel. The checks, their parameters and their evidence are in
app.checks.images.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any, Literal

import numpy as np
from PIL import Image

from app.checks.base import CheckResult, CheckState, failed
from app.checks.files import file_bytes

_ALPHA_MODES = frozenset({"RGBA", "RGBa", "LA", "La", "PA"})

Box = tuple[int, int, int, int]
"""A region [x, y, width, height] in pixels, from the top-left corner."""


# --- decoding ---------------------------------------------------------------------


def decode_image(data: bytes, name: str) -> Image.Image | CheckResult:
    """Decode `data` fully, or return the failed result saying it is not a readable image."""
    try:
        image = Image.open(io.BytesIO(data))
        image.load()
    except Image.DecompressionBombError as exc:
        return failed(f"{name} is too large to decode safely ({exc})")
    except (OSError, ValueError, SyntaxError, EOFError) as exc:
        # Pillow reports truncated or foreign data with any of these.
        return failed(f"{name} is not a readable image ({len(data)} bytes: {exc})")
    return image


def load_image(state: CheckState, path: str) -> Image.Image | CheckResult:
    """The decoded guest image at `path`, or the failed result saying why not."""
    data = file_bytes(state, path)
    if isinstance(data, CheckResult):
        return data
    return decode_image(data, path)


def load_asset_image(state: CheckState, asset: str) -> Image.Image | CheckResult:
    """The decoded task asset `asset`, or the failed result saying why not."""
    data = state.assets.get(asset)
    if data is None:
        return failed(f"task asset {asset} was not provided to the check")
    return decode_image(data, f"task asset {asset}")


def load_with_asset(
    state: CheckState, path: str, asset: str
) -> tuple[Image.Image, Image.Image] | CheckResult:
    """The guest image at `path` and the task asset `asset` it is compared with, or the
    failed result saying why not (the guest image's reason first)."""
    output = load_image(state, path)
    if isinstance(output, CheckResult):
        return output
    reference = load_asset_image(state, asset)
    if isinstance(reference, CheckResult):
        return reference
    return output, reference


def size_of(image: Image.Image) -> str:
    return f"{image.width}×{image.height}"


# --- pixels -----------------------------------------------------------------------


def on_white(image: Image.Image) -> Image.Image:
    """`image` as 8-bit RGB, transparency composited onto white."""
    if image.mode in _ALPHA_MODES or "transparency" in image.info:
        rgba = image.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    return image.convert("RGB")


def alpha(image: Image.Image) -> np.ndarray[Any, np.dtype[np.uint8]] | None:
    """The alpha channel as uint8, or None when the image stores no transparency."""
    if image.mode in _ALPHA_MODES or "transparency" in image.info:
        return np.asarray(image.convert("RGBA"))[..., 3]
    return None


def region_words(region: Box) -> str:
    x, y, w, h = region
    return f"region [{x}, {y}, {w}, {h}]"


def region_slices(region: Box) -> tuple[slice, slice]:
    """The rows and columns of `region`, to index an (H, W, ...) pixel array."""
    x, y, w, h = region
    return slice(y, y + h), slice(x, x + w)


def cut(
    pixels: np.ndarray[Any, Any], region: Box, name: str, image: Image.Image
) -> np.ndarray[Any, Any] | CheckResult:
    """`region` of `pixels` (the pixels of `image`, named `name` in evidence), or the
    failed result when the region does not fit in the image."""
    x, y, w, h = region
    if x + w > image.width or y + h > image.height:
        return failed(f"{region_words(region)} lies outside {name}, which is {size_of(image)}")
    return pixels[region_slices(region)]


# --- colour measures ----------------------------------------------------------------

Measure = Literal["brightness", "contrast", "saturation", "warmth"]
MEASURES: tuple[Measure, ...] = ("brightness", "contrast", "saturation", "warmth")

MEASURE_UNITS: dict[Measure, str] = {
    "brightness": "mean luma 0-255",
    "contrast": "luma standard deviation 0-255",
    "saturation": "mean HSV saturation 0-1",
    "warmth": "(mean red - mean blue) / (mean red + mean blue), -1-1",
}


def _warmth(red: float, blue: float) -> float:
    return 0.0 if red + blue == 0 else (red - blue) / (red + blue)


def color_measures(rgb: np.ndarray[Any, Any]) -> dict[Measure, float]:
    """Brightness, contrast, saturation and warmth of an (H, W, 3) 8-bit RGB array.

    Brightness is the mean Rec. 601 luma (0-255), contrast its standard deviation,
    saturation the mean HSV saturation (max-min)/max per pixel (0-1, black counts 0),
    warmth (mean red - mean blue) / (mean red + mean blue) (-1-1: a warm cast is
    positive, a cold one negative, a neutral grey 0). Warmth is a ratio, so brightening
    or darkening alone does not change it.
    """
    pixels = rgb.astype(np.float64).reshape(-1, 3)
    luma = pixels @ np.array([0.299, 0.587, 0.114])
    high = pixels.max(axis=1)
    low = pixels.min(axis=1)
    saturation = np.divide(high - low, high, out=np.zeros_like(high), where=high > 0)
    return {
        "brightness": float(luma.mean()),
        "contrast": float(luma.std()),
        "saturation": float(saturation.mean()),
        "warmth": _warmth(float(pixels[:, 0].mean()), float(pixels[:, 2].mean())),
    }


def measured(
    image: Image.Image, region: Box | None, name: str
) -> dict[Measure, float] | CheckResult:
    """The colour measures of `image` on white, or of its `region` when one is given."""
    pixels = np.asarray(on_white(image))
    if region is not None:
        inside = cut(pixels, region, name, image)
        if isinstance(inside, CheckResult):
            return inside
        pixels = inside
    return color_measures(pixels)


def shown(measure: Measure, value: float) -> str:
    return f"{value:.3f}" if measure in ("saturation", "warmth") else f"{value:.1f}"


# --- similarity ---------------------------------------------------------------------


def ssim(ours: np.ndarray[Any, Any], theirs: np.ndarray[Any, Any], window: int) -> float:
    """The mean SSIM of two (H, W, 3) 8-bit RGB arrays of one size, per channel with an
    odd `window` × `window` window (scikit-image `structural_similarity`)."""
    # Imported here: scikit-image and scipy take ~0.25 s to import, and the task
    # loader imports the image checks only to validate parameters.
    from skimage.metrics import structural_similarity

    # skimage ships without type hints; pin the one signature used here.
    compare: Callable[..., float] = structural_similarity
    return float(compare(ours, theirs, win_size=window, channel_axis=2, data_range=255))
