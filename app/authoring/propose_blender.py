"""Checks proposed from a changed .blend (its scene dump): objects, modifiers,
materials, lights, the camera, the world and the render settings."""

from __future__ import annotations

import math
import posixpath
from collections.abc import Mapping
from typing import Any

from app.authoring.diff import Change, FileDiff, principled_values
from app.authoring.proposed import (
    ANGLE_TOLERANCE,
    COLOR_TOLERANCE,
    LOCATION_TOLERANCE,
    MODIFIER_SETTINGS,
    RENDER_PARAMS,
    ProposedCheck,
    changes_of,
    make_check,
    rounded,
)

# Blender -----------------------------------------------------------------------------------


def _degrees(radians: list[float]) -> list[float]:
    return [round(math.degrees(v), 2) for v in radians]


def blend_checks(file: FileDiff, facts: Mapping[str, Any]) -> list[ProposedCheck]:
    path = file.guest_path
    dump: Mapping[str, Any] = facts.get("probe") or {}
    objects = {str(o.get("name")): o for o in dump.get("objects", [])}
    out: list[ProposedCheck] = []
    for change in changes_of(file, "object_count"):
        out.append(
            make_check(
                "blender_object_count",
                f"{path}: {change.subject} objects {change.before} → {change.after}",
                path,
                type=change.subject,
                count=change.after,
            )
        )
    for change in changes_of(file, "object_added"):
        obj = objects[change.subject]
        params: dict[str, Any] = {
            "name": change.subject,
            "type": obj.get("type"),
            "location": rounded(obj.get("location")),
            "tolerance": LOCATION_TOLERANCE,
        }
        rotation = obj.get("rotation_euler") or [0, 0, 0]
        if any(abs(v) > 1e-4 for v in rotation):
            params.update(rotation=_degrees(rotation), angle_tolerance=ANGLE_TOLERANCE)
        if any(abs(v - 1) > 1e-4 for v in obj.get("scale") or [1, 1, 1]):
            params["scale"] = rounded(obj.get("scale"))
        material = next((m for m in obj.get("materials") or [] if m), None)
        if material:
            params["material"] = material
        out.append(make_check("blender_object", f"{path}: {change.words()}", path, **params))
    for change in changes_of(file, "object_removed"):
        out.append(
            make_check(
                "blender_object",
                f"{path}: {change.words()}",
                path,
                name=change.subject,
                exists=False,
            )
        )
    # One check per object for how it was placed, another for what it is made of.
    placed: dict[str, list[Change]] = {}
    for change in changes_of(
        file,
        "object_moved",
        "object_rotated",
        "object_scaled",
        "object_parent",
        "object_hide_render",
        "object_materials",
        "object_shading",
    ):
        placed.setdefault(change.subject, []).append(change)
    for name, changes in placed.items():
        obj = objects[name]
        params = {"name": name}
        for change in changes:
            if change.what == "object_moved":
                params.update(location=rounded(obj["location"]), tolerance=LOCATION_TOLERANCE)
            elif change.what == "object_rotated":
                params.update(
                    rotation=_degrees(obj["rotation_euler"]), angle_tolerance=ANGLE_TOLERANCE
                )
            elif change.what == "object_scaled":
                params.update(scale=rounded(obj["scale"]), tolerance=LOCATION_TOLERANCE)
            elif change.what == "object_parent":
                params["parent"] = obj.get("parent") or ""
            elif change.what == "object_hide_render":
                params["hide_render"] = bool(obj.get("hide_render"))
            elif change.what == "object_shading":
                params["smooth"] = change.after == "smooth"
            elif change.what == "object_materials":
                new = [
                    m for m in obj.get("materials") or [] if m and m not in (change.before or [])
                ]
                if new:
                    params["material"] = new[0]
        if len(params) > 1:
            why = "; ".join(c.words() for c in changes)
            out.append(make_check("blender_object", f"{path}: {why}", path, **params))
    out.extend(_modifier_checks(file, path, objects))
    out.extend(_material_checks(file, path, dump))
    out.extend(_light_camera_checks(file, path, objects))
    out.extend(_scene_checks(file, path, dump))
    return out


def _setting(value: Any) -> bool:
    """Whether a dump value is one `blender_modifier` settings can hold."""
    if isinstance(value, bool | int | float | str):
        return True
    return isinstance(value, list) and all(isinstance(v, int | float) for v in value)


def _modifier_checks(file: FileDiff, path: str, objects: Mapping[str, Any]) -> list[ProposedCheck]:
    out: list[ProposedCheck] = []
    for change in changes_of(file, "modifier_added", "modifier_changed", "modifier_removed"):
        obj_name, mod_type, mod_name = change.key
        if change.what == "modifier_removed":
            out.append(
                make_check(
                    "blender_modifier",
                    f"{path}: {change.words()}",
                    path,
                    object=obj_name,
                    type=mod_type,
                    name=mod_name,
                    exists=False,
                )
            )
            continue
        mod = next(
            m
            for m in objects[obj_name].get("modifiers", [])
            if (m.get("type"), m.get("name")) == (mod_type, mod_name)
        )
        keys = (
            MODIFIER_SETTINGS.get(mod_type, ())
            if change.what == "modifier_added"
            else tuple(change.after)
        )
        settings = {k: rounded(mod[k]) for k in keys if k in mod and _setting(mod[k])}
        params: dict[str, Any] = {"object": obj_name, "type": mod_type, "name": mod_name}
        if settings:
            params["settings"] = settings
        out.append(make_check("blender_modifier", f"{path}: {change.words()}", path, **params))
    return out


