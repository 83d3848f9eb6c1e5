"""DeskCraft's Blender evaluators → DeskLoop checks (see app/importers/deskcraft/checks.py)."""

from __future__ import annotations

import gzip
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from app.importers.deskcraft.rules import Leaf, Mapper, Rules, Unmapped, one_object, take


def renamed(path: str, rules: Rules) -> list[Leaf]:
    take(rules, {"expected_name": "", "old_name": ""})
    leaves: list[Leaf] = [{"check": "blender_object", "path": path, "name": rules["expected_name"]}]
    if "old_name" in rules:
        leaves.append(
            {"check": "blender_object", "path": path, "name": rules["old_name"], "exists": False}
        )
    return leaves


def light_energy(path: str, rules: Rules) -> list[Leaf]:
    take(rules, {"light_name": "", "expected_energy": "", "tolerance": ""})
    leaf: Leaf = {"check": "blender_light", "path": path, "name": rules["light_name"]}
    leaf["energy"] = rules["expected_energy"]
    if "tolerance" in rules:
        leaf["energy_tolerance"] = rules["tolerance"]
    return [leaf]


_RENDER = {
    "active_camera": "camera",
    "camera": "camera",
    "image_format": "file_format",
    "file_format": "file_format",
    "engine": "engine",
    "render_engine": "engine",
    "resolution_x": "resolution_x",
    "resolution_y": "resolution_y",
    "resolution_percentage": "resolution_percentage",
    "fps": "fps",
    "frame_start": "frame_start",
    "frame_end": "frame_end",
}


def render_settings(path: str, rules: Rules) -> list[Leaf]:
    return [{"check": "blender_render", "path": path, **take(rules, _RENDER)}]


def smooth(path: str, rules: Rules) -> list[Leaf]:
    take(rules, {"object_name": "", "object_name_contains": "", "has_smooth": ""})
    leaf: Leaf = {"check": "blender_object", "path": path, **one_object(rules)}
    leaf["smooth"] = bool(rules.get("has_smooth", True))
    return [leaf]


def modifier(path: str, rules: Rules) -> list[Leaf]:
    if "object_name" not in rules:
        raise Unmapped("blender_modifier needs the object's exact name")
    settings = {
        ("object" if k == "target_object" else k): v
        for k, v in rules.items()
        if k not in ("object_name", "modifier_type", "tolerance")
    }
    leaf: Leaf = {"check": "blender_modifier", "path": path, "object": rules["object_name"]}
    leaf["type"] = rules["modifier_type"]
    if settings:
        leaf["settings"] = settings
    if "tolerance" in rules:
        leaf["tolerance"] = rules["tolerance"]
    return [leaf]


def modifier_stack(path: str, rules: Rules) -> list[Leaf]:
    take(rules, {"object_name": "", "modifiers": "", "tolerance": ""})
    leaves: list[Leaf] = []
    for kind, settings in rules["modifiers"].items():
        leaf: Leaf = {"check": "blender_modifier", "path": path, "object": rules["object_name"]}
        leaf["type"] = kind
        if settings:
            leaf["settings"] = dict(settings)
        if "tolerance" in rules:
            leaf["tolerance"] = rules["tolerance"]
        leaves.append(leaf)
    return leaves


def hierarchy(path: str, rules: Rules) -> list[Leaf]:
    take(rules, {"parent_map": "", "not_parent": ""})
    parents: dict[str, str] = dict(rules.get("parent_map") or {})
    for child, wrong in (rules.get("not_parent") or {}).items():
        # Implied when the child must have another parent; otherwise not expressible.
        if child not in parents or parents[child] == wrong:
            raise Unmapped(f"'{child} is not a child of {wrong}' alone has no DeskLoop check")
    if not parents:
        raise Unmapped("it names no parent")
    return [
        {"check": "blender_object", "path": path, "name": child, "parent": parent}
        for child, parent in parents.items()
    ]


def parent_child(path: str, rules: Rules) -> list[Leaf]:
    take(rules, {"parent": "", "expected_children": ""})
    return [
        {"check": "blender_object", "path": path, "name": child, "parent": rules["parent"]}
        for child in rules["expected_children"]
    ]


def material(path: str, rules: Rules) -> list[Leaf]:
    take(
        rules,
        {
            "object_name": "",
            "object_name_contains": "",
            "material_name": "",
            "expected_color": "",
            "metallic": "",
            "roughness": "",
            "tolerance": "",
        },
    )
    leaf: Leaf = {"check": "blender_material", "path": path}
    leaves = [leaf]
    if "material_name" in rules:
        leaf["name"] = rules["material_name"]
        where = one_object(rules)
        leaves.append({"check": "blender_object", "path": path, **where, "material": leaf["name"]})
    elif "object_name" in rules:
        leaf["object"] = rules["object_name"]
    else:
        raise Unmapped("blender_material needs a material or the object's exact name")
    if "expected_color" in rules:
        leaf["base_color"] = list(rules["expected_color"])[:3]
    for key in ("metallic", "roughness", "tolerance"):
        if key in rules:
            leaf[key] = rules[key]
    return leaves


