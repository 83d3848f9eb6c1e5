"""Blender checks for how a scene is set up beyond its objects' placement: the world's
environment (HDRI) texture, image textures linked into shader sockets, visibility,
constraints, text objects and particle systems.

They read the same dump as the other `blender_*` checks (app/probes/guest_scripts/
blender_dump.py; its shape is in docs/checks-blender.md) and share its judging helpers
(app/checks/blender_scene.py).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

from pydantic import Field

from app.checks.base import CheckResult, CheckState, failed, needs_any, passed, verdict
from app.checks.blender import Setting
from app.checks.blender_scene import (
    PROBE,
    BlenderParams,
    Tally,
    best,
    fmt,
    names,
    objects,
    scene_dump,
    scene_object,
    section,
)
from app.checks.registry import register


def _image_matches(ref: Mapping[str, Any], wanted: str) -> bool:
    """An image is named by its file name ('studio.exr'), its full path, or the name of
    Blender's image datablock; the file name is what a person sees in the node."""
    file = str(ref.get("file") or "")
    return wanted in (ref.get("name"), file, posixpath.basename(file.replace("\\", "/")))


def _shown(refs: list[dict[str, Any]]) -> str:
    return (
        ", ".join(posixpath.basename(str(r.get("file") or r.get("name"))) for r in refs) or "none"
    )


def _judge(
    entry: Mapping[str, Any], settings: Mapping[str, Setting], tol: float, what: str
) -> Tally:
    """Settings by Blender's property name: numbers within `tol`, others equal."""
    t = Tally()
    for key, want in settings.items():
        if key not in entry:
            t.add(False, f"{key} is not a setting of {what}")
        elif isinstance(want, bool | str) or want is None:
            t.equal(key, entry[key], want)
        elif isinstance(want, int | float):
            t.number(key, entry[key], float(want), tol)
        else:
            t.vector(key, entry[key], [float(v) for v in want], tol)
    return t


# --- world environment ------------------------------------------------------------


class WorldTextureParams(BlenderParams):
    image: str
    """The environment image: its file name (e.g. 'studio.exr'), full path, or Blender
    image name."""
    strength: float | None = None
    """The Background node's strength, within `tolerance`; omit to accept any."""
    tolerance: float = Field(default=0.02, ge=0)
    """Absolute tolerance on the strength."""


@register("blender_world_texture", WorldTextureParams, probes=((PROBE, "path"),))
def blender_world_texture(state: CheckState, p: WorldTextureParams) -> CheckResult:
    """Passes when an Environment Texture node showing `image` feeds the world's
    Background colour (directly or through other nodes): an HDRI lights the scene.
    A texture node that is loaded but not linked does not count."""
    dump = scene_dump(state, p.path)
    if isinstance(dump, CheckResult):
        return dump
    world = section(dump, "world")
    if not world:
        return failed(f"the scene in {p.path} has no world")
    background = section(world, "background")
    if not background:
        return failed(f"the world {world.get('name')!r} in {p.path} has no Background node")
    linked = [r for r in background.get("environment") or [] if isinstance(r, dict)]
    loaded = [str(f) for f in world.get("images") or []]
    t = Tally()
    t.add(
        any(_image_matches(r, p.image) for r in linked),
        f"environment feeding the background: {_shown(linked)} (want {p.image!r}; "
        f"environment nodes: {', '.join(posixpath.basename(f) for f in loaded) or 'none'})",
    )
    t.number("strength", background.get("strength"), p.strength, p.tolerance)
    return t.verdict(f"world {world.get('name')!r} in {p.path}")


# --- image textures into shader sockets --------------------------------------------


class TextureLinkParams(BlenderParams):
    image: str
    """The texture's image: file name (e.g. 'brick_diff.jpg'), full path, or image name."""
    socket: str
    """The shader input it must reach, as Blender labels it: 'Base Color', 'Normal',
    'Roughness', 'Metallic', 'Alpha', ... (through a Normal Map node counts)."""
    object: str | None = None
    """Look only at the materials of this object. Give `object` or `material`."""
    material: str | None = None
    """Look only at the material with this name."""

    _needs_where = needs_any("object", "material", message="give object or material")