def _material_checks(file: FileDiff, path: str, dump: Mapping[str, Any]) -> list[ProposedCheck]:
    materials = {str(m.get("name")): m for m in dump.get("materials", [])}
    fields = {
        "Base Color": "base_color",
        "Metallic": "metallic",
        "Roughness": "roughness",
        "Emission": "emission",
        "Emission Strength": "emission_strength",
        "Alpha": "alpha",
    }
    out: list[ProposedCheck] = []
    for change in changes_of(file, "material_added", "material_changed"):
        values = principled_values(materials[change.subject])
        keys = (
            ("Base Color", "Metallic", "Roughness")
            if change.what == "material_added"
            else tuple(change.after)
        )
        params: dict[str, Any] = {"name": change.subject}
        for key in keys:
            value = values.get(key)
            if value is None:
                continue
            params[fields[key]] = (
                rounded(value[:3], 4) if isinstance(value, list) else rounded(value, 4)
            )
        if len(params) > 1:
            params["tolerance"] = COLOR_TOLERANCE
        out.append(make_check("blender_material", f"{path}: {change.words()}", path, **params))
    return out


def _light_camera_checks(
    file: FileDiff, path: str, objects: Mapping[str, Any]
) -> list[ProposedCheck]:
    out: list[ProposedCheck] = []
    added = {c.subject for c in changes_of(file, "object_added")}
    lights = {c.key[0] for c in changes_of(file, "light_changed")} | {
        n for n in added if objects[n].get("type") == "LIGHT"
    }
    for name in sorted(lights):
        light = objects[name].get("light") or {}
        params: dict[str, Any] = {"name": name, "light_type": light.get("type")}
        energy = light.get("energy")
        if isinstance(energy, int | float):
            params.update(
                energy=rounded(float(energy), 3), energy_tolerance=max(0.5, round(0.05 * energy, 3))
            )
        if isinstance(light.get("color"), list):
            params["color"] = rounded(light["color"][:3])
        why = "; ".join(c.words() for c in changes_of(file, "light_changed") if c.key[0] == name)
        out.append(
            make_check("blender_light", f"{path}: {why or f'added light {name}'}", path, **params)
        )
    cameras = {c.key[0] for c in changes_of(file, "camera_changed")} | {
        n for n in added if objects[n].get("type") == "CAMERA"
    }
    for name in sorted(cameras):
        camera = objects[name].get("camera") or {}
        params = {"name": name}
        if isinstance(camera.get("lens"), int | float):
            params["lens"] = rounded(float(camera["lens"]), 3)
        if camera.get("type"):
            params["camera_type"] = camera["type"]
        why = "; ".join(c.words() for c in changes_of(file, "camera_changed") if c.key[0] == name)
        out.append(
            make_check("blender_camera", f"{path}: {why or f'added camera {name}'}", path, **params)
        )
    return out


def _scene_checks(file: FileDiff, path: str, dump: Mapping[str, Any]) -> list[ProposedCheck]:
    out: list[ProposedCheck] = []
    scene: Mapping[str, Any] = dump.get("scene") or {}
    render = changes_of(file, "render_changed")
    if render:
        params: dict[str, Any] = {}
        for change in render:
            key = change.subject
            if key in ("fps", "fps_base"):
                base = scene.get("fps_base") or 1.0
                params["fps"] = round(float(scene.get("fps") or 0) / float(base), 3)
            elif key == "filepath":
                params["output_path"] = _output_path(str(scene.get("filepath") or ""), file.path)
            elif key in RENDER_PARAMS and scene.get(key) is not None:
                params[key] = scene[key]
        if params:
            why = "; ".join(c.words() for c in render)
            out.append(make_check("blender_render", f"{path}: {why}", path, **params))
    world = changes_of(file, "world_changed")
    if world:
        params = {c.subject: rounded(c.after) for c in world if c.after is not None}
        if params:
            params["tolerance"] = COLOR_TOLERANCE
            why = "; ".join(c.words() for c in world)
            out.append(make_check("blender_world", f"{path}: {why}", path, **params))
    return out


def _output_path(filepath: str, blend: str) -> str:
    """A render output path as `blender_render` takes it: Blender's '//' (beside the
    .blend) made '~/' relative, since the dump was made of a copy elsewhere."""
    if filepath.startswith("//"):
        folder = posixpath.dirname(blend)
        return "~/" + posixpath.join(folder, filepath[2:]) if folder else "~/" + filepath[2:]
    return filepath
