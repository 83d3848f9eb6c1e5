"""What changed in a .blend, from its scene dumps: objects, modifiers, materials,
lights, the camera, the world and the render settings."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from app.authoring.changes import Change, by_name, changed_keys, differs

RENDER_KEYS = (
    "engine",
    "resolution_x",
    "resolution_y",
    "resolution_percentage",
    "fps",
    "fps_base",
    "frame_start",
    "frame_end",
    "filepath",
    "file_format",
    "camera",
)
PRINCIPLED_KEYS = ("Base Color", "Metallic", "Roughness", "Emission", "Emission Strength", "Alpha")


def principled_values(material: Mapping[str, Any]) -> dict[str, Any]:
    """The Principled BSDF inputs a `blender_material` check takes, by socket name
    (inputs driven by a node link have no value of their own and are left out)."""
    inputs = material.get("principled")
    if not isinstance(inputs, Mapping):
        return {}
    return {
        k: inputs[k].get("value")
        for k in PRINCIPLED_KEYS
        if isinstance(inputs.get(k), Mapping) and not inputs[k].get("linked")
    }


def blend_changes(old_facts: Mapping[str, Any], new_facts: Mapping[str, Any]) -> list[Change]:
    old: Mapping[str, Any] = old_facts.get("probe") or {}
    new: Mapping[str, Any] = new_facts.get("probe") or {}
    changes: list[Change] = []
    old_objects, new_objects = by_name(old.get("objects", [])), by_name(new.get("objects", []))
    old_types = Counter(str(o.get("type")) for o in old_objects.values())
    new_types = Counter(str(o.get("type")) for o in new_objects.values())
    for kind in sorted(set(old_types) | set(new_types)):
        if old_types[kind] != new_types[kind]:
            changes.append(Change("object_count", kind, old_types[kind], new_types[kind]))
    for name, obj in new_objects.items():
        if name not in old_objects:
            changes.append(
                Change(
                    "object_added",
                    name,
                    after={"type": obj.get("type"), "location": obj.get("location")},
                )
            )
    for name in old_objects:
        if name not in new_objects:
            changes.append(Change("object_removed", name, before=old_objects[name].get("type")))
    for name, obj in new_objects.items():
        was = old_objects.get(name) if name in old_objects else {}
        changes.extend(_object_changes(name, was or {}, obj, added=name not in old_objects))
    old_mats, new_mats = by_name(old.get("materials", [])), by_name(new.get("materials", []))
    for name, mat in new_mats.items():
        if name not in old_mats:
            changes.append(Change("material_added", name, after=principled_values(mat)))
        else:
            moved = changed_keys(
                principled_values(old_mats[name]), principled_values(mat), PRINCIPLED_KEYS
            )
            if moved:
                changes.append(
                    Change(
                        "material_changed",
                        name,
                        {k: a for k, (a, _) in moved.items()},
                        {k: b for k, (_, b) in moved.items()},
                    )
                )
    for name in old_mats:
        if name not in new_mats:
            changes.append(Change("material_removed", name))
    old_scene, new_scene = old.get("scene") or {}, new.get("scene") or {}
    for key, (a, b) in changed_keys(old_scene, new_scene, RENDER_KEYS).items():
        changes.append(Change("render_changed", key, a, b))
    old_world, new_world = _world(old.get("world")), _world(new.get("world"))
    for key, (a, b) in changed_keys(old_world, new_world, ("color", "strength")).items():
        changes.append(Change("world_changed", key, a, b))
    return changes


def _world(world: Any) -> dict[str, Any]:
    """The world's colour and strength as `blender_world` judges them."""
    if not isinstance(world, Mapping):
        return {}
    background = world.get("background") if world.get("use_nodes") else None
    if isinstance(background, Mapping):
        color = background.get("color")
        return {
            "color": None if background.get("color_linked") or color is None else color[:3],
            "strength": background.get("strength"),
        }
    color = world.get("color")
    return {"color": color[:3] if isinstance(color, list) else None}


def _shading(obj: Mapping[str, Any]) -> str | None:
    """A mesh's shading: 'smooth' (every face), 'flat' (none), 'mixed'; None when it
    is not a mesh or has no faces."""
    mesh = obj.get("mesh")
    if not isinstance(mesh, Mapping) or not mesh.get("polygons"):
        return None
    smooth = mesh.get("smooth_polygons", 0)
    return "flat" if smooth == 0 else "smooth" if smooth == mesh["polygons"] else "mixed"


def _object_changes(
    name: str, old: Mapping[str, Any], new: Mapping[str, Any], added: bool
) -> list[Change]:
    changes: list[Change] = []
    if not added:
        for key, what in (
            ("location", "object_moved"),
            ("rotation_euler", "object_rotated"),
            ("scale", "object_scaled"),
            ("materials", "object_materials"),
            ("parent", "object_parent"),
            ("hide_render", "object_hide_render"),
        ):
            if differs(old.get(key), new.get(key)):
                changes.append(Change(what, name, old.get(key), new.get(key)))
        # Shading lives in the mesh's faces: what `blender_object`'s `smooth` judges.
        was_shaded, shaded = _shading(old), _shading(new)
        if was_shaded != shaded and shaded in ("smooth", "flat"):
            changes.append(Change("object_shading", name, was_shaded, shaded))
    old_mods = {(m.get("name"), m.get("type")): m for m in old.get("modifiers", [])}
    new_mods = {(m.get("name"), m.get("type")): m for m in new.get("modifiers", [])}
    for (mod_name, mod_type), mod in new_mods.items():
        subject = f"{mod_type} {mod_name!r} on {name}"
        was = old_mods.get((mod_name, mod_type))
        if was is None:
            changes.append(
                Change("modifier_added", subject, after=mod_type, key=(name, mod_type, mod_name))
            )
        else:
            moved = changed_keys(was, mod, sorted(set(was) | set(mod)))
            if moved:
                changes.append(
                    Change(
                        "modifier_changed",
                        subject,
                        {k: a for k, (a, _) in moved.items()},
                        {k: b for k, (_, b) in moved.items()},
                        key=(name, str(mod_type), str(mod_name)),
                    )
                )
    for mod_name, mod_type in old_mods:
        if (mod_name, mod_type) not in new_mods:
            changes.append(
                Change(
                    "modifier_removed",
                    f"{mod_type} {mod_name!r} on {name}",
                    key=(name, str(mod_type), str(mod_name)),
                )
            )
    for section, what, keys in (
        ("light", "light_changed", ("type", "energy", "color")),
        ("camera", "camera_changed", ("type", "lens")),
    ):
        if section in new:
            moved = changed_keys(old.get(section) or {}, new[section], keys)
            for key, (a, b) in moved.items():
                changes.append(Change(what, f"{name} {key}", a, b, key=(name, key)))
    if differs(old.get("fcurves") or [], new.get("fcurves") or []):
        paths = sorted({f"{c.get('data_path')}[{c.get('index')}]" for c in new.get("fcurves", [])})
        changes.append(Change("keyframes_changed", name, after=paths or None))
    return changes
