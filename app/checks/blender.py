"""Checks on a Blender scene's objects: which exist, where they are, their modifiers
and their animation. Read from the `blender_scene` probe's dump.

Every Blender check is pass/fail (score 1 or 0): a scene with the cube in the right
place but the wrong rotation is not "half moved". Compose several checks in the
task's tree for partial credit. Numbers are compared with an absolute tolerance;
rotations are in degrees (as Blender's UI shows them) and compared modulo 360.
Reading the dump and writing the evidence (the `Tally`) are
app.checks.blender_scene's; how the scene looks (materials, world, lights, camera,
render settings) is checked in app.checks.blender_look.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from pydantic import Field, field_validator, model_validator

from app.checks.base import CheckResult, CheckState, failed, passed, verdict
from app.checks.blender_scene import (
    PROBE,
    BlenderParams,
    Tally,
    Vec3,
    best,
    fmt,
    names,
    no_object,
    object_named,
    objects,
    scene_dump,
    scene_object,
    verdict_on,
)
from app.checks.registry import register

Setting = bool | int | float | str | list[float] | list[int] | list[bool] | None


def _check_regex(value: str | None) -> str | None:
    if value is not None:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from None
    return value


def _angle_diff(a_deg: float, b_deg: float) -> float:
    d = (a_deg - b_deg) % 360.0
    return min(d, 360.0 - d)


# --- objects ------------------------------------------------------------------------


class ObjectParams(BlenderParams):
    name: str | None = None
    """The object's exact name, e.g. 'Cube'. Give `name` or `name_regex`."""
    name_regex: str | None = None
    """A regex the name must match (searched), e.g. '^Sphere'; any matching object may pass."""
    exists: bool = True
    """False: passes when no matching object exists (no other conditions allowed)."""
    type: str | None = None
    """Blender object type: MESH, LIGHT, CAMERA, EMPTY, CURVE, FONT, ..."""
    location: Vec3 | None = None
    """Expected location (x, y, z) in Blender units, compared within `tolerance`."""
    rotation: Vec3 | None = None
    """Expected Euler rotation (x, y, z) in degrees, modulo 360, within `angle_tolerance`."""
    scale: Vec3 | None = None
    """Expected scale (x, y, z), compared within `tolerance`."""
    dimensions: Vec3 | None = None
    """Expected bounding-box dimensions (x, y, z), compared within `tolerance`."""
    tolerance: float = Field(default=0.01, ge=0)
    """Absolute tolerance for location, scale and dimensions."""
    angle_tolerance: float = Field(default=0.5, ge=0)
    """Tolerance in degrees for rotation."""
    parent: str | None = None
    """The parent object's name; '' means the object must have no parent."""
    material: str | None = None
    """A material slot of the object must hold the material with this name."""
    collection: str | None = None
    """The object must be in the collection with this name."""
    hide_render: bool | None = None
    """Whether the object is hidden from renders."""
    smooth: bool | None = None
    """True: every face is shaded smooth; False: none is."""
    min_vertices: int | None = Field(default=None, ge=0)
    """The mesh must have at least this many vertices (before modifiers)."""

    _check_regex = field_validator("name_regex")(_check_regex)

    @model_validator(mode="after")
    def _one_selector(self) -> ObjectParams:
        if (self.name is None) == (self.name_regex is None):
            raise ValueError("give exactly one of name and name_regex")
        if not self.exists:
            conditions = set(self.model_fields_set) - {"path", "name", "name_regex", "exists"}
            if conditions:
                raise ValueError(
                    f"exists: false takes no other conditions, got {sorted(conditions)}"
                )
        return self


def _select(dump: Mapping[str, Any], name: str | None, regex: str | None) -> list[dict[str, Any]]:
    if name is not None:
        found = object_named(dump, name)
        return [found] if found is not None else []
    assert regex is not None
    return [o for o in objects(dump) if re.search(regex, str(o.get("name", "")))]


