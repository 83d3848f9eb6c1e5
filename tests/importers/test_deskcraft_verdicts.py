"""Imported DeskCraft tasks give the verdicts a hand port gives, on final files saved
by the real apps: the importer's evaluate tree and a hand-written one are scored through
the same path as an episode (gather the guest's files and probes, run the tree)."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

import pytest

from app.episode.scoring import gather_state, score_state
from app.importers.deskcraft.checks import map_evaluator
from app.importers.deskcraft.convert import convert, task_yaml
from app.importers.deskcraft.rules import Leaf
from app.tasks.loader import load_task
from app.tasks.model import Task
from tests.checks.test_blender import _guest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "deskcraft"
KDENLIVE = ROOT / "tests" / "data" / "kdenlive"

HAND_KDENLIVE = """\
id: hand-kdenlive-group-bin
app: kdenlive
level: L2
title: Hand port
instruction: Remove sunset.mp4 from the bin, group the clips and save.
evaluate:
  all:
    - check: kdenlive_bin
      path: ~/Videos/project.kdenlive
      present: [harbour.mp4]
      absent: [sunset.mp4]
    - {check: kdenlive_groups, path: ~/Videos/project.kdenlive, min_groups: 1, min_clips: 2}
"""

HAND_BLENDER = """\
id: hand-blender-rename
app: blender
level: L1
title: Hand port
instruction: Rename Cube to MyCube and save.
evaluate:
  all:
    - {check: blender_object, path: ~/Documents/scene.blend, name: MyCube}
    - {check: blender_object, path: ~/Documents/scene.blend, name: Cube, exists: false}
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "DeskCraft"
    (root / "assets" / "blend").mkdir(parents=True)
    (root / "assets" / "kdenlive").mkdir(parents=True)
    shutil.copy(ROOT / "tasks/blender/assets/cube.blend", root / "assets/blend/default_cube.blend")
    shutil.copy(KDENLIVE / "showcase.kdenlive", root / "assets/kdenlive/project.kdenlive")
    return root


def _imported(name: str, repo: Path, out: Path) -> Task:
    report = convert(DATA / name, repo, out)
    assert report.status == "imported", report.line()
    assert report.written is not None
    return load_task(report.written)


def _hand(text: str, folder: Path, app: str, ident: str) -> Task:
    path = folder / app / f"{ident}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return load_task(path)


def _verdict(task: Task, home: Path) -> bool:
    state = asyncio.run(gather_state(task, _guest(home), None))
    return score_state(task, state).passed


def test_kdenlive_group_and_bin_task_matches_the_hand_port(repo: Path, tmp_path: Path) -> None:
    imported = _imported("L2_kdenlive_group_bin.json", repo, tmp_path / "tasks")
    hand = _hand(HAND_KDENLIVE, tmp_path / "hand", "kdenlive", "hand-kdenlive-group-bin")
    # Final states, each a project Kdenlive saved: the grouped one does the task; the
    # single insert has only Kdenlive's own A/V group; the showcase still has sunset.mp4.
    expected = {"grouped": True, "inserted": False, "showcase": False, "mix": False}
    for final, want in expected.items():
        home = tmp_path / f"home-{final}"
        (home / "Videos").mkdir(parents=True)
        shutil.copy(KDENLIVE / f"{final}.kdenlive", home / "Videos" / "project.kdenlive")
        assert _verdict(imported, home) is want, final
        assert _verdict(hand, home) is want, final


def test_a_clip_added_to_the_timeline_is_not_one_left_in_the_bin(tmp_path: Path) -> None:
    # DeskCraft's own metric counted a clip left in the bin as on the timeline.
    project = {"type": "vm_file", "path": "/home/user/Videos/project.kdenlive"}
    nodes: list[Leaf] = []
    for name in ("sunset.mp4", "harbour.mp4"):
        nodes += map_evaluator(
            "check_kdenlive_add_to_timeline", project, {"rules": {"expected_file": name}}
        )
    folder = tmp_path / "tasks" / "kdenlive"
    folder.mkdir(parents=True)
    verdicts = []
    for index, node in enumerate(nodes):
        path = folder / f"timeline-{index}.yaml"
        path.write_text(
            task_yaml(
                {
                    "id": f"timeline-{index}",
                    "app": "kdenlive",
                    "level": "L1",
                    "title": "t",
                    "instruction": "i",
                    "evaluate": {"all": [node]},
                }
            )
        )
        home = tmp_path / "home"
        (home / "Videos").mkdir(parents=True, exist_ok=True)
        shutil.copy(KDENLIVE / "mix.kdenlive", home / "Videos" / "project.kdenlive")
        verdicts.append(_verdict(load_task(path), home))
    # mix.kdenlive: sunset.mp4 is only in the bin; harbour.mp4 is on V1.
    assert verdicts == [False, True]


@pytest.mark.desktop  # runs the real Blender (no display needed)
def test_blender_rename_task_matches_the_hand_port(repo: Path, tmp_path: Path) -> None:
    imported = _imported("L1_blender_rename.json", repo, tmp_path / "tasks")
    hand = _hand(HAND_BLENDER, tmp_path / "hand", "blender", "hand-blender-rename")
    script = tmp_path / "rename.py"
    script.write_text(
        "import bpy, sys\n"
        "args = sys.argv[sys.argv.index('--') + 1:]\n"
        "if args[0] != '-': bpy.data.objects['Cube'].name = args[0]\n"
        "bpy.ops.wm.save_as_mainfile(filepath=args[1])\n"
    )
    expected = {"MyCube": True, "-": False, "Mycube": False}
    for new_name, want in expected.items():
        home = tmp_path / f"home-{new_name}"
        out = home / "Documents" / "scene.blend"
        out.parent.mkdir(parents=True)
        subprocess.run(
            [
                *(
                    "blender",
                    "-b",
                    "--factory-startup",
                    str(ROOT / "tasks/blender/assets/cube.blend"),
                ),
                *("--python-exit-code", "3", "--python", str(script), "--", new_name, str(out)),
            ],
            check=True,
            capture_output=True,
            timeout=180,
        )
        assert _verdict(imported, home) is want, new_name
        assert _verdict(hand, home) is want, new_name
