"""Checks on image files: size, mode/format, similarity to a reference, region colour.

Every image check decodes the guest file with Pillow; a file that is missing,
unreadable or not an image fails the check with that reason. Where colours are
compared (similarity, pixel colour) transparency is first composited onto white,
as an image viewer shows it, so "the same picture" does not depend on how an app
stored its alpha channel.
"""

from __future__ import annotations

import difflib
import io
import re
from collections.abc import Callable
from typing import Annotated, Any, Literal

import numpy as np
from PIL import Image
from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    field_validator,
    model_validator,
)

from app.checks.base import (
    AssetPath,
    CheckParams,
    CheckResult,
    CheckState,
    GuestPath,
    failed,
    passed,
    verdict,
)
from app.checks.files import file_bytes
from app.checks.registry import register

Image.init()  # fills Image.ID with every format plugin, for validating `format`

_ALPHA_MODES = frozenset({"RGBA", "RGBa", "LA", "La", "PA"})


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


def on_white(image: Image.Image) -> Image.Image:
    """`image` as 8-bit RGB, transparency composited onto white."""
    if image.mode in _ALPHA_MODES or "transparency" in image.info:
        rgba = image.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    return image.convert("RGB")


Coordinate = Annotated[StrictInt, Field(ge=0)]
Extent = Annotated[StrictInt, Field(gt=0)]
Region = tuple[Coordinate, Coordinate, Extent, Extent]


def _size(image: Image.Image) -> str:
    return f"{image.width}×{image.height}"


# --- image_size -------------------------------------------------------------------


class ImageSizeParams(CheckParams):
    path: GuestPath
    """The guest image file, e.g. '~/Desktop/out.png'."""
    width: Annotated[StrictInt, Field(gt=0)] | None = None
    """Expected width in pixels; omit to accept any width."""
    height: Annotated[StrictInt, Field(gt=0)] | None = None
    """Expected height in pixels; omit to accept any height."""
    tolerance: Annotated[StrictInt, Field(ge=0)] = 0
    """How many pixels each dimension may differ from the expected value."""

    @model_validator(mode="after")
    def _needs_a_dimension(self) -> ImageSizeParams:
        if self.width is None and self.height is None:
            raise ValueError("give width, height or both")
        return self


@register("image_size", ImageSizeParams, files=("path",))
def image_size(state: CheckState, params: ImageSizeParams) -> CheckResult:
    """Passes when the image's width and/or height match, each within `tolerance` pixels."""
    image = load_image(state, params.path)
    if isinstance(image, CheckResult):
        return image
    width = "any" if params.width is None else str(params.width)
    height = "any" if params.height is None else str(params.height)
    expected = f"{width}×{height}"
    if params.tolerance:
        expected += f" (±{params.tolerance} px)"
    ok = all(
        want is None or abs(got - want) <= params.tolerance
        for got, want in ((image.width, params.width), (image.height, params.height))
    )
    return verdict(ok, f"{params.path} is {_size(image)}, expected {expected}")


# --- image_mode -------------------------------------------------------------------


