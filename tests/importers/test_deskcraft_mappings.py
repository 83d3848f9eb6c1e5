"""DeskCraft evaluator functions map onto checks the registry accepts, with DeskCraft's
option names, and what has no DeskLoop equivalent is named (app/importers/deskcraft/checks.py)."""

from __future__ import annotations

from typing import Any

import pytest

from app.checks.registry import get_check
from app.importers.deskcraft.checks import (
    MAPPERS,
    OUTPUT_IS_EXPECTED,
    Unmapped,
    map_evaluator,
)

# DeskCraft-shaped getters: a Blender script run on a .blend, a Kdenlive project, a render.
BLEND: dict[str, Any] = {
    "type": "vm_command_line",
    "command": "/snap/bin/blender --background /home/user/Documents/scene.blend --python /tmp/c.py",
}
PROJECT: dict[str, Any] = {"type": "vm_file", "path": "/home/user/Videos/project.kdenlive"}
RENDER: dict[str, Any] = {"type": "vm_file", "path": "/home/user/Documents/out.png"}
MOVIE: dict[str, Any] = {"type": "vm_file", "path": "/home/user/Videos/final.mp4"}

# DeskCraft-shaped rules for every mapped function, and the checks they must become.
SAMPLES: list[tuple[str, dict[str, Any], dict[str, Any], list[str]]] = [
    (
        "check_blender_object_renamed",
        BLEND,
        {"expected_name": "MyCube", "old_name": "Cube"},
        ["blender_object"] * 2,
    ),
    (
        "check_blender_light_energy",
        BLEND,
        {"light_name": "Key", "expected_energy": 2000.0, "tolerance": 10},
        ["blender_light"],
    ),
    (
        "check_blender_render_settings",
        BLEND,
        {"engine": "CYCLES", "image_format": "PNG", "resolution_x": 1080, "resolution_y": 1920},
        ["blender_render"],
    ),
    (
        "check_blender_render_output",
        RENDER,
        {"width": 1080, "height": 1080, "format": "PNG"},
        ["image_format", "image_size"],
    ),
    (
        "check_blender_world_hdri",
        BLEND,
        {"hdri_filename": "hdri_studio.exr"},
        ["blender_world_texture"],
    ),
    (
        "check_blender_material_textures",
        BLEND,
        {
            "object_name": "Cube",
            "textures": [{"filename": "wood.jpg", "connected_to": "Base Color"}],
            "roughness": 0.7,
            "tolerance": 0.05,
        },
        ["blender_texture_link", "blender_material"],
    ),
    (
        "check_blender_object_visibility",
        BLEND,
        {"object_name": "Sphere", "hide_viewport": True},
        ["any", "blender_visibility", "blender_visibility"],
    ),
    (
        "check_blender_constraints_multi",
        BLEND,
        {
            "constraints": [
                {
                    "object_name": "Orbiter",
                    "type": "TRACK_TO",
                    "target": "T",
                    "track_axis": "TRACK_NEGATIVE_Z",
                }
            ]
        },
        ["blender_constraint"],
    ),
    (
        "check_blender_text_content",
        BLEND,
        {"object_name": "Text", "expected_text": "Hello Blender"},
        ["blender_text"],
    ),
    (
        "check_blender_text_styling",
        BLEND,
        {"object_name": "Title", "body": "HI", "size": 2.0, "align_x": "CENTER", "tolerance": 0.05},
        ["blender_text"],
    ),
    (
        "check_blender_particle_params",
        BLEND,
        {"object_name": "Emitter", "count": 2000, "lifetime": 100.0, "tolerance": 1.0},
        ["blender_particles"],
    ),
    ("check_blender_fps", BLEND, {"fps": 30}, ["blender_render"]),
    ("check_blender_frame_range", BLEND, {"frame_start": 1, "frame_end": 120}, ["blender_render"]),
    ("check_blender_render_engine", BLEND, {"engine": "CYCLES"}, ["blender_render"]),
    ("check_blender_object_deleted", BLEND, {"deleted_object": "Cube"}, ["blender_object"]),
    (
        "check_blender_object_exists",
        BLEND,
        {"expected_type": "MESH", "name_contains": "Sphere"},
        ["blender_object"],
    ),
    (
        "check_kdenlive_project_profile",
        PROJECT,
        {"frame_rate_num": 30000, "frame_rate_den": 1001},
        ["kdenlive_profile"],
    ),
    ("check_kdenlive_track_count", PROJECT, {"video_tracks": 3}, ["kdenlive_tracks"]),
    ("check_kdenlive_file_exists", PROJECT, {}, ["file_exists"]),
    (
        "check_kdenlive_bin_content",
        PROJECT,
        {"expected_present": ["a.mp4"], "expected_absent": ["b.mp4"]},
        ["kdenlive_bin"],
    ),
    ("check_kdenlive_import_video", PROJECT, {"expected_file": "a.mp4"}, ["kdenlive_bin"]),
    (
        "check_kdenlive_import_multiple_files",
        PROJECT,
        {"expected_files": ["a.mp4", "b.mp4"]},
        ["kdenlive_bin"],
    ),
    (
        "check_kdenlive_clip_group",
        PROJECT,
        {"min_groups": 1, "min_clips_in_group": 2},
        ["kdenlive_groups"],
    ),
    ("check_kdenlive_proxy_setting", PROJECT, {"proxy_enabled": True}, ["kdenlive_proxy"]),
    ("check_kdenlive_track_lock", PROJECT, {"locked_track": "V1"}, ["kdenlive_track"]),
    ("check_kdenlive_track_count", PROJECT, {"exact_video_tracks": 1}, ["kdenlive_tracks"]),
    ("check_kdenlive_track_count", PROJECT, {"min_audio_tracks": 3}, ["kdenlive_tracks"]),
    (
        "check_kdenlive_render_mp4",
        MOVIE,
        {"min_duration": 1.0, "expected_codec": "h264"},
        ["media_info"],
    ),
    (
        "check_kdenlive_render_custom_resolution",
        MOVIE,
        {
            "min_duration": 1.0,
            "expected_codec": "h264",
            "expected_width": 1080,
            "expected_height": 1920,
        },
        ["media_info"],
    ),
    (
        "check_kdenlive_render_with_audio",
        MOVIE,
        {"min_duration": 1.0, "require_audio": True},
        ["media_info"],
    ),
    ("check_blender_render_video", MOVIE, {"min_duration": 1.5, "codec": "h264"}, ["media_info"]),
    (
        "check_7b7617bd_recent_files",
        {"type": "gimp_config_file", "file_name": "gimprc", "dest": "gimprc"},
        {"key": "max-recent-files", "value": "15"},
        ["text_file"],
    ),
    (
        "check_kdenlive_effect_applied",
        PROJECT,
        {"effect_service": ["mirror", "avfilter.hflip"], "source_file": "a.mp4"},
        ["any", "kdenlive_effect", "kdenlive_effect"],
    ),
    (
        "check_kdenlive_effect_param",
        PROJECT,
        {
            "effect_service": ["qtblend"],
            "param_name": "opacity",
            "expected_value": 0.5,
            "tolerance": 0.1,
        },
        ["kdenlive_effect"],
    ),
    ("check_kdenlive_transition", PROJECT, {"transition_type": "luma"}, ["kdenlive_composition"]),
    (
        "check_kdenlive_add_to_timeline",
        PROJECT,
        {"expected_file": "a.mp4"},
        ["any"] + ["kdenlive_clips"] * 6,
    ),
    (
        "check_blender_smooth_shading",
        BLEND,
        {"object_name_contains": "Sphere", "has_smooth": True},
        ["blender_object"],
    ),
    (
        "check_blender_modifier_subsurf",
        BLEND,
        {"object_name": "Cube", "modifier_type": "SUBSURF", "levels": 3},
        ["blender_modifier"],
    ),
    (
        "check_blender_modifier_bevel",
        BLEND,
        {"object_name": "Cube", "modifier_type": "BEVEL", "width": 0.02, "tolerance": 0.01},
        ["blender_modifier"],
    ),
    (
        "check_blender_modifier_boolean",
        BLEND,
        {
            "object_name": "Cube",
            "modifier_type": "BOOLEAN",
            "operation": "DIFFERENCE",
            "target_object": "Sphere",
        },
        ["blender_modifier"],
    ),
    (
        "check_blender_modifier_stack",
        BLEND,
        {"object_name": "Cube", "modifiers": {"BEVEL": {"segments": 4}, "SUBSURF": {"levels": 2}}},
        ["blender_modifier", "blender_modifier"],
    ),
    (
        "check_blender_hierarchy",
        BLEND,
        {"parent_map": {"Moon": "Planet1"}, "not_parent": {"Moon": "Planet2"}},
        ["blender_object"],
    ),
    (
        "check_blender_parent_child",
        BLEND,
        {"parent": "Cube", "expected_children": ["Sphere", "Cone"]},
        ["blender_object"] * 2,
    ),
    (
        "check_blender_material_color",
        BLEND,
        {"object_name": "Ball", "expected_color": [1.0, 0, 0, 1], "metallic": 0.5},
        ["blender_material"],
    ),
    (
        "check_blender_material_pbr",
        BLEND,
        {
            "object_name_contains": "Sphere",
            "material_name": "Blue",
            "expected_color": [0, 0.2, 1, 1],
            "roughness": 0.1,
        },
        ["blender_material", "blender_object"],
    ),
    (
        "check_blender_collection_members",
        BLEND,
        {"collection_name": "Props", "expected_members": ["Cube"]},
        ["blender_object"],
    ),
    (
        "check_blender_animation_keyframes",
        BLEND,
        {"object_name": "Ball", "min_keyframe_count": 3, "has_location_keys": True},
        ["any"] + ["blender_keyframes"] * 3,
    ),
    (
        "check_kdenlive_timeline_empty",
        PROJECT,
        {"expected_in_bin": "a.mp4", "expected_not_on_timeline": False},
        ["kdenlive_bin"],
    ),
]


