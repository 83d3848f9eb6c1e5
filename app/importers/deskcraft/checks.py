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
from typing import Any

from app.importers.deskcraft import blender as B
from app.importers.deskcraft import gimp as G
from app.importers.deskcraft import kdenlive as K
from app.importers.deskcraft.rules import Leaf, Mapper, Unmapped

__all__ = [
    "MAPPERS",
    "OUTPUT_IS_EXPECTED",
    "Leaf",
    "Unmapped",
    "guest_path",
    "map_evaluator",
    "target_path",
]


MAPPERS: dict[str, Mapper] = {
    "check_blender_object_renamed": B.renamed,
    "check_blender_light_energy": B.light_energy,
    "check_blender_render_settings": B.render_settings,
    "check_kdenlive_project_profile": K.kdenlive_profile,
    "check_kdenlive_track_count": K.track_count,
    "check_kdenlive_guide": K.guide,
    "check_kdenlive_file_exists": K.file_exists,
    "check_blender_render_output": B.render_output,
    "check_blender_world_hdri": B.world_hdri,
    "check_blender_material_textures": B.material_textures,
    "check_blender_object_visibility": B.visibility,
    "check_blender_constraints_multi": B.constraints,
    "check_blender_text_content": B.text_content,
    "check_blender_text_styling": B.text_styling,
    "check_blender_particle_params": B.particles,
    "check_blender_fps": B.scene_setting("fps"),
    "check_blender_frame_range": B.scene_setting("frame_start", "frame_end"),
    "check_blender_render_engine": B.scene_setting("engine"),
    "check_blender_object_deleted": B.deleted,
    "check_blender_object_exists": B.exists,
    "check_kdenlive_bin_content": K.bin_content,
    "check_kdenlive_import_video": K.bin_content,
    "check_kdenlive_import_multiple_files": K.bin_content,
    "check_kdenlive_clip_group": K.clip_group,
    "check_kdenlive_proxy_setting": K.proxy,
    "check_kdenlive_track_lock": K.track_lock,
    "check_kdenlive_timeline_empty": K.timeline_empty,
    "check_blender_smooth_shading": B.smooth,
    "check_blender_modifier_subsurf": B.modifier,
    "check_blender_modifier_bevel": B.modifier,
    "check_blender_modifier_boolean": B.modifier,
    "check_blender_modifier_stack": B.modifier_stack,
    "check_blender_hierarchy": B.hierarchy,
    "check_blender_parent_child": B.parent_child,
    "check_blender_material_color": B.material,
    "check_blender_material_pbr": B.material,
    "check_blender_collection_members": B.collection,
    "check_blender_animation_keyframes": B.keyframes,
    "check_kdenlive_effect_applied": K.effect,
    "check_kdenlive_effect_param": K.effect,
    "check_kdenlive_transition": K.transition,
    "check_kdenlive_add_to_timeline": K.add_to_timeline,
    "check_kdenlive_render_mp4": K.render,
    "check_kdenlive_render_custom_resolution": K.render,
    "check_kdenlive_render_with_audio": K.render,
    "check_blender_render_video": K.render,
    "check_7b7617bd_recent_files": G.config_value,
    "check_8ea73f6f_resize_1920x1080": G.resize_1920x1080,
    "check_white_to_alpha_transparency": G.white_to_alpha,
}

OUTPUT_IS_EXPECTED = frozenset(
    {"check_8ea73f6f_resize_1920x1080", "check_white_to_alpha_transparency"}
)
"""Functions whose task files name the agent's output as the `expected` file (and the
input as `result`); they take no rules."""

_BLEND_IN_COMMAND = re.compile(r"(?:--background|-b)\s+(\S+\.blend)\b")


def target_path(result: Any) -> str | None:
    """The guest file a DeskCraft getter reads: a `vm_file`'s path, or the .blend a
    `vm_command_line` opens with Blender in background mode; None when neither."""
    if not isinstance(result, dict):
        return None
    if result.get("type") == "vm_file" and isinstance(result.get("path"), str):
        return guest_path(result["path"])
    if result.get("type") == "gimp_config_file" and isinstance(result.get("file_name"), str):
        return f"{G.GIMP_CONFIG}/{result['file_name']}"
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
    if func == "check_include_exclude":
        return _files_listed(result, expected)
    mapper = MAPPERS.get(func)
    if mapper is None:
        raise Unmapped(f"evaluator {func} has no DeskLoop check")
    if func in OUTPUT_IS_EXPECTED:
        result, expected = expected, {"rules": {}}
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


_LISTED = re.compile(r"(EXISTS|MISSING):(/\S+)")


def _files_listed(result: Any, expected: Any) -> list[Leaf]:
    """`check_include_exclude` looks for strings in a command's output. DeskCraft's
    interactive Blender tasks use it over a shell loop that prints `EXISTS:<path>` or
    `MISSING:<path>` for each delivered file: that maps to file checks. Any other use
    (text in `ls`, a settings dump) has no file to read, so it stays unmapped."""
    command = result.get("command") if isinstance(result, dict) else None
    rules = expected.get("rules") if isinstance(expected, dict) else None
    if not isinstance(command, str) or "EXISTS:" not in command or not isinstance(rules, dict):
        raise Unmapped(
            "evaluator check_include_exclude reads a command's output, not a file listing "
            "DeskLoop can check"
        )
    leaves: list[Leaf] = []
    for key, wanted in (("include", True), ("exclude", False)):
        for item in rules.get(key) or []:
            found = _LISTED.fullmatch(str(item))
            if found is None:
                raise Unmapped(
                    f"evaluator check_include_exclude: {key} {item!r} is not an "
                    "EXISTS:/MISSING: file listing"
                )
            exists = (found.group(1) == "EXISTS") == wanted
            leaf: Leaf = {
                "check": "file_exists" if exists else "file_not_exists",
                "path": guest_path(found.group(2)),
            }
            if leaf not in leaves:
                leaves.append(leaf)
    if not leaves:
        raise Unmapped("evaluator check_include_exclude lists no files")
    return leaves


def _getter(result: Any) -> str:
    if isinstance(result, dict):
        return f"a {result.get('type', 'getter without type')}"
    return "no getter"
