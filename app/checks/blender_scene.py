"""The Blender scene dump as the `blender_*` checks read it, and how they judge it.

Scoring runs Blender in background mode in the guest on the .blend file a check
names (app/probes/blender.py) and hands its JSON dump here; docs/checks-blender.md
shows its shape. The dump stays the JSON Blender wrote rather than becoming a
typed model: a check may name any property Blender has for a modifier, light or
camera, and a value of an unexpected kind must show in the evidence as it is.

This module holds what every Blender check shares: the dump (or the failed result
saying why there is none), its objects by name, colours as Blender stores them
(linear RGB) or shows them ('#rrggbb', sRGB), and the `Tally` of conditions a
candidate met or missed, from which each check writes its evidence. The checks
themselves are in app.checks.blender (objects) and app.checks.blender_look (how the
scene looks).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from app.checks.base import CheckParams, CheckResult, CheckState, GuestPath, Probe, failed, verdict

Vec3 = tuple[float, float, float]
Color = tuple[float, float, float] | str
"""Linear RGB in [0, 1] as Blender stores it, or '#rrggbb' (sRGB, Blender's hex field)."""

PROBE = "blender_scene"
HEX_COLOR = re.compile(r"^#[0-9a-fA-F]{6}$")


# --- colours ----------------------------------------------------------------------


def srgb_to_linear(channel: float) -> float:
    """Blender's hex colour field is gamma-corrected sRGB; the stored value is linear."""
    if channel <= 0.04045:
        return channel / 12.92
    return float(((channel + 0.055) / 1.055) ** 2.4)


def linear_color(color: Color) -> Vec3:
    """A colour parameter as linear RGB."""
    if isinstance(color, str):
        r, g, b = (int(color[i : i + 2], 16) / 255 for i in (1, 3, 5))
        return (srgb_to_linear(r), srgb_to_linear(g), srgb_to_linear(b))
    return color


def check_color(value: Color | None) -> Color | None:
    """Validate a colour parameter: '#rrggbb', or channels that are not negative."""
    if isinstance(value, str) and not HEX_COLOR.match(value):
        raise ValueError(f"a colour is [r, g, b] (linear, 0-1) or '#rrggbb', got {value!r}")
    if isinstance(value, tuple) and not all(0.0 <= c <= 1000.0 for c in value):
        raise ValueError(f"colour channels must not be negative, got {value!r}")
    return value


# --- reading the dump -------------------------------------------------------------


class BlenderParams(CheckParams):
    path: GuestPath
    """The .blend file in the guest, e.g. '~/Desktop/scene.blend'."""


def scene_dump(state: CheckState, path: str) -> dict[str, Any] | CheckResult:
    """The dump of `path`, or the failed result that says why there is none."""
    result = state.probe(Probe(PROBE, path))
    if result.error is not None:
        if result.missing:
            return failed(f"{path} does not exist")
        return failed(f"cannot read the Blender scene {path}: {result.error}")
    if not isinstance(result.data, dict) or not isinstance(result.data.get("objects"), list):
        return failed(f"the Blender dump of {path} has no object list")
    return result.data


def objects(dump: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [o for o in dump["objects"] if isinstance(o, dict)]


def object_named(dump: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    return next((o for o in objects(dump) if o.get("name") == name), None)


def no_object(dump: Mapping[str, Any], path: str, wanted: str) -> CheckResult:
    """The failed result for a missing object, listing the objects there are."""
    return failed(f"{path} has no object {wanted}; objects: {names(objects(dump))}")


def scene_object(state: CheckState, path: str, name: str) -> dict[str, Any] | CheckResult:
    """Object `name` in the dump of `path`, or the failed result saying why there is none."""
    dump = scene_dump(state, path)
    if isinstance(dump, CheckResult):
        return dump
    obj = object_named(dump, name)
    return obj if obj is not None else no_object(dump, path, repr(name))


def section(entry: Mapping[str, Any], key: str) -> dict[str, Any]:
    """The mapping under `key` (an object's light or camera data, the scene settings),
    or an empty one when the dump holds something else there."""
    value = entry.get(key)
    return value if isinstance(value, dict) else {}


def names(entries: Iterable[Mapping[str, Any]]) -> str:
    listed = [str(o.get("name")) for o in entries]
    shown = ", ".join(listed[:12]) + (f" … ({len(listed)} in all)" if len(listed) > 12 else "")
    return shown or "none"


# --- judging ----------------------------------------------------------------------


def fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list | tuple):
        return "(" + ", ".join(fmt(v) for v in value) + ")"
    return repr(value) if isinstance(value, str) else str(value)


class Tally:
    """Conditions one candidate met or missed, for evidence like
    'location (2, 0, 0) ≈ (2, 0, 0) ±0.01 ✓; scale (1, 1, 1) ≠ (2, 2, 2) ✗'."""

    def __init__(self) -> None:
        self.items: list[tuple[bool, str]] = []

    def add(self, ok: bool, text: str) -> None:
        self.items.append((ok, text))

    @property
    def ok(self) -> bool:
        return all(ok for ok, _ in self.items)

    @property
    def misses(self) -> int:
        return sum(1 for ok, _ in self.items if not ok)

    def text(self) -> str:
        return "; ".join(f"{t} {'✓' if ok else '✗'}" for ok, t in self.items) or "no conditions"

    def verdict(self, subject: str) -> CheckResult:
        """Pass when every condition was met; the evidence is `subject: <conditions>`."""
        return verdict(self.ok, f"{subject}: {self.text()}")

    def number(self, label: str, actual: Any, expected: float | None, tol: float) -> None:
        if expected is None:
            return
        if not isinstance(actual, int | float) or isinstance(actual, bool):
            self.add(False, f"{label} is {fmt(actual)}, expected {fmt(expected)}")
            return
        ok = abs(float(actual) - expected) <= tol
        self.add(ok, f"{label} {fmt(actual)} {'≈' if ok else '≠'} {fmt(expected)} ±{tol:g}")

    def vector(
        self,
        label: str,
        actual: Any,
        expected: Iterable[float] | None,
        tol: float,
        diff: Callable[[float, float], float] = lambda a, b: abs(a - b),
    ) -> None:
        if expected is None:
            return
        want = list(expected)
        if not isinstance(actual, list) or len(actual) < len(want):
            self.add(False, f"{label} is {fmt(actual)}, expected {fmt(want)}")
            return
        got = [float(a) for a in actual[: len(want)]]
        ok = all(diff(a, b) <= tol for a, b in zip(got, want, strict=True))
        self.add(ok, f"{label} {fmt(got)} {'≈' if ok else '≠'} {fmt(want)} ±{tol:g}")

    def equal(self, label: str, actual: Any, expected: Any) -> None:
        if expected is None:
            return
        ok = actual == expected
        self.add(ok, f"{label} {fmt(actual)}" + ("" if ok else f", expected {fmt(expected)}"))


def best(
    candidates: list[dict[str, Any]], judge: Callable[[dict[str, Any]], Tally]
) -> tuple[dict[str, Any], Tally]:
    """The first candidate that meets every condition, else the one that misses fewest.
    Callers say why there is none before asking, so `candidates` is never empty."""
    found: tuple[dict[str, Any], Tally] | None = None
    for candidate in candidates:
        tally = judge(candidate)
        if tally.ok:
            return candidate, tally
        if found is None or tally.misses < found[1].misses:
            found = (candidate, tally)
    assert found is not None, "no candidates to judge"
    return found


def verdict_on(found: tuple[dict[str, Any], Tally], what: str, path: str) -> CheckResult:
    """The tally's verdict on the candidate, as `<what> '<name>' in <path>: ...`."""
    entry, tally = found
    return tally.verdict(f"{what} {entry.get('name')!r} in {path}")
