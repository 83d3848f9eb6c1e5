"""Proposals from scenes and renders made by the real apps, analysed in a real guest.

Blender builds the scene before and after an edit (the cube moved and shaded smooth, a
material made and assigned, a modifier added, the render size changed); the snapshots'
.blend copies are dumped by the `blender_scene` probe in the guest, as after a recording.
A render made by melt is read by ffprobe; GIMP saves a project before and after a
layer edit. One test captures a real local desktop.
"""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import pytest

from app.authoring.diff import diff_states
from app.authoring.propose import propose_checks
from app.authoring.state import StateSnapshot, capture_state
from app.desktops.local.desktop import LocalDesktop
from tests.authoring.test_propose import checks_named, load_as_task, local_guest, put, snapshot

pytestmark = pytest.mark.desktop  # runs the real Blender, melt and a local desktop

BEFORE = "import bpy\nbpy.ops.wm.save_as_mainfile(filepath=OUT)\n"
AFTER = """
import bpy
scene = bpy.context.scene
cube = scene.objects["Cube"]
cube.location = (2.0, 0.5, 0.0)
mat = bpy.data.materials.new("Red")
mat.use_nodes = True
bsdf = mat.node_tree.nodes["Principled BSDF"]
bsdf.inputs["Base Color"].default_value = (0.8, 0.05, 0.05, 1)
bsdf.inputs["Roughness"].default_value = 0.3
cube.data.materials[0] = mat
sub = cube.modifiers.new("Subdivision", "SUBSURF")
sub.levels = 2
for face in cube.data.polygons:
    face.use_smooth = True
scene.render.resolution_x = 640
scene.render.resolution_y = 360
bpy.ops.wm.save_as_mainfile(filepath=OUT)
"""


def blender(script: str, out: Path) -> bytes:
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["blender", "-b", "--factory-startup", "--python-exit-code", "3",
         "--python-expr", f"OUT = {str(out)!r}\n{script}"],
        check=True, capture_output=True, timeout=180,
    )  # fmt: skip
    return out.read_bytes()


@pytest.fixture(scope="module")
def scenes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    tmp = tmp_path_factory.mktemp("scenes")
    return {
        "before": blender(BEFORE, tmp / "before.blend"),
        "after": blender(AFTER, tmp / "after.blend"),
    }


def test_a_blender_edit_proposes_the_moved_cube_its_material_and_modifier(
    tmp_path: Path, scenes: dict[str, bytes]
) -> None:
    home, rec = tmp_path / "home", tmp_path / "rec"
    guest = local_guest(home)
    put(home, "Desktop/scene.blend", scenes["before"])

    async def scenario() -> tuple[StateSnapshot, StateSnapshot]:
        start = await snapshot(guest, rec, "start", analyse_with=guest)
        put(home, "Desktop/scene.blend", scenes["after"])
        end = await snapshot(guest, rec, "end", start, analyse_with=guest)
        return start, end

    start, end = asyncio.run(scenario())
    assert "error" not in end.facts["Desktop/scene.blend"], end.facts["Desktop/scene.blend"]
    diff = diff_states(start, end)
    whats = {c.what for c in diff.files[0].changes}
    assert {
        *("object_moved", "object_shading", "material_added", "object_materials"),
        "modifier_added",
    } <= whats
    proposals = propose_checks(diff, rec)
    (cube,) = [e for e in checks_named(proposals, "blender_object") if e["name"] == "Cube"]
    assert cube["location"] == [2.0, 0.5, 0.0] and cube["material"] == "Red"
    assert cube["smooth"] is True
    (red,) = checks_named(proposals, "blender_material")
    assert red["name"] == "Red" and red["roughness"] == pytest.approx(0.3)
    assert red["base_color"] == pytest.approx([0.8, 0.05, 0.05])
    (sub,) = checks_named(proposals, "blender_modifier")
    assert sub["type"] == "SUBSURF" and sub["settings"]["levels"] == 2
    (render,) = checks_named(proposals, "blender_render")
    assert (render["resolution_x"], render["resolution_y"]) == (640, 360)
    # The guest's probe copies leave nothing behind in the home.
    assert sorted(p.name for p in (home / "Desktop").iterdir()) == ["scene.blend"]
    load_as_task(tmp_path, "blender", proposals)