@register("blender_texture_link", TextureLinkParams, probes=((PROBE, "path"),))
def blender_texture_link(state: CheckState, p: TextureLinkParams) -> CheckResult:
    """Passes when an Image Texture node showing `image` is linked (directly or through
    other nodes) into the `socket` input of a shader node (a Principled BSDF, an
    emission, ...) of the object's materials, or of the named material."""
    dump = scene_dump(state, p.path)
    if isinstance(dump, CheckResult):
        return dump
    wanted: list[str | None]
    if p.object is not None:
        obj = scene_object(state, p.path, p.object)
        if isinstance(obj, CheckResult):
            return obj
        wanted = list(obj.get("materials") or [])
        where = f"materials of {p.object!r} ({', '.join(str(m) for m in wanted) or 'none'})"
    else:
        wanted, where = [p.material], f"material {p.material!r}"
    if p.object is not None and p.material is not None:
        wanted = [m for m in wanted if m == p.material]
    mats = [
        m for m in dump.get("materials") or [] if isinstance(m, dict) and m.get("name") in wanted
    ]
    if not mats:
        return failed(
            f"{p.path}: no {where} found; materials: {names(dump.get('materials') or [])}"
        )
    links = [
        dict(link, material=m.get("name"))
        for m in mats
        for link in m.get("texture_links") or []
        if isinstance(link, dict)
    ]
    ok = any(link.get("socket") == p.socket and _image_matches(link, p.image) for link in links)
    shown = "; ".join(
        f"{posixpath.basename(str(link.get('file') or link.get('name')))} → {link.get('socket')}"
        for link in links
    )
    return verdict(
        ok,
        f"{p.path}, {where}: image textures linked: {shown or 'none'}; "
        f"want {p.image!r} → {p.socket!r}",
    )


# --- visibility ---------------------------------------------------------------------


class VisibilityParams(BlenderParams):
    name: str
    """The object's exact name."""
    hide_viewport: bool | None = None
    """Whether the object is disabled in viewports (the monitor icon)."""
    hidden: bool | None = None
    """Whether the object is hidden in the view layer (the eye icon in the Outliner)."""
    hide_render: bool | None = None
    """Whether the object is disabled in renders (the camera icon)."""

    _needs_a_state = needs_any(
        "hide_viewport",
        "hidden",
        "hide_render",
        message="give hide_viewport, hidden or hide_render",
    )


@register("blender_visibility", VisibilityParams, probes=((PROBE, "path"),))
def blender_visibility(state: CheckState, p: VisibilityParams) -> CheckResult:
    """Passes when the object's viewport, view-layer (eye) and render visibility are as
    given; the ones left out are not looked at."""
    obj = scene_object(state, p.path, p.name)
    if isinstance(obj, CheckResult):
        return obj
    t = Tally()
    t.equal("hide_viewport", obj.get("hide_viewport"), p.hide_viewport)
    t.equal("hidden (eye)", obj.get("hidden"), p.hidden)
    t.equal("hide_render", obj.get("hide_render"), p.hide_render)
    return t.verdict(f"object {p.name!r} in {p.path}")


# --- constraints --------------------------------------------------------------------


class ConstraintParams(BlenderParams):
    object: str
    """The constrained object's exact name."""
    type: str
    """Constraint type as Blender names it: TRACK_TO, COPY_LOCATION, FOLLOW_PATH,
    CHILD_OF, LIMIT_ROTATION, DAMPED_TRACK, ..."""
    target: str | None = None
    """The target object's name, when the constraint has one."""
    settings: dict[str, Setting] = Field(default_factory=dict)
    """Other settings by Blender's property name, e.g. {track_axis: TRACK_NEGATIVE_Z,
    up_axis: UP_Y, influence: 1.0}."""
    tolerance: float = Field(default=1e-3, ge=0)
    """Absolute tolerance for number settings."""
    exists: bool = True
    """False: passes when the object has no constraint of this type."""