def collection(path: str, rules: Rules) -> list[Leaf]:
    take(rules, {"collection_name": "", "expected_members": ""})
    return [
        {"check": "blender_object", "path": path, "name": m, "collection": rules["collection_name"]}
        for m in rules["expected_members"]
    ]


def keyframes(path: str, rules: Rules) -> list[Leaf]:
    take(rules, {"object_name": "", "min_keyframe_count": "", "has_location_keys": ""})
    if not rules.get("has_location_keys", True):
        raise Unmapped("keys on something other than location are not named")
    leaf: Leaf = {"check": "blender_keyframes", "path": path, "object": rules["object_name"]}
    leaf["data_path"] = "location"
    if "min_keyframe_count" in rules:
        leaf["min_keys"] = rules["min_keyframe_count"]
    # DeskCraft asks for location keys, not keys on all three channels.
    return [{"any": [dict(leaf, index=i) for i in range(3)]}]


def render_output(path: str, rules: Rules) -> list[Leaf]:
    take(rules, {"format": "", "width": "", "height": ""})
    leaves: list[Leaf] = []
    if "format" in rules:
        leaves.append(
            {"check": "image_format", "path": path, "format": str(rules["format"]).upper()}
        )
    size: dict[str, Any] = {k: rules[k] for k in ("width", "height") if k in rules}
    if size:
        leaves.append({"check": "image_size", "path": path, **size})
    if not leaves:
        leaves.append({"check": "file_exists", "path": path})
    return leaves


def world_hdri(path: str, rules: Rules) -> list[Leaf]:
    taken = take(rules, {"hdri_filename": "image", "strength": "strength"})
    return [{"check": "blender_world_texture", "path": path, **taken}]


def material_textures(path: str, rules: Rules) -> list[Leaf]:
    take(
        rules, {"object_name": "", "textures": "", "metallic": "", "roughness": "", "tolerance": ""}
    )
    obj = rules["object_name"]
    leaves: list[Leaf] = []
    for texture in rules["textures"]:
        take(texture, {"filename": "", "connected_to": ""})
        leaves.append(
            {
                "check": "blender_texture_link",
                "path": path,
                "object": obj,
                "image": texture["filename"],
                "socket": texture["connected_to"],
            }
        )
    values: dict[str, Any] = {k: rules[k] for k in ("metallic", "roughness") if k in rules}
    if values:
        leaf: Leaf = {"check": "blender_material", "path": path, "object": obj, **values}
        if "tolerance" in rules:
            leaf["tolerance"] = rules["tolerance"]
        leaves.append(leaf)
    return leaves


def visibility(path: str, rules: Rules) -> list[Leaf]:
    take(rules, {"object_name": "", "hide_viewport": "", "hide_render": "", "expected_visible": ""})
    base: Leaf = {"check": "blender_visibility", "path": path, "name": rules["object_name"]}
    leaves: list[Leaf] = []
    if "hide_render" in rules:
        leaves.append(dict(base, hide_render=rules["hide_render"]))
    hidden = rules.get("hide_viewport")
    if "expected_visible" in rules:
        hidden = not rules["expected_visible"]
    if hidden is True:
        # DeskCraft's tasks say "press H or click the eye", which hides the object in the
        # view layer; its metric reads only the monitor toggle. Either counts here.
        leaves.append({"any": [dict(base, hidden=True), dict(base, hide_viewport=True)]})
    elif hidden is False:
        leaves.append(dict(base, hidden=False, hide_viewport=False))
    if not leaves:
        raise Unmapped("it names no visibility")
    return leaves


def constraints(path: str, rules: Rules) -> list[Leaf]:
    take(rules, {"constraints": ""})
    leaves: list[Leaf] = []
    for item in rules["constraints"]:
        rest = {k: v for k, v in item.items() if k not in ("object_name", "type", "target")}
        leaf: Leaf = {"check": "blender_constraint", "path": path, "object": item["object_name"]}
        leaf["type"] = item["type"]
        if "target" in item:
            leaf["target"] = item["target"]
        if rest:
            leaf["settings"] = rest
        leaves.append(leaf)
    return leaves


