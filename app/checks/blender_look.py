"""Checks on how a Blender scene looks: its materials, world, lights, camera and
render settings. Read from the `blender_scene` probe's dump.

Pass/fail like every Blender check (app.checks.blender says why). Colours are
linear RGB as Blender stores them, or '#rrggbb' as Blender's hex field shows them
(sRGB); numbers are compared with an absolute tolerance. Reading the dump and
writing the evidence (the `Tally`) are app.checks.blender_scene's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pydantic import Field, field_validator, model_validator

from app.checks.base import CheckResult, CheckState, failed, needs_any
from app.checks.blender_scene import (
    PROBE,
    BlenderParams,
    Color,
    Tally,
    Vec3,
    best,
    check_color,
    linear_color,
    names,
    no_object,
    object_named,
    objects,
    scene_dump,
    section,
    verdict_on,
)
from app.checks.registry import register

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

    _colors = field_validator("base_color", "emission")(check_color)

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
        obj = object_named(dump, p.object)
        if obj is None:
            return no_object(dump, p.path, repr(p.object))
        slots = [s for s in obj.get("materials") or [] if s]
        candidates = [m for m in materials if m.get("name") in slots]
        if not candidates:
            return failed(f"object {p.object!r} in {p.path} has no material")
    else:
        candidates = [m for m in materials if m.get("name") == p.name]
        if not candidates:
            return failed(f"{p.path} has no material {p.name!r}; materials: {names(materials)}")
    return verdict_on(best(candidates, lambda m: _judge_material(m, p)), "material", p.path)


class WorldParams(BlenderParams):
    color: Color | None = None
    """The world background colour: [r, g, b] linear, or '#rrggbb' (sRGB)."""
    strength: float | None = None
    """The Background node's strength."""
    tolerance: float = Field(default=0.02, ge=0)
    """Absolute tolerance on every channel and on the strength."""

    _colors = field_validator("color")(check_color)

    _something = needs_any("color", "strength", message="give color and/or strength")


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


# --- render settings ----------------------------------------------------------------


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

    _colors = field_validator("color")(check_color)


def _judge_light(obj: Mapping[str, Any], p: LightParams) -> Tally:
    t = Tally()
    light = section(obj, "light")
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
    lights = [o for o in objects(dump) if o.get("type") == "LIGHT"]
    if p.name is not None:
        lights = [o for o in lights if o.get("name") == p.name]
    if not lights:
        wanted = f"light {p.name!r}" if p.name else "light"
        return failed(f"{p.path} has no {wanted}; objects: {names(objects(dump))}")
    return verdict_on(best(lights, lambda o: _judge_light(o, p)), "light", p.path)


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
    scene = section(dump, "scene")
    active = scene.get("camera")
    name = p.name if p.name is not None else active
    if name is None:
        return failed(f"the scene in {p.path} has no active camera")
    cam = object_named(dump, str(name))
    if cam is None or cam.get("type") != "CAMERA":
        cameras = [o for o in objects(dump) if o.get("type") == "CAMERA"]
        return failed(f"{p.path} has no camera {name!r}; cameras: {names(cameras)}")
    data = section(cam, "camera")
    t = Tally()
    if p.scene_camera is not None:
        is_active = active == name
        t.add(is_active == p.scene_camera, f"active camera {active!r}")
    t.equal("type", data.get("type"), p.camera_type)
    t.number("lens mm", data.get("lens"), p.lens, p.lens_tolerance)
    if p.looks_at is not None:
        target = object_named(dump, p.looks_at)
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
    return verdict_on((cam, t), "camera", p.path)
