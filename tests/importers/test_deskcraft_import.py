"""`deskloop tasks import deskcraft`: DeskCraft-shaped files (tests/data/deskcraft, written
for these tests) become DeskLoop tasks that load, with the phase triggers shifted."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from app.cli import main
from app.core.actions import Ask, Click, Done
from app.core.triggers import AgentAsk, AgentDone, StepCount
from app.episode.protocol import PhaseSpec, Protocol
from app.importers.deskcraft.checks import (
    Unmapped,
    map_evaluator,
    target_path,
)
from app.importers.deskcraft.convert import convert, task_id, task_yaml
from app.tasks.loader import load_task

ROOT = Path(__file__).resolve().parents[2]
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
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
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
    imported = out / "kdenlive" / f"{report.task_id}.yaml"
    text = imported.read_text()
    assert text.count("# MANUAL:") == len(report.manual)
    assert "fps: 30" in text and "width: 1920" in text
    # Valid as a file, but `tasks validate` says it is not yet the task it was.
    assert main(["tasks", "validate", str(imported)]) == 0
    said = capsys.readouterr().out
    for step in report.manual:
        assert f"warning: {imported}: a manual step is still to do: {step}" in said, said
    assert "1 valid (1 with warnings)" in said


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


def test_include_exclude_over_a_file_listing_becomes_file_checks() -> None:
    """DeskCraft's interactive Blender tasks check their deliveries with a shell loop
    printing EXISTS:/MISSING: per file; both halves of the rule name the same files."""
    listing = {
        "type": "vm_command_line",
        "command": "for p in /home/user/Documents/a.png /home/user/Documents/b.blend; do"
        ' if [ -f "$p" ]; then echo "EXISTS:$p"; else echo "MISSING:$p"; fi; done',
        "shell": True,
    }
    rules = {
        "include": ["EXISTS:/home/user/Documents/a.png", "EXISTS:/home/user/Documents/b.blend"],
        "exclude": ["MISSING:/home/user/Documents/a.png", "MISSING:/home/user/Documents/b.blend"],
    }
    leaves = map_evaluator("check_include_exclude", listing, {"rules": rules})
    assert leaves == [
        {"check": "file_exists", "path": "~/Documents/a.png"},
        {"check": "file_exists", "path": "~/Documents/b.blend"},
    ]
    gone = map_evaluator(
        "check_include_exclude", listing, {"rules": {"include": ["MISSING:/home/user/x.tmp"]}}
    )
    assert gone == [{"check": "file_not_exists", "path": "~/x.tmp"}]
    # Text searched in some other command's output has no file to check.
    with pytest.raises(Unmapped, match="not a file listing"):
        map_evaluator(
            "check_include_exclude",
            {"type": "vm_command_line", "command": "ls ~/Desktop"},
            {"rules": {"include": ["projects"]}},
        )
    with pytest.raises(Unmapped, match="is not an EXISTS:/MISSING: file listing"):
        map_evaluator("check_include_exclude", listing, {"rules": {"include": ["EXISTS"]}})


def test_a_blend_saved_by_a_newer_blender_is_a_manual_step(tmp_path: Path) -> None:
    """DeskCraft's published scenes were saved by Blender 5 (header `BLENDER17-01v0500`),
    which the desktops' Blender 3.4 refuses: the import must say so, not pass them on."""
    import gzip as gz

    from app.importers.deskcraft.blender import blend_problem, blend_version

    new = tmp_path / "new.blend"
    new.write_bytes(b"BLENDER17-01v0500" + bytes(64))
    old = tmp_path / "old.blend"
    with gz.open(old, "wb") as f:
        f.write(b"BLENDER-v293RENDH" + bytes(64))
    four = tmp_path / "four.blend"
    four.write_bytes(b"BLENDER-v402" + bytes(64))
    assert (blend_version(new), blend_version(old), blend_version(four)) == (
        (5, 0),
        (2, 93),
        (4, 2),
    )
    assert blend_problem(old) is None
    assert "Blender 5.0, which the desktops' Blender 3.4 cannot open" in str(blend_problem(new))
    assert "may not open" in str(blend_problem(four))
    ours = ROOT / "tasks/blender/assets/cube.blend"
    assert blend_problem(ours) is None  # zstd-compressed, saved by our Blender
    not_blend = tmp_path / "x.blend"
    not_blend.write_bytes(b"hello")
    assert blend_version(not_blend) is None and blend_problem(not_blend) is None


