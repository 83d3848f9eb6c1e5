"""`deskloop tasks import deskcraft`: DeskCraft-shaped files (tests/data/deskcraft, written
for these tests) become DeskLoop tasks that load, with the phase triggers shifted."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from app.checks.registry import get_check
from app.cli import main
from app.core.actions import Ask, Click, Done
from app.core.triggers import AgentAsk, AgentDone, StepCount
from app.episode.protocol import PhaseSpec, Protocol
from app.tasks.deskcraft import convert, task_id, task_yaml
from app.tasks.deskcraft_checks import (
    MAPPERS,
    OUTPUT_IS_EXPECTED,
    Unmapped,
    map_evaluator,
    target_path,
)
from app.tasks.loader import load_task

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "deskcraft"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A stand-in for a local copy of DeskCraft's repository: its assets/ layout, with
    files DeskLoop already has (a real .blend, a real Kdenlive project)."""
    root = tmp_path / "DeskCraft"
    (root / "assets" / "blend").mkdir(parents=True)
    (root / "assets" / "kdenlive").mkdir(parents=True)
    (root / "assets" / "py").mkdir(parents=True)
    shutil.copy(ROOT / "tasks/blender/assets/cube.blend", root / "assets/blend/default_cube.blend")
    shutil.copy(
        ROOT / "tasks/kdenlive/assets/empty.kdenlive", root / "assets/kdenlive/project.kdenlive"
    )
    (root / "assets/py/check_object.py").write_text("# DeskCraft's checker would be here\n")
    return root