class ImageModeParams(CheckParams):
    path: GuestPath
    """The guest image file, e.g. '~/Desktop/out.png'."""
    mode: str
    """Expected Pillow mode: 'RGB', 'RGBA', 'L' (grayscale), 'LA', 'P' (indexed), '1', ..."""
    format: str | None = None
    """Expected file format as Pillow names it ('PNG', 'JPEG', 'GIF', 'TIFF', 'WEBP', ...);
    omit to accept any. Checks the bytes, not the file name's extension."""

    @field_validator("mode")
    @classmethod
    def _known_mode(cls, value: str) -> str:
        if value not in Image.MODES:
            raise ValueError(f"unknown Pillow mode {value!r}; known: {', '.join(Image.MODES)}")
        return value

    @field_validator("format")
    @classmethod
    def _known_format(cls, value: str | None) -> str | None:
        if value is not None and value not in Image.ID:
            close = difflib.get_close_matches(value.upper(), sorted(Image.ID), n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ValueError(
                f"unknown image format {value!r}; {hint}known: {', '.join(sorted(Image.ID))}"
            )
        return value


@register("image_mode", ImageModeParams, files=("path",))
def image_mode(state: CheckState, params: ImageModeParams) -> CheckResult:
    """Passes when the image has the Pillow mode (and, if given, file format) expected."""
    image = load_image(state, params.path)
    if isinstance(image, CheckResult):
        return image
    got = f"mode {image.mode}, format {image.format}"
    expected = f"mode {params.mode}"
    if params.format is not None:
        expected += f", format {params.format}"
    ok = image.mode == params.mode and params.format in (None, image.format)
    return verdict(ok, f"{params.path} is {got}, expected {expected}")


# --- image_similarity -------------------------------------------------------------

Transform = Literal[
    "none", "flip_horizontal", "flip_vertical", "rotate_90", "rotate_180", "rotate_270"
]

# Rotations are clockwise, as GIMP's Image ▸ Transform menu names them; Pillow's
# ROTATE_* constants turn counter-clockwise, hence 90 ↔ 270.
_TRANSPOSE: dict[Transform, Image.Transpose | None] = {
    "none": None,
    "flip_horizontal": Image.Transpose.FLIP_LEFT_RIGHT,
    "flip_vertical": Image.Transpose.FLIP_TOP_BOTTOM,
    "rotate_90": Image.Transpose.ROTATE_270,
    "rotate_180": Image.Transpose.ROTATE_180,
    "rotate_270": Image.Transpose.ROTATE_90,
}

_TRANSFORM_WORDS: dict[Transform, str] = {
    "none": "",
    "flip_horizontal": " flipped horizontally",
    "flip_vertical": " flipped vertically",
    "rotate_90": " rotated 90° clockwise",
    "rotate_180": " rotated 180°",
    "rotate_270": " rotated 270° clockwise",
}

_SSIM_WINDOW = 7  # skimage's default window; smaller images get a smaller odd window
_SSIM_MAX_SIDE = 2048  # larger images are compared downscaled, to bound scoring time


class ImageSimilarityParams(CheckParams):
    path: GuestPath
    """The guest image file the agent produced, e.g. '~/Desktop/out.png'."""
    reference: AssetPath
    """The task asset to compare with, relative to the task folder, e.g. 'assets/in.png'."""
    threshold: Annotated[StrictFloat, Field(gt=0.0, le=1.0)] = 0.95
    """Lowest SSIM (structural similarity, 1 = identical) that passes; in (0, 1]."""
    transform: Transform = "none"
    """Applied to the reference before comparing, so the check reads "the output is the
    reference <transformed>": none, flip_horizontal, flip_vertical, rotate_90,
    rotate_180, rotate_270 (rotations clockwise, as GIMP names them)."""
    resize_to_reference: StrictBool = True
    """When the sizes differ, resize the output to the (transformed) reference's size
    (Lanczos) and compare; when false, a size difference fails the check."""
    crop: Region | None = None
    """A region [x, y, width, height] of the reference, cut out first: "the output is
    this part of the source". Omit to use the whole reference."""
    resize: tuple[Extent, Extent] | None = None
    """[width, height] the reference is scaled to last (after crop and transform):
    "the output is the source scaled to this size". Omit to keep its size."""


@register("image_similarity", ImageSimilarityParams, files=("path",), assets=("reference",))
def image_similarity(state: CheckState, params: ImageSimilarityParams) -> CheckResult:
    """Passes when the output's SSIM against the (transformed) reference is at least
    `threshold`. The reference is cropped (`crop`), then flipped/rotated
    (`transform`), then scaled (`resize`), in that order.

    SSIM is computed on 8-bit RGB (alpha composited onto white) per channel and
    averaged (scikit-image `structural_similarity`, 7×7 window); images longer than
    2048 px are compared downscaled to 2048 px on their longer side. Score: 1.0 when
    the check passes; otherwise the SSIM clamped to [0, 1], which is below the
    threshold, so a near miss earns more partial credit than an unrelated image.
    """
    output = load_image(state, params.path)
    if isinstance(output, CheckResult):
        return output
    reference = load_asset_image(state, params.reference)
    if isinstance(reference, CheckResult):
        return reference
    words = ""
    if params.crop is not None:
        x, y, w, h = params.crop
        if x + w > reference.width or y + h > reference.height:
            return failed(
                f"crop [{x}, {y}, {w}, {h}] lies outside {params.reference}, "
                f"which is {_size(reference)}"
            )
        reference = reference.crop((x, y, x + w, y + h))
        words += f" cropped to [{x}, {y}, {w}, {h}]"
    transpose = _TRANSPOSE[params.transform]
    if transpose is not None:
        reference = reference.transpose(transpose)
    words += _TRANSFORM_WORDS[params.transform]
    if params.resize is not None:
        reference = reference.resize(params.resize, Image.Resampling.LANCZOS)
        words += f" scaled to {params.resize[0]}×{params.resize[1]}"
    what = f"{params.path} vs {params.reference}{words}"

    compared = on_white(output)
    size_note = f"{_size(output)}"
    if output.size != reference.size:
        if not params.resize_to_reference:
            return failed(
                f"{what}: output is {_size(output)}, reference is {_size(reference)} "
                "(resize_to_reference is off)"
            )
        compared = compared.resize(reference.size, Image.Resampling.LANCZOS)
        size_note = f"output {_size(output)} resized to {_size(reference)}"

    flat_reference = on_white(reference)
    longest = max(reference.size)
    if longest > _SSIM_MAX_SIDE:
        # SSIM costs ~0.7 s per megapixel here; both sides shrink by the same factor.
        scale = _SSIM_MAX_SIDE / longest
        small = (max(1, round(reference.width * scale)), max(1, round(reference.height * scale)))
        compared = compared.resize(small, Image.Resampling.LANCZOS)
        flat_reference = flat_reference.resize(small, Image.Resampling.LANCZOS)
        size_note += f", compared at {small[0]}×{small[1]}"

    window = min(_SSIM_WINDOW, flat_reference.width, flat_reference.height)
    if window % 2 == 0:
        window -= 1
    if window < 3:
        return failed(f"{what}: reference is {_size(reference)}, too small for SSIM (min 3×3)")

    # Imported here: scikit-image and scipy take ~0.25 s to import, and the task
    # loader imports this module only to validate parameters.
    from skimage.metrics import structural_similarity

    # skimage ships without type hints; pin the one signature used here.
    compare: Callable[..., float] = structural_similarity
    ssim = float(
        compare(
            np.asarray(compared),
            np.asarray(flat_reference),
            win_size=window,
            channel_axis=2,
            data_range=255,
        )
    )
    if ssim >= params.threshold:
        return passed(f"{what}: SSIM {ssim:.4f} ≥ {params.threshold} ({size_note})")
    # A failed similarity earns no credit: an untouched image already has SSIM ~0.5-0.75
    # against most transformed references, which is not partial success.
    return failed(f"{what}: SSIM {ssim:.4f} < {params.threshold} ({size_note})")


# --- pixel_color ------------------------------------------------------------------

_HEX_COLOR = re.compile(r"#([0-9a-fA-F]{2})([0-9a-fA-F]{2})([0-9a-fA-F]{2})")


def _parse_color(value: object) -> object:
    # '#rrggbb' is how colours appear in GIMP's colour dialog; lists pass through
    # to the tuple validation below.
    if isinstance(value, str):
        match = _HEX_COLOR.fullmatch(value.strip())
        if match is None:
            raise ValueError(f"colour must be '#rrggbb' or [r, g, b], got {value!r}")
        return tuple(int(part, 16) for part in match.groups())
    return value


Channel = Annotated[StrictInt, Field(ge=0, le=255)]
Color = Annotated[tuple[Channel, Channel, Channel], BeforeValidator(_parse_color)]


def _hex(color: tuple[float, float, float]) -> str:
    return "#" + "".join(f"{round(c):02x}" for c in color)


class PixelColorParams(CheckParams):
    path: GuestPath
    """The guest image file, e.g. '~/Desktop/out.png'."""
    region: Region
    """The rectangle [x, y, width, height] in pixels, from the top-left corner."""
    color: Color
    """Expected mean colour of the region: [r, g, b] (0-255) or '#rrggbb'."""
    tolerance: Annotated[StrictFloat, Field(ge=0.0)] = 10.0
    """Largest allowed difference of the mean from `color` on any one channel (0-255)."""


@register("pixel_color", PixelColorParams, files=("path",))
def pixel_color(state: CheckState, params: PixelColorParams) -> CheckResult:
    """Passes when the mean colour of a region is within `tolerance` of `color` on every
    channel (transparency composited onto white first)."""
    image = load_image(state, params.path)
    if isinstance(image, CheckResult):
        return image
    x, y, w, h = params.region
    region = f"region [{x}, {y}, {w}, {h}]"
    if x + w > image.width or y + h > image.height:
        return failed(f"{region} lies outside {params.path}, which is {_size(image)}")
    pixels = np.asarray(on_white(image).crop((x, y, x + w, y + h)), dtype=np.float64)
    mean = pixels.reshape(-1, 3).mean(axis=0)
    r, g, b = (float(c) for c in mean)
    diff = float(np.max(np.abs(mean - np.array(params.color, dtype=np.float64))))
    got = f"mean colour of {region} in {params.path} is {_hex((r, g, b))}"
    expected = f"expected {_hex(params.color)}"
    if diff <= params.tolerance:
        return passed(
            f"{got}, {expected} (max channel difference {diff:.1f} ≤ {params.tolerance:g})"
        )
    return failed(f"{got}, {expected} (max channel difference {diff:.1f} > {params.tolerance:g})")


# --- image_format -----------------------------------------------------------------


def _check_format(value: str) -> str:
    if value not in Image.ID:
        close = difflib.get_close_matches(value.upper(), sorted(Image.ID), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ValueError(
            f"unknown image format {value!r}; {hint}known: {', '.join(sorted(Image.ID))}"
        )
    return value


class ImageFormatParams(CheckParams):
    path: GuestPath
    """The guest image file, e.g. '~/Desktop/out.jpg'."""
    format: Annotated[str, AfterValidator(_check_format)]
    """Expected file format as Pillow names it: 'PNG', 'JPEG', 'WEBP', 'TIFF', 'GIF', ...
    Read from the bytes, so a PNG saved under a '.jpg' name fails."""


@register("image_format", ImageFormatParams, files=("path",))
def image_format(state: CheckState, params: ImageFormatParams) -> CheckResult:
    """Passes when the file decodes as an image of the expected format."""
    image = load_image(state, params.path)
    if isinstance(image, CheckResult):
        return image
    got = f"{params.path} is {image.format} ({_size(image)}, mode {image.mode})"
    return verdict(image.format == params.format, f"{got}, expected {params.format}")


# --- image_has_alpha --------------------------------------------------------------


def _alpha(image: Image.Image) -> np.ndarray[Any, np.dtype[np.uint8]] | None:
    """The alpha channel as uint8, or None when the image stores no transparency."""
    if image.mode in _ALPHA_MODES or "transparency" in image.info:
        return np.asarray(image.convert("RGBA"))[..., 3]
    return None


class ImageHasAlphaParams(CheckParams):
    path: GuestPath
    """The guest image file, e.g. '~/Desktop/cutout.png'."""
    min_transparent: Annotated[StrictFloat, Field(ge=0.0, le=1.0)] = 0.0
    """Smallest share of pixels (0-1) that must be at least partly transparent
    (alpha < 255). 0 only requires an alpha channel to exist."""
    region: Region | None = None
    """Where to count transparent pixels, [x, y, width, height]; omit for the whole image."""


@register("image_has_alpha", ImageHasAlphaParams, files=("path",))
def image_has_alpha(state: CheckState, params: ImageHasAlphaParams) -> CheckResult:
    """Passes when the image stores transparency (an alpha channel or a transparent
    palette entry) and, if asked, enough of its pixels are transparent."""
    image = load_image(state, params.path)
    if isinstance(image, CheckResult):
        return image
    alpha = _alpha(image)
    if alpha is None:
        return failed(f"{params.path} has no alpha channel (mode {image.mode}, {image.format})")
    where = "the image"
    if params.region is not None:
        cut = _cut(alpha, params.region, params.path, image)
        if isinstance(cut, CheckResult):
            return cut
        alpha = cut
        where = _region_words(params.region)
    share = float(np.mean(alpha < 255))
    got = f"{params.path} has alpha (mode {image.mode}); {share:.1%} of {where} is transparent"
    return verdict(
        share >= params.min_transparent, f"{got}, at least {params.min_transparent:.1%} required"
    )


# --- colour statistics ------------------------------------------------------------

Measure = Literal["brightness", "contrast", "saturation", "warmth"]
MEASURES: tuple[Measure, ...] = ("brightness", "contrast", "saturation", "warmth")

_MEASURE_UNITS: dict[Measure, str] = {
    "brightness": "mean luma 0-255",
    "contrast": "luma standard deviation 0-255",
    "saturation": "mean HSV saturation 0-1",
    "warmth": "(mean red - mean blue) / (mean red + mean blue), -1-1",
}


def _region_words(region: tuple[int, int, int, int]) -> str:
    x, y, w, h = region
    return f"region [{x}, {y}, {w}, {h}]"


def _cut(
    pixels: np.ndarray[Any, Any], region: tuple[int, int, int, int], name: str, image: Image.Image
) -> np.ndarray[Any, Any] | CheckResult:
    x, y, w, h = region
    if x + w > image.width or y + h > image.height:
        return failed(f"{_region_words(region)} lies outside {name}, which is {_size(image)}")
    return pixels[y : y + h, x : x + w]


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


def _measured(
    image: Image.Image, region: tuple[int, int, int, int] | None, name: str
) -> dict[Measure, float] | CheckResult:
    pixels = np.asarray(on_white(image))
    if region is not None:
        cut = _cut(pixels, region, name, image)
        if isinstance(cut, CheckResult):
            return cut
        pixels = cut
    return color_measures(pixels)


def _fmt(measure: Measure, value: float) -> str:
    return f"{value:.3f}" if measure in ("saturation", "warmth") else f"{value:.1f}"


Bounds = tuple[StrictFloat, StrictFloat]


class ImageColorStatsParams(CheckParams):
    path: GuestPath
    """The guest image file, e.g. '~/Desktop/out.png'."""
    region: Region | None = None
    """The rectangle [x, y, width, height] measured; omit for the whole image."""
    brightness: Bounds | None = None
    """[min, max] of the mean luma (Rec. 601, 0-255)."""
    contrast: Bounds | None = None
    """[min, max] of the luma's standard deviation (0-255)."""
    saturation: Bounds | None = None
    """[min, max] of the mean HSV saturation (0-1); a greyscale image has 0."""
    warmth: Bounds | None = None
    """[min, max] of (mean red - mean blue) / (mean red + mean blue), -1-1; neutral is
    near 0, a warm cast positive."""

    @model_validator(mode="after")
    def _needs_bounds(self) -> ImageColorStatsParams:
        given = [(m, getattr(self, m)) for m in MEASURES]
        if all(b is None for _, b in given):
            raise ValueError("give at least one of brightness, contrast, saturation, warmth")
        for name, bounds in given:
            if bounds is not None and bounds[0] > bounds[1]:
                raise ValueError(f"{name}: min {bounds[0]} is above max {bounds[1]}")
        return self


@register("image_color_stats", ImageColorStatsParams, files=("path",))
def image_color_stats(state: CheckState, params: ImageColorStatsParams) -> CheckResult:
    """Passes when brightness, contrast, saturation and warmth (those given) of the image
    or a region lie within their [min, max] bounds (transparency composited onto white)."""
    image = load_image(state, params.path)
    if isinstance(image, CheckResult):
        return image
    values = _measured(image, params.region, params.path)
    if isinstance(values, CheckResult):
        return values
    where = _region_words(params.region) if params.region else "the whole image"
    parts: list[str] = []
    ok = True
    for measure in MEASURES:
        bounds = getattr(params, measure)
        if bounds is None:
            continue
        value = values[measure]
        inside = bounds[0] <= value <= bounds[1]
        ok = ok and inside
        mark = "in" if inside else "NOT in"
        parts.append(f"{measure} {_fmt(measure, value)} {mark} [{bounds[0]:g}, {bounds[1]:g}]")
    text = f"{params.path}, {where}: " + "; ".join(parts)
    return verdict(ok, text)


class ImageColorChangeParams(CheckParams):
    path: GuestPath
    """The guest image the agent produced, e.g. '~/Desktop/out.png'."""
    source: AssetPath
    """The task asset it was made from, e.g. 'assets/photo.png'."""
    measure: Measure
    """What changed: brightness (mean luma 0-255), contrast (luma standard deviation
    0-255), saturation (mean HSV saturation 0-1) or warmth ((mean red - mean blue) /
    (mean red + mean blue), -1-1; removing a warm cast decreases it)."""
    direction: Literal["increase", "decrease"]
    """Which way the measure must move from the source to the output."""
    min_amount: Annotated[StrictFloat, Field(gt=0.0)]
    """Smallest change, in the measure's unit, that counts (e.g. 10 luma levels)."""
    max_amount: Annotated[StrictFloat, Field(gt=0.0)] | None = None
    """Largest change allowed, in the same unit (catches overdoing it); omit for none."""

    @model_validator(mode="after")
    def _ordered(self) -> ImageColorChangeParams:
        if self.max_amount is not None and self.max_amount < self.min_amount:
            raise ValueError(f"max_amount {self.max_amount} is below min_amount {self.min_amount}")
        return self


@register("image_color_change", ImageColorChangeParams, files=("path",), assets=("source",))
def image_color_change(state: CheckState, params: ImageColorChangeParams) -> CheckResult:
    """Passes when brightness, contrast, saturation or warmth of the whole output moved
    from the source's value in `direction` by at least `min_amount` (and at most `max_amount`).
    The two images may differ in size: each is measured whole."""
    output = load_image(state, params.path)
    if isinstance(output, CheckResult):
        return output
    source = load_asset_image(state, params.source)
    if isinstance(source, CheckResult):
        return source
    measure = params.measure
    before = color_measures(np.asarray(on_white(source)))[measure]
    after = color_measures(np.asarray(on_white(output)))[measure]
    change = after - before if params.direction == "increase" else before - after
    want = f"{params.direction} by ≥ {params.min_amount:g}"
    if params.max_amount is not None:
        want += f" and ≤ {params.max_amount:g}"
    text = (
        f"{measure} ({_MEASURE_UNITS[measure]}) of {params.path} is {_fmt(measure, after)}, "
        f"{params.source} is {_fmt(measure, before)}: "
        f"{'+' if after >= before else '−'}{_fmt(measure, abs(after - before))}; "
        f"expected {want}"
    )
    ok = change >= params.min_amount and (params.max_amount is None or change <= params.max_amount)
    return verdict(ok, text)


# --- image_difference -------------------------------------------------------------


class ImageDifferenceParams(CheckParams):
    path: GuestPath
    """The guest image the agent produced, e.g. '~/Desktop/poster.png'."""
    reference: AssetPath
    """The task asset it is compared with, pixel by pixel, e.g. 'assets/photo.png'."""
    tolerance: Annotated[StrictInt, Field(ge=0, le=255)] = 30
    """A pixel counts as changed when some channel differs by more than this (0-255)."""
    min_fraction: Annotated[StrictFloat, Field(ge=0.0, le=1.0)] = 0.0
    """Smallest share of changed pixels (0-1): "something was added or changed"."""
    max_fraction: Annotated[StrictFloat, Field(ge=0.0, le=1.0)] = 1.0
    """Largest share of changed pixels (0-1): "the rest was left alone"."""
    region: Region | None = None
    """Where to compare, [x, y, width, height]; omit for the whole image."""

    @model_validator(mode="after")
    def _ordered(self) -> ImageDifferenceParams:
        if self.min_fraction > self.max_fraction:
            raise ValueError(
                f"min_fraction {self.min_fraction} is above max_fraction {self.max_fraction}"
            )
        if self.min_fraction == 0.0 and self.max_fraction == 1.0:
            raise ValueError("give min_fraction, max_fraction or both")
        return self


@register("image_difference", ImageDifferenceParams, files=("path",), assets=("reference",))
def image_difference(state: CheckState, params: ImageDifferenceParams) -> CheckResult:
    """Passes when the share of pixels that differ from the reference (by more than
    `tolerance` on some channel, transparency composited onto white) lies between
    `min_fraction` and `max_fraction`. Both images must have the same size. Where
    something was added (text, a shape) is left open: only how much changed counts."""
    output = load_image(state, params.path)
    if isinstance(output, CheckResult):
        return output
    reference = load_asset_image(state, params.reference)
    if isinstance(reference, CheckResult):
        return reference
    if output.size != reference.size:
        return failed(
            f"{params.path} is {_size(output)}, {params.reference} is {_size(reference)}: "
            "a pixel comparison needs the same size"
        )
    ours = np.asarray(on_white(output), dtype=np.int16)
    theirs = np.asarray(on_white(reference), dtype=np.int16)
    where = "the image"
    if params.region is not None:
        cut_ours = _cut(ours, params.region, params.path, output)
        if isinstance(cut_ours, CheckResult):
            return cut_ours
        ours = cut_ours
        theirs = theirs[
            params.region[1] : params.region[1] + params.region[3],
            params.region[0] : params.region[0] + params.region[2],
        ]
        where = _region_words(params.region)
    changed = float(np.mean(np.abs(ours - theirs).max(axis=2) > params.tolerance))
    text = (
        f"{changed:.2%} of the pixels of {where} in {params.path} differ from "
        f"{params.reference} by more than {params.tolerance}; expected "
        f"{params.min_fraction:.2%}-{params.max_fraction:.2%}"
    )
    return verdict(params.min_fraction <= changed <= params.max_fraction, text)
