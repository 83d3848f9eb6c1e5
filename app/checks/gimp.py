"""Checks on GIMP projects (.xcf): the canvas, its layers and their properties.

The file is read by the project's own XCF reader (app.checks.xcf), which parses
the layer structure the way GIMP wrote it; a layer is found by its exact name,
never by searching the bytes for it. A file that is missing or not a readable XCF
fails the check with that reason.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, StrictBool, StrictFloat, StrictInt

from app.checks.base import (
    CheckParams,
    CheckResult,
    CheckState,
    GuestPath,
    failed,
    needs_any,
    passed,
)
from app.checks.files import file_bytes
from app.checks.registry import register
from app.checks.xcf import LEGACY_MODES, MODE_NAMES, MODES, XcfError, XcfImage, XcfLayer, parse_xcf


def load_xcf(state: CheckState, path: str) -> XcfImage | CheckResult:
    """The parsed .xcf at guest `path`, or the failed result saying why not."""
    data = file_bytes(state, path)
    if isinstance(data, CheckResult):
        return data
    try:
        return parse_xcf(data)
    except XcfError as exc:
        return failed(f"{path} is not a readable GIMP .xcf file ({len(data)} bytes: {exc})")


def _names(image: XcfImage) -> str:
    return ", ".join(repr(layer.name) for layer in image.layers) or "no layers"


# --- xcf_layers -------------------------------------------------------------------


class XcfLayersParams(CheckParams):
    path: GuestPath
    """The guest .xcf file, e.g. '~/Desktop/poster.xcf'."""
    count: Annotated[StrictInt, Field(ge=0)] | None = None
    """Exact number of layers, counting groups and the layers inside them."""
    min_count: Annotated[StrictInt, Field(ge=0)] | None = None
    """Smallest number of layers accepted (same counting as `count`)."""
    order: Annotated[list[str], Field(min_length=1)] | None = None
    """Layer names that must all exist and appear in this order from top to bottom
    (other layers may lie between them)."""
    width: Annotated[StrictInt, Field(gt=0)] | None = None
    """Expected canvas width in pixels."""
    height: Annotated[StrictInt, Field(gt=0)] | None = None
    """Expected canvas height in pixels."""

    _needs_something = needs_any(
        "count",
        "min_count",
        "order",
        "width",
        "height",
        message="give count, min_count, order, width or height",
    )


@register("xcf_layers", XcfLayersParams, files=("path",))
def xcf_layers(state: CheckState, params: XcfLayersParams) -> CheckResult:
    """Passes when the project's layer count, layer order (top to bottom) and canvas
    size match what is given. Partial credit: the share of the given conditions met."""
    image = load_xcf(state, params.path)
    if isinstance(image, CheckResult):
        return image
    results: list[tuple[bool, str]] = []
    n = len(image.layers)
    if params.count is not None:
        results.append((n == params.count, f"{n} layers, expected {params.count}"))
    if params.min_count is not None:
        results.append((n >= params.min_count, f"{n} layers, expected ≥ {params.min_count}"))
    if params.order is not None:
        results.append(_order(image, params.order))
    for dim, want, got in (
        ("width", params.width, image.width),
        ("height", params.height, image.height),
    ):
        if want is not None:
            results.append((got == want, f"canvas {dim} {got}, expected {want}"))
    return _combine(f"{params.path} (layers top to bottom: {_names(image)})", results)


def _order(image: XcfImage, order: list[str]) -> tuple[bool, str]:
    names = [layer.name for layer in image.layers]
    missing = [name for name in order if name not in names]
    if missing:
        return False, f"no layer named {', '.join(repr(m) for m in missing)}"
    positions = [names.index(name) for name in order]
    wanted = " above ".join(repr(name) for name in order)
    if positions == sorted(positions) and len(set(positions)) == len(positions):
        return True, f"order {wanted} holds"
    return False, f"expected {wanted} (top to bottom), which does not hold"


def _combine(subject: str, results: list[tuple[bool, str]]) -> CheckResult:
    met = sum(1 for ok, _ in results if ok)
    parts = "; ".join(("" if ok else "NOT OK: ") + text for ok, text in results)
    text = f"{subject}: {parts}"
    if met == len(results):
        return passed(text)
    return failed(text, score=met / len(results))


# --- xcf_layer --------------------------------------------------------------------


def _check_mode(value: str) -> str:
    if value not in MODE_NAMES:
        raise ValueError(f"unknown layer mode {value!r}; known: {', '.join(sorted(MODE_NAMES))}")
    return value


class XcfLayerParams(CheckParams):
    path: GuestPath
    """The guest .xcf file, e.g. '~/Desktop/poster.xcf'."""
    name: Annotated[str, Field(min_length=1)]
    """The layer's exact name (as in GIMP's Layers dialog)."""
    visible: StrictBool | None = None
    """Whether the layer must be shown (eye icon on) or hidden."""
    opacity: Annotated[StrictFloat, Field(ge=0.0, le=100.0)] | None = None
    """Expected opacity, 0-100 as GIMP shows it."""
    opacity_tolerance: Annotated[StrictFloat, Field(ge=0.0)] = 1.0
    """How far the opacity may be from `opacity`."""
    mode: Annotated[str, AfterValidator(_check_mode)] | None = None
    """Expected blend mode, GIMP 2.10's name in lowercase with dashes: normal, multiply,
    screen, overlay, ... (the legacy mode of the same name is accepted too)."""
    x: StrictInt | None = None
    """Expected horizontal offset of the layer's top-left corner on the canvas."""
    y: StrictInt | None = None
    """Expected vertical offset of the layer's top-left corner on the canvas."""
    width: Annotated[StrictInt, Field(gt=0)] | None = None
    """Expected layer width in pixels."""
    height: Annotated[StrictInt, Field(gt=0)] | None = None
    """Expected layer height in pixels."""
    size_tolerance: Annotated[StrictInt, Field(ge=0)] = 0
    """How many pixels offsets and sizes may differ from the expected values."""
    text: str | None = None
    """The layer must be a text layer with exactly this text (ends' whitespace ignored)."""
    is_group: StrictBool | None = None
    """Whether the layer must be (or must not be) a layer group."""