def test_a_render_proposes_its_media_info(tmp_path: Path) -> None:
    home, rec = tmp_path / "home", tmp_path / "rec"
    guest = local_guest(home)
    out = home / "Videos" / "render.mp4"
    out.parent.mkdir(parents=True)

    async def scenario() -> tuple[StateSnapshot, StateSnapshot]:
        start = await snapshot(guest, rec, "start", analyse_with=guest)
        subprocess.run(
            ["melt", "-quiet", "color:#2040ff", "out=49", "-profile", "atsc_720p_25",
             "-consumer", f"avformat:{out}", "vcodec=libx264", "width=320", "height=180",
             "real_time=-1"],
            check=True, capture_output=True, timeout=180,
        )  # fmt: skip
        end = await snapshot(guest, rec, "end", start, analyse_with=guest)
        return start, end

    start, end = asyncio.run(scenario())
    proposals = propose_checks(diff_states(start, end), rec)
    (info,) = checks_named(proposals, "media_info")
    assert (info["width"], info["height"], info["video_codec"]) == (320, 180, "h264")
    assert info["duration"] == pytest.approx(2.0, abs=0.1) and info["fps"] == pytest.approx(25)
    load_as_task(tmp_path, "kdenlive", proposals)


async def test_a_capture_of_a_live_local_desktop(tmp_path: Path) -> None:
    rec = tmp_path / "rec"
    async with LocalDesktop() as desktop:
        guest = desktop.guest
        start = await capture_state(guest, rec, "start")
        await guest.write_file("~/Desktop/made.txt", b"written in the session")
        result = await guest.run(["sh", "-c", "echo from a program > ~/Desktop/prog.txt"])
        assert result.ok
        end = await capture_state(guest, rec, "end", previous=start)
    diff = diff_states(start, end)
    created: list[Any] = [f.path for f in diff.of("created")]
    assert created == ["Desktop/made.txt", "Desktop/prog.txt"]
    assert not any(path.startswith(".") or "/." in path for path in end.files)


MAKE_XCF = """
(let* ((img (car (gimp-image-new 400 300 RGB)))
       (bg (car (gimp-layer-new img 400 300 RGB-IMAGE "Background" 100 LAYER-MODE-NORMAL)))
       (box (car (gimp-layer-new img 120 80 RGBA-IMAGE "Box" 100 LAYER-MODE-NORMAL))))
  (gimp-image-insert-layer img bg 0 0)
  (gimp-drawable-fill bg FILL-WHITE)
  (gimp-image-insert-layer img box 0 0)
  (gimp-xcf-save 0 img bg "BEFORE" "BEFORE")
  (gimp-layer-set-offsets box 30 40)
  (gimp-layer-set-opacity box 60)
  (let ((txt (car (gimp-text-fontname img -1 200 150 "Sale" 0 TRUE 24 PIXELS "Sans"))))
    (gimp-item-set-name txt "Title"))
  (gimp-xcf-save 0 img bg "AFTER" "AFTER"))
"""


def test_a_gimp_edit_proposes_its_layers(tmp_path: Path) -> None:
    import os

    before, after = tmp_path / "before.xcf", tmp_path / "after.xcf"
    script = MAKE_XCF.replace("BEFORE", str(before)).replace("AFTER", str(after))
    proc = subprocess.run(
        ["gimp-console-2.10", "-i", "-d", "-b", script, "-b", "(gimp-quit 0)"],
        env={**os.environ, "HOME": str(tmp_path)}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert after.exists(), proc.stderr  # GIMP's batch mode exits 0 even on errors
    home, rec = tmp_path / "home", tmp_path / "rec"
    guest = local_guest(home)
    put(home, "Desktop/poster.xcf", before)

    async def scenario() -> tuple[StateSnapshot, StateSnapshot]:
        start = await snapshot(guest, rec, "start")
        put(home, "Desktop/poster.xcf", after)
        return start, await snapshot(guest, rec, "end", start)

    start, end = asyncio.run(scenario())
    proposals = propose_checks(diff_states(start, end), rec)
    (layers,) = checks_named(proposals, "xcf_layers")
    assert layers["order"] == ["Title", "Box", "Background"] and layers["count"] == 3
    by_name = {e["name"]: e for e in checks_named(proposals, "xcf_layer")}
    assert by_name["Title"]["text"] == "Sale"
    assert (by_name["Box"]["x"], by_name["Box"]["y"]) == (30, 40)
    assert by_name["Box"]["opacity"] == pytest.approx(60, abs=0.5)
    load_as_task(tmp_path, "gimp", proposals)
