"""DeskCraft evaluator functions → DeskLoop checks, for `deskloop tasks import deskcraft`.

DeskCraft names an evaluator by function (`check_kdenlive_track_count`), a getter for
what it reads (`vm_file` with a path, or `vm_command_line` running its own Blender
script on a .blend) and `rules`, the options. Each entry of `MAPPERS` turns one
(function, guest path, rules) into DeskLoop check leaves, or raises `Unmapped` naming
what has no DeskLoop equivalent: the importer then reports it as a manual step rather
than guessing. Only this table knows DeskCraft's option names; it was written from
their task files' shapes, not from their code.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Leaf = dict[str, Any]
Rules = dict[str, Any]


class Unmapped(Exception):
    """This evaluator (or one of its options) has no DeskLoop check yet."""


def _take(rules: Rules, known: dict[str, str]) -> dict[str, Any]:
    """The rules renamed to DeskLoop parameter names; any other rule is Unmapped."""
    extra = sorted(set(rules) - set(known))
    if extra:
        raise Unmapped(f"options {extra} have no DeskLoop parameter")
    return {known[key]: value for key, value in rules.items()}


def _renamed(path: str, rules: Rules) -> list[Leaf]:
    _take(rules, {"expected_name": "", "old_name": ""})
    leaves: list[Leaf] = [{"check": "blender_object", "path": path, "name": rules["expected_name"]}]
    if "old_name" in rules:
        leaves.append(
            {"check": "blender_object", "path": path, "name": rules["old_name"], "exists": False}
        )
    return leaves


def _light_energy(path: str, rules: Rules) -> list[Leaf]:
    _take(rules, {"light_name": "", "expected_energy": "", "tolerance": ""})
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


def _render_settings(path: str, rules: Rules) -> list[Leaf]:
    return [{"check": "blender_render", "path": path, **_take(rules, _RENDER)}]


def _kdenlive_profile(path: str, rules: Rules) -> list[Leaf]:
    taken = _take(
        rules,
        {"width": "width", "height": "height", "frame_rate_num": "num", "frame_rate_den": "den"},
    )
    leaf: Leaf = {"check": "kdenlive_profile", "path": path}
    for key in ("width", "height"):
        if key in taken:
            leaf[key] = taken[key]
    if "num" in taken:
        fps = taken["num"] / taken.get("den", 1)
        leaf["fps"] = int(fps) if float(fps).is_integer() else round(fps, 3)
    return [leaf]


def _track_count(path: str, rules: Rules) -> list[Leaf]:
    exact = _take(rules, {"video_tracks": "video", "audio_tracks": "audio"})
    return [{"check": "kdenlive_tracks", "path": path, **exact}]


def _guide(path: str, rules: Rules) -> list[Leaf]:
    del path, rules
    # DeskCraft gives the guide's time in seconds; kdenlive_guides counts frames, and the
    # frame rate is the project's, which the importer does not read.
    raise Unmapped("a guide time in seconds needs the project's frame rate (give frames)")


def _file_exists(path: str, rules: Rules) -> list[Leaf]:
    if rules:
        raise Unmapped(f"options {sorted(rules)} have no DeskLoop parameter")
    return [{"check": "file_exists", "path": path}]


def _bin_content(path: str, rules: Rules) -> list[Leaf]:
    taken = _take(
        rules,
        {
            "expected_present": "present",
            "expected_absent": "absent",
            "expected_file": "present",
            "expected_files": "present",
        },
    )
    if isinstance(taken.get("present"), str):
        taken["present"] = [taken["present"]]
    return [{"check": "kdenlive_bin", "path": path, **taken}]


def _clip_group(path: str, rules: Rules) -> list[Leaf]:
    taken = _take(rules, {"min_groups": "min_groups", "min_clips_in_group": "min_clips"})
    # DeskCraft asks for clips the person grouped; Kdenlive's own A/V groups do not count.
    return [{"check": "kdenlive_groups", "path": path, "group_type": "Normal", **taken}]


def _proxy(path: str, rules: Rules) -> list[Leaf]:
    taken = _take(rules, {"proxy_enabled": "enabled", "proxy_min_size": "min_size"})
    return [{"check": "kdenlive_proxy", "path": path, **taken}]


def _track_lock(path: str, rules: Rules) -> list[Leaf]:
    _take(rules, {"locked_track": ""})
    return [
        {"check": "kdenlive_track", "path": path, "track": rules["locked_track"], "locked": True}
    ]


def _timeline_empty(path: str, rules: Rules) -> list[Leaf]:
    _take(rules, {"expected_in_bin": "", "expected_not_on_timeline": ""})
    if rules.get("expected_not_on_timeline", True):
        # kdenlive_length counts frames > 0; an empty timeline has no DeskLoop check yet.
        raise Unmapped("an empty timeline (expected_not_on_timeline) has no DeskLoop check")
    return [{"check": "kdenlive_bin", "path": path, "present": [rules["expected_in_bin"]]}]


Mapper = Callable[[str, Rules], list[Leaf]]


def _render_output(path: str, rules: Rules) -> list[Leaf]:
    _take(rules, {"format": "", "width": "", "height": ""})
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


def _world_hdri(path: str, rules: Rules) -> list[Leaf]:
    taken = _take(rules, {"hdri_filename": "image", "strength": "strength"})
    return [{"check": "blender_world_texture", "path": path, **taken}]


def _material_textures(path: str, rules: Rules) -> list[Leaf]:
    _take(
        rules, {"object_name": "", "textures": "", "metallic": "", "roughness": "", "tolerance": ""}
    )
    obj = rules["object_name"]
    leaves: list[Leaf] = []
    for texture in rules["textures"]:
        _take(texture, {"filename": "", "connected_to": ""})
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


def _visibility(path: str, rules: Rules) -> list[Leaf]:
    taken = _take(
        rules,
        {"object_name": "name", "hide_viewport": "hide_viewport", "hide_render": "hide_render"},
    )
    return [{"check": "blender_visibility", "path": path, **taken}]


def _constraints(path: str, rules: Rules) -> list[Leaf]:
    _take(rules, {"constraints": ""})
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


def _text_content(path: str, rules: Rules) -> list[Leaf]:
    taken = _take(rules, {"object_name": "name", "expected_text": "body"})
    return [{"check": "blender_text", "path": path, **taken}]


_TEXT_SETTINGS = ("size", "extrude", "align_x", "align_y", "bevel_depth", "offset_x", "offset_y")


def _text_styling(path: str, rules: Rules) -> list[Leaf]:
    known = {"object_name": "name", "body": "body", "tolerance": "tolerance"}
    taken = _take(rules, {**known, **{k: k for k in _TEXT_SETTINGS}})
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


def _particles(path: str, rules: Rules) -> list[Leaf]:
    taken = _take(
        rules,
        {"object_name": "object", "tolerance": "tolerance", **{k: k for k in _PARTICLE_SETTINGS}},
    )
    leaf: Leaf = {"check": "blender_particles", "path": path, "object": taken.pop("object")}
    if "tolerance" in taken:
        leaf["tolerance"] = taken.pop("tolerance")
    leaf["settings"] = taken
    return [leaf]


def _scene_setting(*names: str) -> Mapper:
    def mapper(path: str, rules: Rules) -> list[Leaf]:
        return [{"check": "blender_render", "path": path, **_take(rules, {n: n for n in names})}]

    return mapper


def _deleted(path: str, rules: Rules) -> list[Leaf]:
    _take(rules, {"deleted_object": ""})
    return [
        {"check": "blender_object", "path": path, "name": rules["deleted_object"], "exists": False}
    ]


def _exists(path: str, rules: Rules) -> list[Leaf]:
    taken = _take(
        rules, {"expected_type": "type", "name_contains": "name_regex", "object_name": "name"}
    )
    if "name_regex" in taken:
        taken["name_regex"] = re.escape(str(taken["name_regex"]))
    if "name" not in taken and "name_regex" not in taken:
        raise Unmapped("it names no object")
    return [{"check": "blender_object", "path": path, **taken}]


MAPPERS: dict[str, Mapper] = {
    "check_blender_object_renamed": _renamed,
    "check_blender_light_energy": _light_energy,
    "check_blender_render_settings": _render_settings,
    "check_kdenlive_project_profile": _kdenlive_profile,
    "check_kdenlive_track_count": _track_count,
    "check_kdenlive_guide": _guide,
    "check_kdenlive_file_exists": _file_exists,
    "check_blender_render_output": _render_output,
    "check_blender_world_hdri": _world_hdri,
    "check_blender_material_textures": _material_textures,
    "check_blender_object_visibility": _visibility,
    "check_blender_constraints_multi": _constraints,
    "check_blender_text_content": _text_content,
    "check_blender_text_styling": _text_styling,
    "check_blender_particle_params": _particles,
    "check_blender_fps": _scene_setting("fps"),
    "check_blender_frame_range": _scene_setting("frame_start", "frame_end"),
    "check_blender_render_engine": _scene_setting("engine"),
    "check_blender_object_deleted": _deleted,
    "check_blender_object_exists": _exists,
    "check_kdenlive_bin_content": _bin_content,
    "check_kdenlive_import_video": _bin_content,
    "check_kdenlive_import_multiple_files": _bin_content,
    "check_kdenlive_clip_group": _clip_group,
    "check_kdenlive_proxy_setting": _proxy,
    "check_kdenlive_track_lock": _track_lock,
    "check_kdenlive_timeline_empty": _timeline_empty,
}

_BLEND_IN_COMMAND = re.compile(r"(?:--background|-b)\s+(\S+\.blend)\b")


def target_path(result: Any) -> str | None:
    """The guest file a DeskCraft getter reads: a `vm_file`'s path, or the .blend a
    `vm_command_line` opens with Blender in background mode; None when neither."""
    if not isinstance(result, dict):
        return None
    if result.get("type") == "vm_file" and isinstance(result.get("path"), str):
        return guest_path(result["path"])
    command = result.get("command")
    if result.get("type") == "vm_command_line" and isinstance(command, str):
        found = _BLEND_IN_COMMAND.search(command)
        if found:
            return guest_path(found.group(1))
    return None


def guest_path(path: str) -> str:
    """DeskCraft's guest paths live under /home/user; DeskLoop's under the session's home."""
    for home in ("/home/user/", "~/"):
        if path.startswith(home):
            return "~/" + path[len(home) :]
    return path


def map_evaluator(func: str, result: Any, expected: Any) -> list[Leaf]:
    """The DeskLoop leaves for one DeskCraft evaluator; Unmapped says why there are none."""
    mapper = MAPPERS.get(func)
    if mapper is None:
        raise Unmapped(f"evaluator {func} has no DeskLoop check")
    path = target_path(result)
    if path is None:
        raise Unmapped(f"evaluator {func} reads {_getter(result)}, not a file DeskLoop can fetch")
    rules = expected.get("rules") if isinstance(expected, dict) else None
    if not isinstance(rules, dict):
        raise Unmapped(f"evaluator {func} has no rules to map")
    try:
        return mapper(path, rules)
    except Unmapped as exc:
        raise Unmapped(f"evaluator {func}: {exc}") from None
    except (KeyError, TypeError, ZeroDivisionError) as exc:
        raise Unmapped(
            f"evaluator {func}: its rules are not in the expected shape ({exc})"
        ) from None


def _getter(result: Any) -> str:
    if isinstance(result, dict):
        return f"a {result.get('type', 'getter without type')}"
    return "no getter"