@pytest.mark.parametrize(
    ("func", "result", "rules", "checks"), SAMPLES, ids=[s[0] for s in SAMPLES]
)
def test_each_mapped_evaluator_becomes_checks_the_registry_accepts(
    func: str, result: dict[str, Any], rules: dict[str, Any], checks: list[str]
) -> None:
    nodes = map_evaluator(func, result, {"type": "rule", "rules": rules})
    flat: list[dict[str, Any]] = []
    for node in nodes:
        flat.extend([{"check": "any"}, *node["any"]] if "any" in node else [node])
    assert [leaf["check"] for leaf in flat] == checks
    for leaf in flat[1:] if flat[0]["check"] == "any" else flat:
        spec = get_check(leaf["check"])
        spec.parse_params({k: v for k, v in leaf.items() if k != "check"})
        assert leaf["path"].startswith("~/")


def test_what_a_mapper_cannot_say_is_named() -> None:
    with pytest.raises(Unmapped, match="'Moon is not a child of Planet2' alone"):
        map_evaluator(
            "check_blender_hierarchy", BLEND, {"rules": {"not_parent": {"Moon": "Planet2"}}}
        )
    with pytest.raises(Unmapped, match="needs the object's exact name"):
        map_evaluator(
            "check_blender_modifier_subsurf",
            BLEND,
            {"rules": {"object_name_contains": "Sphere", "modifier_type": "SUBSURF", "levels": 3}},
        )
    with pytest.raises(Unmapped, match=r"options \['require_sepia'\]"):
        map_evaluator("check_kdenlive_render_mp4", MOVIE, {"rules": {"require_sepia": True}})