def _judge_object(obj: Mapping[str, Any], p: ObjectParams) -> Tally:
    t = Tally()
    t.equal("type", obj.get("type"), p.type)
    t.vector("location", obj.get("location"), p.location, p.tolerance)
    if p.rotation is not None:
        rot = obj.get("rotation_euler")
        degrees = [math.degrees(r) for r in rot] if isinstance(rot, list) else rot
        t.vector("rotation°", degrees, p.rotation, p.angle_tolerance, _angle_diff)
    t.vector("scale", obj.get("scale"), p.scale, p.tolerance)
    t.vector("dimensions", obj.get("dimensions"), p.dimensions, p.tolerance)
    if p.parent is not None:
        t.equal("parent", obj.get("parent") or "", p.parent)
    if p.material is not None:
        slots = obj.get("materials") or []
        t.add(p.material in slots, f"materials {fmt(slots)} hold {p.material!r}")
    if p.collection is not None:
        cols = obj.get("collections") or []
        t.add(p.collection in cols, f"collections {fmt(cols)} hold {p.collection!r}")
    t.equal("hide_render", obj.get("hide_render"), p.hide_render)
    mesh = obj.get("mesh") if isinstance(obj.get("mesh"), dict) else None
    if p.smooth is not None:
        if mesh is None:
            t.add(False, "smooth shading: not a mesh")
        else:
            faces, smooth = mesh.get("polygons", 0), mesh.get("smooth_polygons", 0)
            ok = (smooth == faces and faces > 0) if p.smooth else smooth == 0
            t.add(ok, f"{smooth} of {faces} faces smooth")
    if p.min_vertices is not None:
        count = mesh.get("vertices") if mesh else None
        t.add(
            isinstance(count, int) and count >= p.min_vertices,
            f"{count} vertices, at least {p.min_vertices} wanted",
        )
    return t


@register("blender_object", ObjectParams, probes=((PROBE, "path"),))
def blender_object(state: CheckState, p: ObjectParams) -> CheckResult:
    """Passes when an object with that name (or one matching `name_regex`) exists and
    meets every condition given: type, location, rotation, scale, dimensions,
    parent, material, collection, render visibility, smooth shading, vertex count.
    With `exists: false`, passes when no such object exists."""
    dump = scene_dump(state, p.path)
    if isinstance(dump, CheckResult):
        return dump
    wanted = repr(p.name) if p.name is not None else f"matching /{p.name_regex}/"
    candidates = _select(dump, p.name, p.name_regex)
    if not p.exists:
        if candidates:
            return failed(f"{p.path} has object(s) {wanted}: {names(candidates)}")
        return passed(f"{p.path} has no object {wanted}")
    if not candidates:
        return no_object(dump, p.path, wanted)
    return verdict_on(best(candidates, lambda o: _judge_object(o, p)), "object", p.path)


class ObjectCountParams(BlenderParams):
    type: str | None = None
    """Count only objects of this type (MESH, LIGHT, ...)."""
    name_regex: str | None = None
    """Count only objects whose name matches (searched)."""
    count: int | None = Field(default=None, ge=0)
    """The exact number wanted."""
    min: int | None = Field(default=None, ge=0)
    """At least this many."""
    max: int | None = Field(default=None, ge=0)
    """At most this many."""

    _check_regex = field_validator("name_regex")(_check_regex)

    @model_validator(mode="after")
    def _bounds(self) -> ObjectCountParams:
        if self.count is None and self.min is None and self.max is None:
            raise ValueError("give count, min or max")
        if self.count is not None and (self.min is not None or self.max is not None):
            raise ValueError("give count, or min/max, not both")
        return self


@register("blender_object_count", ObjectCountParams, probes=((PROBE, "path"),))
def blender_object_count(state: CheckState, p: ObjectCountParams) -> CheckResult:
    """Passes when the number of scene objects of a type (and/or matching a name)
    is `count`, or lies within `min`..`max`."""
    dump = scene_dump(state, p.path)
    if isinstance(dump, CheckResult):
        return dump
    chosen = [
        o
        for o in objects(dump)
        if (p.type is None or o.get("type") == p.type)
        and (p.name_regex is None or re.search(p.name_regex, str(o.get("name", ""))))
    ]
    n = len(chosen)
    what = " ".join(
        x for x in (p.type, f"matching /{p.name_regex}/" if p.name_regex else None) if x
    )
    if p.count is not None:
        ok, want = n == p.count, f"{p.count}"
    else:
        ok = (p.min is None or n >= p.min) and (p.max is None or n <= p.max)
        want = f"{p.min if p.min is not None else 0}..{p.max if p.max is not None else '∞'}"
    counted = f"{n} {what} object(s)" if what else f"{n} object(s)"
    return verdict(ok, f"{p.path} has {counted} ({names(chosen)}), wanted {want}")


# --- modifiers ----------------------------------------------------------------------


class ModifierParams(BlenderParams):
    object: str
    """The object's exact name."""
    type: str
    """Modifier type as Blender names it: SUBSURF, BEVEL, ARRAY, MIRROR, SOLIDIFY, ..."""
    name: str | None = None
    """The modifier's name, when it matters (e.g. 'Subdivision')."""
    settings: dict[str, Setting] = Field(default_factory=dict)
    """Settings by Blender's property name, e.g. {levels: 2, render_levels: 2}."""
    tolerance: float = Field(default=1e-3, ge=0)
    """Absolute tolerance for number settings."""
    exists: bool = True
    """False: passes when the object has no modifier of this type (and name)."""