def test_importing_a_blender_5_scene_names_the_rebuild(repo: Path, tmp_path: Path) -> None:
    (repo / "assets/blend/default_cube.blend").write_bytes(b"BLENDER17-01v0500" + bytes(64))
    report = convert(DATA / "L1_blender_rename.json", repo, tmp_path / "tasks")
    assert report.status == "manual", report.line()
    assert any("rebuild the scene with Blender 3.4" in step for step in report.manual)


def test_media_fills_in_files_the_repository_lacks(repo: Path, tmp_path: Path) -> None:
    """DeskCraft's LFS media never reached its public repository: --media supplies
    substitutes, uploaded like its own files and named in the header, not left manual."""
    media = tmp_path / "media"
    (media / "clips").mkdir(parents=True)
    (media / "clips" / "missing_clip.mp4").write_bytes(b"substitute clip")
    out = tmp_path / "tasks"
    report = convert(DATA / "INTERACTIVE_kdenlive_profile_change.json", repo, out, media=media)
    assert not any("missing_clip.mp4" in step for step in report.manual), report.manual
    task = load_task(out / "kdenlive" / "deskcraft-kdenlive-ik99-profile-change-001.yaml")
    uploads = [
        s.model_dump(by_alias=True)["upload"]
        for s in task.setup
        if "upload" in s.model_dump(by_alias=True, exclude_none=True)
    ]
    assert {
        "src": "assets/deskcraft/clips/missing_clip.mp4",
        "dest": "~/Videos/missing_clip.mp4",
    } in [{"src": u["src"], "dest": u["dest"]} for u in uploads]
    assert (out / "kdenlive/assets/deskcraft/clips/missing_clip.mp4").read_bytes() == (
        b"substitute clip"
    )
    header = (out / "kdenlive" / "deskcraft-kdenlive-ik99-profile-change-001.yaml").read_text()
    assert "# NOTE: asset https://example.invalid/media/missing_clip.mp4 is not in" in header
    # Without --media the same file is a manual step, as before.
    again = convert(DATA / "INTERACTIVE_kdenlive_profile_change.json", repo, tmp_path / "plain")
    assert any("missing_clip.mp4 is not in" in step for step in again.manual)


def test_a_photo_with_an_icc_profile_opened_at_launch_is_a_manual_step(
    repo: Path, tmp_path: Path
) -> None:
    """GIMP asks whether to convert an embedded ICC profile before it shows the image, so
    the setup's wait for the image window would time out (DeskCraft's photos have one)."""
    from PIL import Image

    from app.importers.deskcraft.gimp import has_icc_profile

    (repo / "assets" / "jpg").mkdir(parents=True)
    photo = repo / "assets" / "jpg" / "photo.jpg"
    Image.new("RGB", (8, 8), "red").save(photo, icc_profile=b"not really a profile")
    plain = tmp_path / "plain.jpg"
    Image.new("RGB", (8, 8), "red").save(plain)
    assert has_icc_profile(photo) and not has_icc_profile(plain)
    assert not has_icc_profile(tmp_path)  # not an image at all
    source = tmp_path / "L1_gimp_icc.json"
    source.write_text(
        json.dumps(
            {
                "id": "icc00001-L1",
                "snapshot": "gimp",
                "instruction": "Flip the photo.",
                "config": [
                    {
                        "type": "upload_file",
                        "parameters": {
                            "files": [
                                {
                                    "local_path": "assets/jpg/photo.jpg",
                                    "path": "/home/user/photo.jpg",
                                }
                            ]
                        },
                    },
                    {
                        "type": "launch",
                        "parameters": {"command": ["gimp", "/home/user/photo.jpg"]},
                    },
                ],
                "evaluator": {
                    "func": "check_7b7617bd_recent_files",
                    "result": {"type": "gimp_config_file", "file_name": "gimprc"},
                    "expected": {"type": "rule", "rules": {"key": "max-recent-files", "value": 5}},
                },
            }
        )
    )
    report = convert(source, repo, tmp_path / "tasks")
    assert any("GIMP opens ~/photo.jpg at launch" in step for step in report.manual), report.manual