def text_content(path: str, rules: Rules) -> list[Leaf]:
    taken = take(rules, {"object_name": "name", "expected_text": "body"})
    return [{"check": "blender_text", "path": path, **taken}]


_TEXT_SETTINGS = ("size", "extrude", "align_x", "align_y", "bevel_depth", "offset_x", "offset_y")


def text_styling(path: str, rules: Rules) -> list[Leaf]:
    known = {"object_name": "name", "body": "body", "tolerance": "tolerance"}
    taken = take(rules, {**known, **{k: k for k in _TEXT_SETTINGS}})
    leaf: Leaf = {"check": "blender_text", "path": path}
    leaf.update({k: v for k, v in taken.items() if k in known.values()})
    settings = {k: v for k, v in taken.items() if k in _TEXT_SETTINGS}
    if settings:
        leaf["settings"] = settings
    return [leaf]


_PARTICLE_SETTINGS = (
    "count",
    "lifetime",
    "frame_start",
    "frame_end",
    "normal_factor",
    "type",
    "render_type",
    "emit_from",
    "lifetime_random",
    "particle_size",
)


def particles(path: str, rules: Rules) -> list[Leaf]:
    taken = take(
        rules,
        {"object_name": "object", "tolerance": "tolerance", **{k: k for k in _PARTICLE_SETTINGS}},
    )
    leaf: Leaf = {"check": "blender_particles", "path": path, "object": taken.pop("object")}
    if "tolerance" in taken:
        leaf["tolerance"] = taken.pop("tolerance")
    leaf["settings"] = taken
    return [leaf]


def scene_setting(*names: str) -> Mapper:
    def mapper(path: str, rules: Rules) -> list[Leaf]:
        return [{"check": "blender_render", "path": path, **take(rules, {n: n for n in names})}]

    return mapper


def deleted(path: str, rules: Rules) -> list[Leaf]:
    take(rules, {"deleted_object": ""})
    return [
        {"check": "blender_object", "path": path, "name": rules["deleted_object"], "exists": False}
    ]


def exists(path: str, rules: Rules) -> list[Leaf]:
    taken = take(
        rules, {"expected_type": "type", "name_contains": "name_regex", "object_name": "name"}
    )
    if "name_regex" in taken:
        taken["name_regex"] = re.escape(str(taken["name_regex"]))
    if "name" not in taken and "name_regex" not in taken:
        raise Unmapped("it names no object")
    return [{"check": "blender_object", "path": path, **taken}]


# --- start scenes: can the desktops' Blender open them? ---------------------------

DESKTOP_BLENDER = (3, 4)
"""The Blender of DeskLoop's desktops (Debian 12's 3.4). A .blend saved by a newer
major version may not open in it."""
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_HEADER = re.compile(rb"BLENDER(?:[-_][vV](\d)(\d\d)|\d\d-\d\d[vV](\d\d)(\d\d))")


def blend_version(path: Path) -> tuple[int, int] | None:
    """The Blender version that saved a .blend, from its header: plain, gzip or Zstandard
    compressed (that one through the `zstd` program; None when it is not installed or the
    header is not a Blender one). Old headers read `BLENDER-v304`, Blender 5's
    `BLENDER17-01v0500`."""
    head = path.open("rb").read(4)
    try:
        if head[:2] == b"\x1f\x8b":
            with gzip.open(path, "rb") as f:
                data = f.read(32)
        elif head == _ZSTD_MAGIC:
            if shutil.which("zstd") is None:
                return None
            out = subprocess.run(
                ["zstd", "-dc", str(path)], capture_output=True, timeout=60, check=False
            ).stdout
            data = out[:32]
        else:
            data = path.open("rb").read(32)
    except (OSError, subprocess.SubprocessError):
        return None
    found = _HEADER.match(data)
    if found is None:
        return None
    major, minor = (found.group(1), found.group(2)) if found.group(1) else found.group(3, 4)
    return int(major), int(minor)


def blend_problem(path: Path) -> str | None:
    """Why the desktops' Blender cannot open this .blend, or None when it can (or its
    version cannot be read: then nothing is claimed)."""
    version = blend_version(path)
    if version is None or version[0] <= DESKTOP_BLENDER[0]:
        return None
    ours = f"{DESKTOP_BLENDER[0]}.{DESKTOP_BLENDER[1]}"
    # Measured: Blender 3.4 refuses Blender 5's files ("not a blend file"); a 4.x file
    # may open with a warning and lose what 3.4 does not know.
    can = "cannot" if version[0] >= 5 else "may not"
    return (
        f"saved by Blender {version[0]}.{version[1]}, which the desktops' Blender {ours} "
        f"{can} open: rebuild the scene with Blender {ours}"
    )
