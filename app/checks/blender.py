"""Checks on a Blender scene, read from the `blender_scene` probe's dump.

Scoring runs Blender in background mode in the guest on the .blend file a check
names (app/probes/blender.py) and hands the JSON dump here. Every check is
pass/fail (score 1 or 0): a scene with the cube in the right place but the wrong
rotation is not "half moved". Compose several checks in the task's tree for
partial credit. Numbers are compared with an absolute tolerance; rotations are in
degrees (as Blender's UI shows them) and compared modulo 360; colours are linear
RGB as Blender stores them, or '#rrggbb' as Blender's hex field shows them (sRGB).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import Field, field_validator, model_validator

from app.checks.base import (
    CheckParams,
    CheckResult,
    CheckState,
    GuestPath,
    Probe,
    failed,
    passed,
    verdict,
)
from app.checks.registry import register

Vec3 = tuple[float, float, float]
Color = tuple[float, float, float] | str
"""Linear RGB in [0, 1] as Blender stores it, or '#rrggbb' (sRGB, Blender's hex field)."""
Setting = bool | int | float | str | list[float] | list[int] | list[bool] | None

PROBE = "blender_scene"
HEX_COLOR = re.compile(r"^#[0-9a-fA-F]{6}$")


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


def _check_color(value: Color | None) -> Color | None:
    if isinstance(value, str) and not HEX_COLOR.match(value):
        raise ValueError(f"a colour is [r, g, b] (linear, 0-1) or '#rrggbb', got {value!r}")
    if isinstance(value, tuple) and not all(0.0 <= c <= 1000.0 for c in value):
        raise ValueError(f"colour channels must not be negative, got {value!r}")
    return value


def _check_regex(value: str | None) -> str | None:
    if value is not None:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from None
    return value


# --- reading the dump -------------------------------------------------------------


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


def _objects(dump: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [o for o in dump["objects"] if isinstance(o, dict)]


def _object_named(dump: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    return next((o for o in _objects(dump) if o.get("name") == name), None)


def _names(objects: Iterable[Mapping[str, Any]]) -> str:
    names = [str(o.get("name")) for o in objects]
    shown = ", ".join(names[:12]) + (f" … ({len(names)} in all)" if len(names) > 12 else "")
    return shown or "none"


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list | tuple):
        return "(" + ", ".join(_fmt(v) for v in value) + ")"
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
            self.add(False, f"{label} is {_fmt(actual)}, expected {_fmt(expected)}")
            return
        ok = abs(float(actual) - expected) <= tol
        self.add(ok, f"{label} {_fmt(actual)} {'≈' if ok else '≠'} {_fmt(expected)} ±{tol:g}")

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
            self.add(False, f"{label} is {_fmt(actual)}, expected {_fmt(want)}")
            return
        got = [float(a) for a in actual[: len(want)]]
        ok = all(diff(a, b) <= tol for a, b in zip(got, want, strict=True))
        self.add(ok, f"{label} {_fmt(got)} {'≈' if ok else '≠'} {_fmt(want)} ±{tol:g}")

    def equal(self, label: str, actual: Any, expected: Any) -> None:
        if expected is None:
            return
        ok = actual == expected
        self.add(ok, f"{label} {_fmt(actual)}" + ("" if ok else f", expected {_fmt(expected)}"))


def _angle_diff(a_deg: float, b_deg: float) -> float:
    d = (a_deg - b_deg) % 360.0
    return min(d, 360.0 - d)


def _best(
    candidates: list[dict[str, Any]], judge: Callable[[dict[str, Any]], Tally]
) -> tuple[dict[str, Any], Tally]:
    """The first candidate that meets every condition, else the one that misses fewest.
    Callers say why there is none before asking, so `candidates` is never empty."""
    best: tuple[dict[str, Any], Tally] | None = None
    for candidate in candidates:
        tally = judge(candidate)
        if tally.ok:
            return candidate, tally
        if best is None or tally.misses < best[1].misses:
            best = (candidate, tally)
    assert best is not None, "no candidates to judge"
    return best


def _verdict(found: tuple[dict[str, Any], Tally], what: str, path: str) -> CheckResult:
    obj, tally = found
    return tally.verdict(f"{what} {obj.get('name')!r} in {path}")


class BlenderParams(CheckParams):
    path: GuestPath
    """The .blend file in the guest, e.g. '~/Desktop/scene.blend'."""


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
        found = _object_named(dump, name)
        return [found] if found is not None else []
    assert regex is not None
    return [o for o in _objects(dump) if re.search(regex, str(o.get("name", "")))]


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
        t.add(p.material in slots, f"materials {_fmt(slots)} hold {p.material!r}")
    if p.collection is not None:
        cols = obj.get("collections") or []
        t.add(p.collection in cols, f"collections {_fmt(cols)} hold {p.collection!r}")
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
            return failed(f"{p.path} has object(s) {wanted}: {_names(candidates)}")
        return passed(f"{p.path} has no object {wanted}")
    if not candidates:
        return failed(f"{p.path} has no object {wanted}; objects: {_names(_objects(dump))}")
    return _verdict(_best(candidates, lambda o: _judge_object(o, p)), "object", p.path)


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
        for o in _objects(dump)
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
    return verdict(ok, f"{p.path} has {counted} ({_names(chosen)}), wanted {want}")


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
    dump = scene_dump(state, p.path)
    if isinstance(dump, CheckResult):
        return dump
    obj = _object_named(dump, p.object)
    if obj is None:
        return failed(f"{p.path} has no object {p.object!r}; objects: {_names(_objects(dump))}")
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
    mod, tally = _best(matching, lambda m: _judge_modifier(m, p))
    return tally.verdict(f"{p.object!r} modifier {mod.get('name')!r} ({p.type}) in {p.path}")


# --- materials and world ------------------------------------------------------------


class MaterialParams(BlenderParams):
    name: str | None = None
    """The material's exact name. Give `name` or `object`."""
    object: str | None = None
    """Check the material(s) in this object's slots instead (any slot may pass)."""
    base_color: Color | None = None
    """Principled BSDF Base Color: [r, g, b] linear, or '#rrggbb' as the hex field shows."""
    metallic: float | None = None
    """Principled BSDF Metallic."""
    roughness: float | None = None
    """Principled BSDF Roughness."""
    emission: Color | None = None
    """Principled BSDF Emission colour."""
    emission_strength: float | None = None
    """Principled BSDF Emission Strength."""
    alpha: float | None = None
    """Principled BSDF Alpha."""
    inputs: dict[str, float] = Field(default_factory=dict)
    """Other Principled BSDF number inputs by their 3.4 names, e.g. {Transmission: 1.0}."""
    tolerance: float = Field(default=0.02, ge=0)
    """Absolute tolerance on every channel and number."""

    _colors = field_validator("base_color", "emission")(_check_color)

    @model_validator(mode="after")
    def _one_selector(self) -> MaterialParams:
        if (self.name is None) == (self.object is None):
            raise ValueError("give exactly one of name and object")
        return self


def _judge_material(mat: Mapping[str, Any], p: MaterialParams) -> Tally:
    t = Tally()
    bsdf = mat.get("principled")
    wanted: list[tuple[str, float | Vec3]] = [
        (label, value)
        for label, value in (
            ("Base Color", linear_color(p.base_color) if p.base_color is not None else None),
            ("Metallic", p.metallic),
            ("Roughness", p.roughness),
            ("Emission", linear_color(p.emission) if p.emission is not None else None),
            ("Emission Strength", p.emission_strength),
            ("Alpha", p.alpha),
            *p.inputs.items(),
        )
        if value is not None
    ]
    if not isinstance(bsdf, dict):
        if wanted:
            t.add(False, "no Principled BSDF node (nodes off or removed)")
        return t
    for label, want in wanted:
        socket = bsdf.get(label)
        if not isinstance(socket, dict):
            t.add(False, f"no input {label!r}")
        elif socket.get("linked"):
            t.add(False, f"{label} is driven by a node link, not a value")
        elif isinstance(want, tuple):
            t.vector(label, socket.get("value"), want, p.tolerance)
        else:
            t.number(label, socket.get("value"), want, p.tolerance)
    return t


@register("blender_material", MaterialParams, probes=((PROBE, "path"),))
def blender_material(state: CheckState, p: MaterialParams) -> CheckResult:
    """Passes when the material (by name, or one in an object's slots) exists and its
    Principled BSDF values match: base colour, metallic, roughness, emission, alpha,
    or any other number input."""
    dump = scene_dump(state, p.path)
    if isinstance(dump, CheckResult):
        return dump
    materials = [m for m in dump.get("materials") or [] if isinstance(m, dict)]
    if p.object is not None:
        obj = _object_named(dump, p.object)
        if obj is None:
            return failed(f"{p.path} has no object {p.object!r}; objects: {_names(_objects(dump))}")
        slots = [s for s in obj.get("materials") or [] if s]
        candidates = [m for m in materials if m.get("name") in slots]
        if not candidates:
            return failed(f"object {p.object!r} in {p.path} has no material")
    else:
        candidates = [m for m in materials if m.get("name") == p.name]
        if not candidates:
            return failed(f"{p.path} has no material {p.name!r}; materials: {_names(materials)}")
    return _verdict(_best(candidates, lambda m: _judge_material(m, p)), "material", p.path)


class WorldParams(BlenderParams):
    color: Color | None = None
    """The world background colour: [r, g, b] linear, or '#rrggbb' (sRGB)."""
    strength: float | None = None
    """The Background node's strength."""
    tolerance: float = Field(default=0.02, ge=0)
    """Absolute tolerance on every channel and on the strength."""

    _colors = field_validator("color")(_check_color)

    @model_validator(mode="after")
    def _something(self) -> WorldParams:
        if self.color is None and self.strength is None:
            raise ValueError("give color and/or strength")
        return self


@register("blender_world", WorldParams, probes=((PROBE, "path"),))
def blender_world(state: CheckState, p: WorldParams) -> CheckResult:
    """Passes when the scene's world background has that colour and/or strength
    (the Background node when the world uses nodes, else the world colour)."""
    dump = scene_dump(state, p.path)
    if isinstance(dump, CheckResult):
        return dump
    world = dump.get("world")
    if not isinstance(world, dict):
        return failed(f"the scene in {p.path} has no world")
    t = Tally()
    background = world.get("background") if world.get("use_nodes") else None
    if isinstance(background, dict):
        if p.color is not None:
            if background.get("color_linked"):
                t.add(False, "Color is driven by a node link (a texture), not a value")
            else:
                t.vector("color", background.get("color"), linear_color(p.color), p.tolerance)
        t.number("strength", background.get("strength"), p.strength, p.tolerance)
    else:
        if p.color is not None:
            t.vector("color", world.get("color"), linear_color(p.color), p.tolerance)
        if p.strength is not None:
            t.add(False, "strength: the world has no Background node")
    return t.verdict(f"world {world.get('name')!r} in {p.path}")


# --- render settings and animation --------------------------------------------------


class RenderParams(BlenderParams):
    engine: str | None = None
    """BLENDER_EEVEE, BLENDER_WORKBENCH or CYCLES."""
    resolution_x: int | None = Field(default=None, gt=0)
    """Output width in pixels (before the percentage)."""
    resolution_y: int | None = Field(default=None, gt=0)
    """Output height in pixels (before the percentage)."""
    resolution_percentage: int | None = Field(default=None, gt=0)
    """The resolution scale in percent."""
    fps: float | None = Field(default=None, gt=0)
    """Frames per second (fps / fps_base), within 0.01."""
    frame_start: int | None = None
    """First frame of the animation range."""
    frame_end: int | None = None
    """Last frame of the animation range."""
    file_format: str | None = None
    """Output file format as Blender names it: PNG, JPEG, OPEN_EXR, FFMPEG, ..."""
    output_path: str | None = None
    """The output path, '~/...' or absolute, compared after resolving '//' and '~'."""
    camera: str | None = None
    """The scene camera's object name."""

    @model_validator(mode="after")
    def _something(self) -> RenderParams:
        if not set(self.model_fields_set) - {"path"}:
            raise ValueError("give at least one render setting to check")
        return self


def _norm_output(path: str, home: str) -> str:
    expanded = home.rstrip("/") + path[1:] if path.startswith("~/") else path
    trailing = "/" if expanded.endswith("/") else ""
    parts: list[str] = []
    for part in expanded.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
    return "/" + "/".join(parts) + (trailing if parts else "")


@register("blender_render", RenderParams, probes=((PROBE, "path"),))
def blender_render(state: CheckState, p: RenderParams) -> CheckResult:
    """Passes when the scene's render settings match every one given: engine,
    resolution and percentage, fps, frame range, output format and path, camera."""
    dump = scene_dump(state, p.path)
    if isinstance(dump, CheckResult):
        return dump
    scene = dump.get("scene")
    if not isinstance(scene, dict):
        return failed(f"the Blender dump of {p.path} has no scene settings")
    t = Tally()
    t.equal("engine", scene.get("engine"), p.engine)
    t.equal("resolution_x", scene.get("resolution_x"), p.resolution_x)
    t.equal("resolution_y", scene.get("resolution_y"), p.resolution_y)
    t.equal("resolution %", scene.get("resolution_percentage"), p.resolution_percentage)
    if p.fps is not None:
        fps, base = scene.get("fps"), scene.get("fps_base") or 1.0
        actual = fps / base if isinstance(fps, int | float) and base else None
        t.number("fps", actual, p.fps, 0.01)
    t.equal("frame_start", scene.get("frame_start"), p.frame_start)
    t.equal("frame_end", scene.get("frame_end"), p.frame_end)
    t.equal("file_format", scene.get("file_format"), p.file_format)
    if p.output_path is not None:
        home = str(dump.get("home") or "")
        if p.output_path.startswith("~/") and not home:
            t.add(False, "output path: the dump does not say the guest's home")
        else:
            actual = str(scene.get("filepath_abs"))
            want = _norm_output(p.output_path, home)
            t.add(
                _norm_output(actual, home) == want,
                f"output path {actual!r}" + ("" if actual == want else f", expected {want!r}"),
            )
    t.equal("camera", scene.get("camera"), p.camera)
    return t.verdict(f"render settings of {p.path}")


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
    dump = scene_dump(state, p.path)
    if isinstance(dump, CheckResult):
        return dump
    obj = _object_named(dump, p.object)
    if obj is None:
        return failed(f"{p.path} has no object {p.object!r}; objects: {_names(_objects(dump))}")
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


# --- lights and cameras -------------------------------------------------------------


class LightParams(BlenderParams):
    name: str | None = None
    """The light object's exact name; None = any light in the scene may pass."""
    light_type: str | None = None
    """POINT, SUN, SPOT or AREA."""
    energy: float | None = None
    """Power in W (strength for a sun), within `energy_tolerance`."""
    energy_tolerance: float = Field(default=0.5, ge=0)
    """Absolute tolerance for energy."""
    color: Color | None = None
    """Light colour: [r, g, b] linear or '#rrggbb' (sRGB)."""
    tolerance: float = Field(default=0.02, ge=0)
    """Absolute tolerance for colour channels."""

    _colors = field_validator("color")(_check_color)


def _judge_light(obj: Mapping[str, Any], p: LightParams) -> Tally:
    t = Tally()
    light = obj.get("light") if isinstance(obj.get("light"), dict) else {}
    assert isinstance(light, dict)
    t.equal("type", light.get("type"), p.light_type)
    t.number("energy", light.get("energy"), p.energy, p.energy_tolerance)
    if p.color is not None:
        t.vector("color", light.get("color"), linear_color(p.color), p.tolerance)
    return t


@register("blender_light", LightParams, probes=((PROBE, "path"),))
def blender_light(state: CheckState, p: LightParams) -> CheckResult:
    """Passes when the named light (or, without a name, any light) has that type,
    energy and colour. Place it with `blender_object`."""
    dump = scene_dump(state, p.path)
    if isinstance(dump, CheckResult):
        return dump
    lights = [o for o in _objects(dump) if o.get("type") == "LIGHT"]
    if p.name is not None:
        lights = [o for o in lights if o.get("name") == p.name]
    if not lights:
        wanted = f"light {p.name!r}" if p.name else "light"
        return failed(f"{p.path} has no {wanted}; objects: {_names(_objects(dump))}")
    return _verdict(_best(lights, lambda o: _judge_light(o, p)), "light", p.path)


class CameraParams(BlenderParams):
    name: str | None = None
    """The camera object's exact name; None = the scene's active camera."""
    scene_camera: bool | None = None
    """True: this camera must be the scene's active camera."""
    camera_type: str | None = None
    """PERSP, ORTHO or PANO."""
    lens: float | None = None
    """Focal length in mm, within `lens_tolerance`."""
    lens_tolerance: float = Field(default=0.1, ge=0)
    """Absolute tolerance for the focal length."""
    looks_at: str | None = None
    """An object's name: the camera's view axis must point at its origin."""
    angle_tolerance: float = Field(default=5.0, ge=0)
    """Degrees between the view axis and the direction to `looks_at`."""


def _view_angle(camera: Mapping[str, Any], target: Mapping[str, Any]) -> float | None:
    """Degrees between the camera's view axis (its local -Z) and the line to target."""
    matrix, where = camera.get("matrix_world"), target.get("matrix_world")
    if not (isinstance(matrix, list) and isinstance(where, list)):
        return None
    origin = [float(matrix[r][3]) for r in range(3)]
    forward = [-float(matrix[r][2]) for r in range(3)]
    to_target = [float(where[r][3]) - origin[r] for r in range(3)]
    nf = math.sqrt(sum(v * v for v in forward))
    nt = math.sqrt(sum(v * v for v in to_target))
    if nf == 0 or nt == 0:
        return None
    cos = sum(a * b for a, b in zip(forward, to_target, strict=True)) / (nf * nt)
    return math.degrees(math.acos(max(-1.0, min(1.0, cos))))


@register("blender_camera", CameraParams, probes=((PROBE, "path"),))
def blender_camera(state: CheckState, p: CameraParams) -> CheckResult:
    """Passes when the camera (by name, or the scene's active camera) is the active
    camera if asked, has that type and focal length, and points at `looks_at`."""
    dump = scene_dump(state, p.path)
    if isinstance(dump, CheckResult):
        return dump
    scene = dump.get("scene") if isinstance(dump.get("scene"), dict) else {}
    assert isinstance(scene, dict)
    active = scene.get("camera")
    name = p.name if p.name is not None else active
    if name is None:
        return failed(f"the scene in {p.path} has no active camera")
    cam = _object_named(dump, str(name))
    if cam is None or cam.get("type") != "CAMERA":
        cameras = [o for o in _objects(dump) if o.get("type") == "CAMERA"]
        return failed(f"{p.path} has no camera {name!r}; cameras: {_names(cameras)}")
    data = cam.get("camera") if isinstance(cam.get("camera"), dict) else {}
    assert isinstance(data, dict)
    t = Tally()
    if p.scene_camera is not None:
        is_active = active == name
        t.add(is_active == p.scene_camera, f"active camera {active!r}")
    t.equal("type", data.get("type"), p.camera_type)
    t.number("lens mm", data.get("lens"), p.lens, p.lens_tolerance)
    if p.looks_at is not None:
        target = _object_named(dump, p.looks_at)
        angle = _view_angle(cam, target) if target is not None else None
        if target is None:
            t.add(False, f"no object {p.looks_at!r} to look at")
        elif angle is None:
            t.add(False, f"cannot tell where it looks relative to {p.looks_at!r}")
        else:
            t.add(
                angle <= p.angle_tolerance,
                f"view axis {angle:.1f}° off {p.looks_at!r} (±{p.angle_tolerance:g}°)",
            )
    return _verdict((cam, t), "camera", p.path)