@register("blender_constraint", ConstraintParams, probes=((PROBE, "path"),))
def blender_constraint(state: CheckState, p: ConstraintParams) -> CheckResult:
    """Passes when the object has a constraint of that type, aimed at `target`, whose
    settings match; with `exists: false`, when it has none of that type."""
    obj = scene_object(state, p.path, p.object)
    if isinstance(obj, CheckResult):
        return obj
    cons = [c for c in obj.get("constraints") or [] if isinstance(c, dict)]
    stack = ", ".join(f"{c.get('name')} ({c.get('type')})" for c in cons) or "none"
    matching = [c for c in cons if c.get("type") == p.type]
    line = f"{p.object!r} in {p.path}: constraints {stack}"
    if not p.exists:
        return failed(f"{line}; has a {p.type}") if matching else passed(f"{line}; no {p.type}")
    if not matching:
        return failed(f"{line}; no {p.type}")
    settings = dict(p.settings)
    if p.target is not None:
        settings["target"] = p.target
    con, tally = best(matching, lambda c: _judge(c, settings, p.tolerance, str(p.type)))
    return tally.verdict(f"{p.object!r} constraint {con.get('name')!r} ({p.type}) in {p.path}")


# --- text objects -------------------------------------------------------------------


class TextParams(BlenderParams):
    name: str | None = None
    """The text object's exact name; omit to accept any text object."""
    body: str | None = None
    """The text it must show, exactly (line breaks included)."""
    settings: dict[str, Setting] = Field(default_factory=dict)
    """Text settings by Blender's property name, e.g. {size: 1.5, extrude: 0.1,
    align_x: CENTER, font: 'Bfont Regular'}."""
    tolerance: float = Field(default=1e-3, ge=0)
    """Absolute tolerance for number settings."""


@register("blender_text", TextParams, probes=((PROBE, "path"),))
def blender_text(state: CheckState, p: TextParams) -> CheckResult:
    """Passes when a text object (by name, or any) shows `body` and has the settings
    given."""
    dump = scene_dump(state, p.path)
    if isinstance(dump, CheckResult):
        return dump
    texts = [o for o in objects(dump) if o.get("type") == "FONT"]
    if p.name is not None:
        texts = [o for o in texts if o.get("name") == p.name]
    if not texts:
        wanted = f"text object {p.name!r}" if p.name else "text object"
        return failed(f"{p.path} has no {wanted}; objects: {names(objects(dump))}")

    def judge(obj: dict[str, Any]) -> Tally:
        data = section(obj, "text")
        t = _judge(data, p.settings, p.tolerance, "a text object")
        if p.body is not None:
            body = data.get("body")
            t.add(
                body == p.body,
                f"text {fmt(body)}" + ("" if body == p.body else f", expected {p.body!r}"),
            )
        return t

    obj, tally = best(texts, judge)
    return tally.verdict(f"text object {obj.get('name')!r} in {p.path}")


# --- particle systems ---------------------------------------------------------------


class ParticlesParams(BlenderParams):
    object: str
    """The emitting object's exact name."""
    settings: dict[str, Setting] = Field(default_factory=dict)
    """Particle settings by Blender's property name, e.g. {count: 2000, lifetime: 100,
    frame_start: 1, frame_end: 50, normal_factor: 5, type: EMITTER, render_type: HALO}."""
    tolerance: float = Field(default=1e-3, ge=0)
    """Absolute tolerance for number settings."""


@register("blender_particles", ParticlesParams, probes=((PROBE, "path"),))
def blender_particles(state: CheckState, p: ParticlesParams) -> CheckResult:
    """Passes when the object has a particle system whose settings match (any system
    may; with no settings given, having one passes)."""
    obj = scene_object(state, p.path, p.object)
    if isinstance(obj, CheckResult):
        return obj
    systems = [s for s in obj.get("particle_systems") or [] if isinstance(s, dict)]
    if not systems:
        return failed(f"{p.object!r} in {p.path} has no particle system")
    found, tally = best(
        systems, lambda s: _judge(section(s, "settings"), p.settings, p.tolerance, "particles")
    )
    return tally.verdict(f"{p.object!r} particle system {found.get('name')!r} in {p.path}")