def test_a_standard_blender_task_is_imported_whole(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "tasks"
    report = convert(DATA / "L1_blender_rename.json", repo, out)
    assert report.status == "imported", report.line()
    assert report.manual == []
    task = load_task(out / "blender" / "deskcraft-blender-0fbd0000.yaml")
    assert (task.id, task.app, task.level) == ("deskcraft-blender-0fbd0000", "blender", "L1")
    steps = [step.model_dump(by_alias=True, exclude_defaults=True) for step in task.setup]
    # DeskCraft's own checker script is not uploaded; the fixed sleep became a window wait.
    assert steps[0] == {
        "upload": {
            "src": "assets/deskcraft/blend/default_cube.blend",
            "dest": "~/Documents/scene.blend",
        }
    }
    assert steps[1]["launch"][-1] == "~/Documents/scene.blend" and "blender" in steps[1]["launch"]
    assert "wait_window" in steps[2] and len(steps) == 3
    assert (out / "blender/assets/deskcraft/blend/default_cube.blend").read_bytes() == (
        ROOT / "tasks/blender/assets/cube.blend"
    ).read_bytes()
    # The agent reads paths in the desktop's own home, and a title that ends at a sentence.
    assert task.instruction.startswith("Open the Blender project ~/Documents/scene.blend.")
    assert "/home/user" not in task.instruction
    assert task.title == 'Rename the "Cube" object to "MyCube", then save the file.'
    text = (out / "blender" / "deskcraft-blender-0fbd0000.yaml").read_text()
    assert "check: blender_object" in text and "exists: false" in text and "MANUAL" not in text


def test_interactive_phases_shift_each_trigger_to_the_next_phase(
    repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "tasks"
    report = convert(DATA / "INTERACTIVE_kdenlive_profile_change.json", repo, out)
    assert report.status == "manual", report.line()
    assert report.task_id == "deskcraft-kdenlive-ik99-profile-change-001"
    task = load_task(out / "kdenlive" / f"{report.task_id}.yaml")
    assert task.instruction == "Set the project to 1920x1080 and save it."
    # DeskCraft's phase k trigger ends phase k: it is what delivers phase k+1 here.
    assert [(p.message.split(",")[0], p.trigger) for p in task.phases] == [
        ("Wait", AgentDone()),
        ("Something about the preview is off; ask me if unsure.", StepCount(5)),
        ("Speed the clip up to double speed and render it.", AgentAsk()),
    ]
    # And the engine delivers them as DeskCraft's user simulator would.
    engine = Protocol(
        task.instruction,
        [PhaseSpec(p.message, p.trigger, p.kind) for p in task.phases],
        max_steps=100,
        max_seconds=1000,
    )
    assert engine.on_agent(Done(), 0).delivered_phase == 0
    for _ in range(4):
        assert engine.on_agent(Click(10, 10), 0).delivered_phase is None
    assert engine.on_agent(Click(10, 10), 0).delivered_phase == 1
    assert engine.on_agent(Ask("which clip?"), 0).delivered_phase == 2
    assert engine.on_agent(Done(), 0).ended == "done"
    # Named manual steps: the missing download, the unmapped evaluator, the level.
    joined = "\n".join(report.manual)
    assert "missing_clip.mp4 is not in" in joined
    assert "check_kdenlive_render_speed_ramp has no DeskLoop check" in joined
    assert "level: DeskCraft gives none; L3 assumed" in joined
    text = (out / "kdenlive" / f"{report.task_id}.yaml").read_text()
    assert text.count("# MANUAL:") == len(report.manual)
    assert "fps: 30" in text and "width: 1920" in text


def test_unmapped_evaluators_and_other_apps_are_not_importable(repo: Path, tmp_path: Path) -> None:
    gimp = convert(DATA / "L2_gimp_poster.json", repo, tmp_path)
    assert gimp.status == "not importable"
    assert (
        gimp.reason is not None
        and "check_l2_event_poster_complete has no DeskLoop check" in gimp.reason
    )
    assert not (tmp_path / "gimp").exists() or not list((tmp_path / "gimp").glob("*.yaml"))
    other = convert(DATA / "L1_os_folders.json", repo, tmp_path)
    assert other.status == "not importable" and other.reason is not None and "os" in other.reason
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert "not a readable JSON file" in str(convert(broken, repo, tmp_path).reason)


def test_evaluator_mapping_names_what_has_no_equivalent() -> None:
    command = {
        "type": "vm_command_line",
        "command": "/snap/bin/blender --background /home/user/a b.blend",
    }
    assert target_path(command) is None  # a path with a space is not guessed at
    blend = {
        "type": "vm_command_line",
        "command": "blender -b /home/user/Documents/s.blend --python x",
    }
    assert target_path(blend) == "~/Documents/s.blend"
    leaves = map_evaluator(
        "check_blender_render_settings",
        blend,
        {"rules": {"image_format": "JPEG", "resolution_x": 800}},
    )
    assert leaves == [
        {
            "check": "blender_render",
            "path": "~/Documents/s.blend",
            "file_format": "JPEG",
            "resolution_x": 800,
        }
    ]
    with pytest.raises(Unmapped, match=r"options \['samples'\] have no DeskLoop parameter"):
        map_evaluator("check_blender_render_settings", blend, {"rules": {"samples": 64}})
    with pytest.raises(Unmapped, match="reads a vm_command_line"):
        map_evaluator(
            "check_blender_render_settings",
            {"type": "vm_command_line", "command": "ls"},
            {"rules": {}},
        )


def test_a_second_file_with_the_same_id_is_not_written_over_the_first(
    repo: Path, tmp_path: Path
) -> None:
    taken: dict[str, Path] = {}
    first = convert(DATA / "L1_blender_rename.json", repo, tmp_path, taken)
    copy = tmp_path / "L1_blender_rename_again.json"
    copy.write_bytes((DATA / "L1_blender_rename.json").read_bytes())
    again = convert(copy, repo, tmp_path, taken)
    assert first.status == "imported"
    assert again.status == "not importable" and again.reason is not None
    assert "already taken by" in again.reason and "L1_blender_rename.json" in again.reason


def test_shared_values_are_written_out_not_aliased() -> None:
    # Mappers may build several leaves from one dict (an `any` of effects with the same
    # params); task files refuse YAML aliases, so each is written in full.
    params = {"opacity": 0.5}
    text = task_yaml({"evaluate": {"any": [{"params": params}, {"params": params}]}})
    assert "&" not in text and "*" not in text and text.count("opacity: 0.5") == 2


def test_ids_are_deskloop_ids() -> None:
    assert (
        task_id("0fbdd695-5224-4f6d-80ae-b06ee48e5c61", "blender") == "deskcraft-blender-0fbdd695"
    )
    assert task_id("interactive_gimp_watch_white_002", "gimp") == "deskcraft-gimp-watch-white-002"
    suffixed = "a1b00003-0003-4000-8000-000000000003-L1"
    assert task_id(suffixed, "gimp") == "deskcraft-gimp-a1b00003"


def test_cli_reports_each_file_and_exits_1_when_one_is_not_importable(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "tasks"
    code = main(["tasks", "import", "deskcraft", str(DATA), "--repo", str(repo), "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 1
    assert "2 imported, 1 imported with manual steps left, 2 not importable" in printed
    assert "  manual: " in printed and "not importable  " in printed
    assert main(["tasks", "validate", str(out)]) == 0


BLEND: dict[str, Any] = {
    "type": "vm_command_line",
    "command": "/snap/bin/blender --background /home/user/Documents/scene.blend --python /tmp/c.py",
}
PROJECT: dict[str, Any] = {"type": "vm_file", "path": "/home/user/Videos/project.kdenlive"}
RENDER: dict[str, Any] = {"type": "vm_file", "path": "/home/user/Documents/out.png"}

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
    with pytest.raises(Unmapped, match=r"options \['min_video_tracks'\]"):
        map_evaluator("check_kdenlive_track_count", PROJECT, {"rules": {"min_video_tracks": 3}})


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