@register("xcf_layer", XcfLayerParams, files=("path",))
def xcf_layer(state: CheckState, params: XcfLayerParams) -> CheckResult:
    """Passes when the project has a layer with this exact name whose properties
    (those given: visibility, opacity, mode, offsets, size, text, group) match.
    Partial credit: the share of the given properties that match."""
    image = load_xcf(state, params.path)
    if isinstance(image, CheckResult):
        return image
    layer = next((layer for layer in image.layers if layer.name == params.name), None)
    if layer is None:
        return failed(f"{params.path} has no layer named {params.name!r} (it has {_names(image)})")
    results = _properties(layer, params)
    subject = (
        f"{params.path} layer {params.name!r} ({layer.width}×{layer.height} at "
        f"{layer.x},{layer.y}, {'visible' if layer.visible else 'hidden'}, "
        f"opacity {layer.opacity:g}, {layer.mode_name}"
        + (", group" if layer.is_group else "")
        + (f", text {layer.text!r}" if layer.text is not None else "")
        + ")"
    )
    if not results:
        return passed(f"{subject}: exists")
    return _combine(subject, results)


def _properties(layer: XcfLayer, params: XcfLayerParams) -> list[tuple[bool, str]]:
    results: list[tuple[bool, str]] = []
    if params.visible is not None:
        shown = "visible" if params.visible else "hidden"
        results.append((layer.visible == params.visible, f"expected {shown}"))
    if params.opacity is not None:
        ok = abs(layer.opacity - params.opacity) <= params.opacity_tolerance
        results.append((ok, f"expected opacity {params.opacity:g} ±{params.opacity_tolerance:g}"))
    if params.mode is not None:
        ok = params.mode in (MODES.get(layer.mode), LEGACY_MODES.get(layer.mode))
        results.append((ok, f"expected mode {params.mode}"))
    tol = params.size_tolerance
    for what, expected, got in (
        ("x", params.x, layer.x),
        ("y", params.y, layer.y),
        ("width", params.width, layer.width),
        ("height", params.height, layer.height),
    ):
        if expected is not None:
            results.append((abs(got - expected) <= tol, f"expected {what} {expected}"))
    if params.text is not None:
        got_text = None if layer.text is None else layer.text.strip()
        if got_text is None:
            results.append((False, f"expected a text layer reading {params.text!r}"))
        else:
            results.append((got_text == params.text.strip(), f"expected text {params.text!r}"))
    if params.is_group is not None:
        group = "a group" if params.is_group else "not a group"
        results.append((layer.is_group == params.is_group, f"expected {group}"))
    return results