def _judge_modifier(mod: Mapping[str, Any], p: ModifierParams) -> Tally:
    t = Tally()
    for key, want in p.settings.items():
        if key not in mod:
            t.add(False, f"{key} is not a setting of {mod.get('type')}")
        elif isinstance(want, bool | str) or want is None:
            t.equal(key, mod[key], want)
        elif isinstance(want, int | float):
            t.number(key, mod[key], float(want), p.tolerance)
        else:
            t.vector(key, mod[key], [float(v) for v in want], p.tolerance)
    return t


@register("blender_modifier", ModifierParams, probes=((PROBE, "path"),))
def blender_modifier(state: CheckState, p: ModifierParams) -> CheckResult:
    """Passes when the object has a modifier of that type (and name) whose settings
    match; with `exists: false`, when it has none."""
    obj = scene_object(state, p.path, p.object)
    if isinstance(obj, CheckResult):
        return obj
    mods = [m for m in obj.get("modifiers") or [] if isinstance(m, dict)]
    stack = ", ".join(f"{m.get('name')} ({m.get('type')})" for m in mods) or "none"
    matching = [
        m for m in mods if m.get("type") == p.type and (p.name is None or m.get("name") == p.name)
    ]
    label = p.type + (f" {p.name!r}" if p.name else "")
    if not p.exists:
        line = f"{p.object!r} in {p.path}: modifiers {stack}"
        return failed(f"{line}; has a {label}") if matching else passed(f"{line}; no {label}")
    if not matching:
        return failed(f"{p.object!r} in {p.path} has no {label} modifier; modifiers: {stack}")
    mod, tally = best(matching, lambda m: _judge_modifier(m, p))
    return tally.verdict(f"{p.object!r} modifier {mod.get('name')!r} ({p.type}) in {p.path}")


# --- animation ----------------------------------------------------------------------


class KeyframesParams(BlenderParams):
    object: str
    """The animated object's exact name."""
    data_path: str
    """The animated property: location, rotation_euler, scale, hide_render, ..."""
    index: int | None = Field(default=None, ge=0)
    """The channel (0 = x, 1 = y, 2 = z); None = every channel of `data_path`."""
    frames: list[float] | None = None
    """Each of these frames must hold a key on every chosen channel (others may too)."""
    values: list[float] | None = None
    """The keyed value at each of `frames` (needs `index`), in Blender units
    (radians for rotations)."""
    min_keys: int | None = Field(default=None, ge=1)
    """Every chosen channel has at least this many keys."""
    tolerance: float = Field(default=1e-3, ge=0)
    """Absolute tolerance for values (frames must match within 0.01)."""

    @model_validator(mode="after")
    def _consistent(self) -> KeyframesParams:
        if self.values is not None:
            if self.frames is None or len(self.frames) != len(self.values):
                raise ValueError("values need frames of the same length")
            if self.index is None:
                raise ValueError("values need an index (one channel)")
        return self


@register("blender_keyframes", KeyframesParams, probes=((PROBE, "path"),))
def blender_keyframes(state: CheckState, p: KeyframesParams) -> CheckResult:
    """Passes when the object's animation has keys on `data_path` (channel `index`)
    at the given frames, with the given values and at least `min_keys` keys.
    Keys are read from the action's F-curves, not the value at the current frame."""
    obj = scene_object(state, p.path, p.object)
    if isinstance(obj, CheckResult):
        return obj
    curves = [
        c
        for c in obj.get("fcurves") or []
        if isinstance(c, dict)
        and c.get("data_path") == p.data_path
        and (p.index is None or c.get("index") == p.index)
    ]
    channel = p.data_path + (f"[{p.index}]" if p.index is not None else "")
    if not curves:
        animated = sorted({f"{c.get('data_path')}[{c.get('index')}]" for c in obj["fcurves"]})
        return failed(
            f"{p.object!r} in {p.path} has no keys on {channel}; "
            f"animated: {', '.join(animated) or 'nothing'}"
        )
    t = Tally()
    for curve in curves:
        keys = [(float(f), float(v)) for f, v in curve.get("keys") or []]
        label = f"{p.data_path}[{curve.get('index')}]"
        shown = ", ".join(f"{f:g}→{v:.4g}" for f, v in keys)
        if p.min_keys is not None:
            t.add(len(keys) >= p.min_keys, f"{label} has {len(keys)} keys ({shown})")
        for i, frame in enumerate(p.frames or []):
            at = [v for f, v in keys if abs(f - frame) <= 0.01]
            if not at:
                t.add(False, f"{label} has no key at frame {frame:g} (keys: {shown})")
            elif p.values is not None:
                t.number(f"{label} at frame {frame:g}", at[0], p.values[i], p.tolerance)
            else:
                t.add(True, f"{label} key at frame {frame:g}")
    return t.verdict(f"{p.object!r} keys in {p.path}")