def test_gimp_functions_whose_output_is_the_expected_file() -> None:
    source = {"type": "vm_file", "path": "/home/user/Desktop/portrait.jpg"}
    output = {"type": "vm_file", "path": "/home/user/Desktop/portrait_1920x1080.png"}
    for func, check in [
        ("check_8ea73f6f_resize_1920x1080", "image_size"),
        ("check_white_to_alpha_transparency", "image_has_alpha"),
    ]:
        (leaf,) = map_evaluator(func, source, output)
        assert leaf["check"] == check and leaf["path"] == "~/Desktop/portrait_1920x1080.png"
        get_check(check).parse_params({k: v for k, v in leaf.items() if k != "check"})
    (config,) = map_evaluator(
        "check_7b7617bd_recent_files",
        {"type": "gimp_config_file", "file_name": "gimprc"},
        {"rules": {"key": "max-recent-files", "value": "15"}},
    )
    assert config == {
        "check": "text_file",
        "path": "~/.config/GIMP/2.10/gimprc",
        "matches": ['^\\(max\\-recent\\-files "?15"?\\)$'],
    }


def test_an_empty_timeline_is_named_as_unmapped() -> None:
    with pytest.raises(Unmapped, match="empty timeline"):
        map_evaluator(
            "check_kdenlive_timeline_empty",
            PROJECT,
            {"rules": {"expected_in_bin": "a.mp4", "expected_not_on_timeline": True}},
        )


def test_every_mapper_has_a_sample() -> None:
    others = {"check_kdenlive_guide", *OUTPUT_IS_EXPECTED}
    assert {s[0] for s in SAMPLES} | others == set(MAPPERS)
