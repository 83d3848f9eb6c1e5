"""Checks on image files: size, mode/format, similarity to a reference, region colour,
alpha, colour statistics and pixel differences.

Every image check decodes the guest file with Pillow (app.checks.imaging, which
also flattens transparency onto white, cuts regions and measures colour); a file
that is missing, unreadable or not an image fails the check with that reason.
Where colours are compared (similarity, pixel colour, statistics) transparency is
first composited onto white, as an image viewer shows it.

This module is the whole of the Images section of docs/evaluators.md: nine checks,
each a parameter model and an evidence line over the same decoded pixels, so it
is one piece even where it runs past 500 lines.
"""

from __future__ import annotations

import difflib
import re
from typing import Annotated, Literal

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
    needs_any,
    passed,
    verdict,
)
from app.checks.imaging import (
    MEASURE_UNITS,
    MEASURES,
    Measure,
    alpha,
    color_measures,
    cut,
    load_image,
    load_with_asset,
    measured,
    on_white,
    region_slices,
    region_words,
    shown,
    size_of,
    ssim,
)
from app.checks.registry import register

Image.init()  # fills Image.ID with every format plugin, for validating `format`


def _check_format(value: str) -> str:
    if value not in Image.ID:
        close = difflib.get_close_matches(value.upper(), sorted(Image.ID), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ValueError(
            f"unknown image format {value!r}; {hint}known: {', '.join(sorted(Image.ID))}"
        )
    return value


Coordinate = Annotated[StrictInt, Field(ge=0)]
Extent = Annotated[StrictInt, Field(gt=0)]
Region = tuple[Coordinate, Coordinate, Extent, Extent]


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

    _needs_a_dimension = needs_any("width", "height", message="give width, height or both")


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
    return verdict(ok, f"{params.path} is {size_of(image)}, expected {expected}")


# --- image_mode -------------------------------------------------------------------


class ImageModeParams(CheckParams):
    path: GuestPath
    """The guest image file, e.g. '~/Desktop/out.png'."""
    mode: str
    """Expected Pillow mode: 'RGB', 'RGBA', 'L' (grayscale), 'LA', 'P' (indexed), '1', ..."""
    format: Annotated[str, AfterValidator(_check_format)] | None = None
    """Expected file format as Pillow names it ('PNG', 'JPEG', 'GIF', 'TIFF', 'WEBP', ...);
    omit to accept any. Checks the bytes, not the file name's extension."""

    @field_validator("mode")
    @classmethod
    def _known_mode(cls, value: str) -> str:
        if value not in Image.MODES:
            raise ValueError(f"unknown Pillow mode {value!r}; known: {', '.join(Image.MODES)}")
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
    the check passes, else 0 (no partial credit: an untouched image already reaches
    SSIM 0.5-0.75 against most transformed references).
    """
    images = load_with_asset(state, params.path, params.reference)
    if isinstance(images, CheckResult):
        return images
    output, reference = images
    words = ""
    if params.crop is not None:
        x, y, w, h = params.crop
        if x + w > reference.width or y + h > reference.height:
            return failed(
                f"crop [{x}, {y}, {w}, {h}] lies outside {params.reference}, "
                f"which is {size_of(reference)}"
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
    size_note = f"{size_of(output)}"
    if output.size != reference.size:
        if not params.resize_to_reference:
            return failed(
                f"{what}: output is {size_of(output)}, reference is {size_of(reference)} "
                "(resize_to_reference is off)"
            )
        compared = compared.resize(reference.size, Image.Resampling.LANCZOS)
        size_note = f"output {size_of(output)} resized to {size_of(reference)}"

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
        return failed(f"{what}: reference is {size_of(reference)}, too small for SSIM (min 3×3)")

    similarity = ssim(np.asarray(compared), np.asarray(flat_reference), window)
    if similarity >= params.threshold:
        return passed(f"{what}: SSIM {similarity:.4f} ≥ {params.threshold} ({size_note})")
    return failed(f"{what}: SSIM {similarity:.4f} < {params.threshold} ({size_note})")


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
    pixels = cut(np.asarray(on_white(image)), params.region, params.path, image)
    if isinstance(pixels, CheckResult):
        return pixels
    region = region_words(params.region)
    mean = pixels.astype(np.float64).reshape(-1, 3).mean(axis=0)
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
    got = f"{params.path} is {image.format} ({size_of(image)}, mode {image.mode})"
    return verdict(image.format == params.format, f"{got}, expected {params.format}")


# --- image_has_alpha --------------------------------------------------------------


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
    transparency = alpha(image)
    if transparency is None:
        return failed(f"{params.path} has no alpha channel (mode {image.mode}, {image.format})")
    where = "the image"
    if params.region is not None:
        inside = cut(transparency, params.region, params.path, image)
        if isinstance(inside, CheckResult):
            return inside
        transparency = inside
        where = region_words(params.region)
    share = float(np.mean(transparency < 255))
    got = f"{params.path} has alpha (mode {image.mode}); {share:.1%} of {where} is transparent"
    return verdict(
        share >= params.min_transparent, f"{got}, at least {params.min_transparent:.1%} required"
    )


# --- colour statistics ------------------------------------------------------------

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
    values = measured(image, params.region, params.path)
    if isinstance(values, CheckResult):
        return values
    where = region_words(params.region) if params.region else "the whole image"
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
        parts.append(f"{measure} {shown(measure, value)} {mark} [{bounds[0]:g}, {bounds[1]:g}]")
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
    images = load_with_asset(state, params.path, params.source)
    if isinstance(images, CheckResult):
        return images
    output, source = images
    measure = params.measure
    before = color_measures(np.asarray(on_white(source)))[measure]
    after = color_measures(np.asarray(on_white(output)))[measure]
    change = after - before if params.direction == "increase" else before - after
    want = f"{params.direction} by ≥ {params.min_amount:g}"
    if params.max_amount is not None:
        want += f" and ≤ {params.max_amount:g}"
    text = (
        f"{measure} ({MEASURE_UNITS[measure]}) of {params.path} is {shown(measure, after)}, "
        f"{params.source} is {shown(measure, before)}: "
        f"{'+' if after >= before else '−'}{shown(measure, abs(after - before))}; "
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
    images = load_with_asset(state, params.path, params.reference)
    if isinstance(images, CheckResult):
        return images
    output, reference = images
    if output.size != reference.size:
        return failed(
            f"{params.path} is {size_of(output)}, {params.reference} is {size_of(reference)}: "
            "a pixel comparison needs the same size"
        )
    ours = np.asarray(on_white(output), dtype=np.int16)
    theirs = np.asarray(on_white(reference), dtype=np.int16)
    where = "the image"
    if params.region is not None:
        inside = cut(ours, params.region, params.path, output)
        if isinstance(inside, CheckResult):
            return inside
        ours = inside
        theirs = theirs[region_slices(params.region)]
        where = region_words(params.region)
    changed = float(np.mean(np.abs(ours - theirs).max(axis=2) > params.tolerance))
    text = (
        f"{changed:.2%} of the pixels of {where} in {params.path} differ from "
        f"{params.reference} by more than {params.tolerance}; expected "
        f"{params.min_fraction:.2%}-{params.max_fraction:.2%}"
    )
    return verdict(params.min_fraction <= changed <= params.max_fraction, text)
