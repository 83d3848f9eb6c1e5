"""Blender checks on dumps made by the real Blender from real .blend files.

A Blender script in this test builds two scenes: `good.blend`, which meets every
condition the checks below ask for, and `near.blend`, where each of those
conditions is off by a little (a cube 0.05 units off, a modifier one level short,
a 639-pixel-wide render, a key one frame early ...). The `blender_scene` prober
dumps both through a real local guest channel (the same code scoring runs), and
each check must pass on the first and fail on the second.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from app.checks.base import CheckState, Probe, ProbeResult
from app.checks.blender_scene import linear_color
from app.checks.registry import get_check, run_check
from app.desktops.local.guest import LocalGuest
from app.probes import gather_probe

pytestmark = pytest.mark.desktop  # runs the real Blender (no display needed)

BUILD = r"""
import bpy, math, sys
near = sys.argv[sys.argv.index("--") + 1] == "near"
out = sys.argv[sys.argv.index("--") + 2]
d = 0.05 if near else 0.0
scene = bpy.context.scene
cube = scene.objects["Cube"]
cube.location = (2 + d, 0, 0)
cube.rotation_euler = (0, 0, math.radians(45 - (3 if near else 0)))
sub = cube.modifiers.new("Subdivision", "SUBSURF")
sub.levels = 1 if near else 2
sub.render_levels = 2
bev = cube.modifiers.new("Bevel", "BEVEL")
bev.width = 0.1
bev.segments = 2 if near else 3
mat = bpy.data.materials.new("Red")
mat.use_nodes = True
bsdf = mat.node_tree.nodes["Principled BSDF"]
bsdf.inputs["Base Color"].default_value = (0.75 if near else 0.8, 0.05, 0.05, 1)
bsdf.inputs["Roughness"].default_value = 0.3
bsdf.inputs["Metallic"].default_value = 1.0
cube.data.materials[0] = mat
cube.keyframe_insert("location", index=2, frame=1)
cube.location.z = 2
cube.keyframe_insert("location", index=2, frame=47 if near else 48)
cube.location.z = 0
rig = bpy.data.objects.new("Rig", None)
scene.collection.objects.link(rig)
if not near:
    cube.parent = rig
bpy.ops.mesh.primitive_uv_sphere_add(location=(-2, 0, 0))
sphere = bpy.context.active_object
sphere.name = "Ball"
if not near:
    bpy.ops.object.shade_smooth()
light = scene.objects["Light"]
light.data.type = "SUN"
light.data.energy = 2 if near else 3
cam = scene.objects["Camera"]
cam.location = (0, -10, 0)
cam.rotation_euler = (math.radians(90), 0, math.radians(10 if near else 0))
cam.data.lens = 35
target = bpy.data.objects.new("Target", None)
scene.collection.objects.link(target)
world = scene.world
world.node_tree.nodes["Background"].inputs["Color"].default_value = (0.1, 0.2, 0.3, 1)
world.node_tree.nodes["Background"].inputs["Strength"].default_value = 0.6 if near else 0.5
r = scene.render
r.engine = "CYCLES"
r.resolution_x = 639 if near else 640
r.resolution_y = 360
r.resolution_percentage = 50
r.fps = 25 if near else 30
scene.frame_start = 1
scene.frame_end = 47 if near else 48
r.filepath = "//render/shot_" if not near else "//renders/shot_"
r.image_settings.file_format = "JPEG" if near else "PNG"
bpy.ops.wm.save_as_mainfile(filepath=out)
"""


def _build(tmp: Path, variant: str) -> Path:
    script = tmp / "build.py"
    script.write_text(BUILD)
    out = tmp / "home" / "Desktop" / f"{variant}.blend"
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            *("blender", "-b", "--factory-startup", "--python-exit-code", "3"),
            *("--python", str(script), "--", variant, str(out)),
        ],
        check=True,
        capture_output=True,
        timeout=180,
    )
    return out


def _guest(home: Path) -> LocalGuest:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY",)}
    env.update(HOME=str(home), TMPDIR=str(home))
    logs = home.parent / "logs"
    logs.mkdir(exist_ok=True)
    return LocalGuest(home, env, logs, sandbox=None)


@pytest.fixture(scope="module")
def scenes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The dumps of good.blend and near.blend, plus the guest home they live in."""
    tmp = tmp_path_factory.mktemp("blender")
    for variant in ("good", "near"):
        _build(tmp, variant)
    (tmp / "home" / "Desktop" / "not-a-scene.blend").write_bytes(b"hello")
    guest = _guest(tmp / "home")

    async def dump_all() -> dict[str, ProbeResult]:
        names = ("good", "near", "not-a-scene", "missing")
        return {
            n: await gather_probe(guest, Probe("blender_scene", f"~/Desktop/{n}.blend"))
            for n in names
        }

    return {"home": tmp / "home", "dumps": asyncio.run(dump_all())}


def _run(scenes: dict[str, Any], variant: str, check: str, **params: Any) -> Any:
    path = f"~/Desktop/{variant}.blend"
    spec = get_check(check)
    parsed = spec.parse_params({"path": path, **params})
    state = CheckState(
        files={}, assets={}, probes={Probe("blender_scene", path): scenes["dumps"][variant]}
    )
    return run_check(spec, state, parsed)


def test_prober_dumps_the_scene_and_leaves_nothing_behind(scenes: dict[str, Any]) -> None:
    good = scenes["dumps"]["good"]
    assert good.error is None, good.error
    assert good.data["file_version"][:2] == [3, 4]
    assert good.data["home"] == str(scenes["home"])
    names = {o["name"] for o in good.data["objects"]}
    assert {"Cube", "Light", "Camera", "Rig", "Ball", "Target"} <= names
    # The dump script and its output were removed from the guest's home.
    cache = scenes["home"] / ".cache"
    assert not cache.exists() or not any(cache.glob("deskloop-probe-*"))


def test_prober_failures_say_why(scenes: dict[str, Any]) -> None:
    missing = scenes["dumps"]["missing"]
    assert missing.error == "not found"
    bad = scenes["dumps"]["not-a-scene"]
    assert bad.error is not None and "could not open" in bad.error
    result = _run(scenes, "not-a-scene", "blender_object", name="Cube")
    assert not result.passed and "cannot read the Blender scene" in result.evidence
    result = _run(scenes, "missing", "blender_render", engine="CYCLES")
    assert not result.passed and "does not exist" in result.evidence


# Each case: (check, params). It must pass on good.blend and fail on near.blend.
CASES: list[tuple[str, dict[str, Any]]] = [
    ("blender_object", {"name": "Cube", "type": "MESH", "location": [2, 0, 0]}),
    ("blender_object", {"name": "Cube", "rotation": [0, 0, 45], "angle_tolerance": 1}),
    ("blender_object", {"name": "Cube", "parent": "Rig"}),
    ("blender_object", {"name_regex": "^Ball", "smooth": True}),
    ("blender_modifier", {"object": "Cube", "type": "SUBSURF", "settings": {"levels": 2}}),
    ("blender_modifier", {"object": "Cube", "type": "BEVEL", "settings": {"segments": 3}}),
    ("blender_material", {"object": "Cube", "base_color": [0.8, 0.05, 0.05], "metallic": 1}),
    ("blender_render", {"resolution_x": 640, "resolution_y": 360}),
    ("blender_render", {"fps": 30, "frame_start": 1, "frame_end": 48}),
    ("blender_render", {"output_path": "~/Desktop/render/shot_", "file_format": "PNG"}),
    ("blender_keyframes", {"object": "Cube", "data_path": "location", "frames": [1, 48]}),
    ("blender_world", {"color": [0.1, 0.2, 0.3], "strength": 0.5}),
    ("blender_light", {"light_type": "SUN", "energy": 3}),
    ("blender_camera", {"looks_at": "Target", "angle_tolerance": 5, "lens": 35}),
]


@pytest.mark.parametrize(
    ("check", "params"), CASES, ids=[f"{c}-{i}" for i, (c, _) in enumerate(CASES)]
)
def test_check_passes_on_the_scene_and_fails_on_the_near_miss(
    scenes: dict[str, Any], check: str, params: dict[str, Any]
) -> None:
    good = _run(scenes, "good", check, **params)
    assert good.passed and good.score == 1.0, good.evidence
    near = _run(scenes, "near", check, **params)
    assert not near.passed and near.score == 0.0, near.evidence
    assert "✗" in near.evidence or "no " in near.evidence


def test_evidence_names_the_values(scenes: dict[str, Any]) -> None:
    near = _run(scenes, "near", "blender_object", name="Cube", location=[2, 0, 0])
    assert "location (2.05, 0, 0) ≠ (2, 0, 0) ±0.01 ✗" in near.evidence
    near = _run(scenes, "near", "blender_render", resolution_x=640)
    assert "resolution_x 639, expected 640 ✗" in near.evidence


def test_keyframe_values_and_rotation_in_degrees(scenes: dict[str, Any]) -> None:
    keyed = _run(
        scenes,
        "good",
        "blender_keyframes",
        object="Cube",
        data_path="location",
        index=2,
        frames=[1, 48],
        values=[0, 2],
    )
    assert keyed.passed, keyed.evidence
    wrong = _run(
        scenes,
        "good",
        "blender_keyframes",
        object="Cube",
        data_path="location",
        index=2,
        frames=[1, 48],
        values=[0, 2.1],
    )
    assert not wrong.passed
    # 45° is also -315°: rotations compare modulo 360.
    assert _run(scenes, "good", "blender_object", name="Cube", rotation=[0, 0, -315]).passed


def test_absence_and_counts(scenes: dict[str, Any]) -> None:
    assert _run(scenes, "good", "blender_object", name="Suzanne", exists=False).passed
    assert not _run(scenes, "good", "blender_object", name="Cube", exists=False).passed
    assert _run(scenes, "good", "blender_object_count", type="MESH", count=2).passed
    assert not _run(scenes, "good", "blender_object_count", type="MESH", count=3).passed
    assert _run(scenes, "good", "blender_object_count", type="EMPTY", min=2, max=2).passed
    no_mod = _run(scenes, "good", "blender_modifier", object="Ball", type="SUBSURF", exists=False)
    assert no_mod.passed, no_mod.evidence
    assert not _run(
        scenes, "good", "blender_modifier", object="Cube", type="SUBSURF", exists=False
    ).passed


def test_hex_colors_are_srgb_as_blenders_hex_field_shows() -> None:
    r, g, b = linear_color("#ff8000")
    assert r == pytest.approx(1.0) and b == pytest.approx(0.0)
    assert g == pytest.approx(0.2158605, abs=1e-5)  # Blender shows #FF8000 for 0.21586


def test_bad_parameters_are_refused_when_the_task_loads() -> None:
    spec = get_check("blender_object")
    for bad in (
        {"path": "~/a.blend"},  # neither name nor name_regex
        {"path": "~/a.blend", "name": "A", "name_regex": "B"},
        {"path": "~/a.blend", "name": "A", "exists": False, "location": [0, 0, 0]},
        {"path": "~/a.blend", "name": "A", "location": [0, 0]},
        {"path": "~/a.blend", "name_regex": "("},
        {"path": "a.blend", "name": "A"},
    ):
        with pytest.raises(ValueError):
            spec.parse_params(bad)
    with pytest.raises(ValueError):
        get_check("blender_material").parse_params(
            {"path": "~/a.blend", "name": "M", "base_color": "red"}
        )
    with pytest.raises(ValueError):
        get_check("blender_render").parse_params({"path": "~/a.blend"})
    with pytest.raises(ValueError):
        get_check("blender_keyframes").parse_params(
            {"path": "~/a.blend", "object": "C", "data_path": "location", "values": [1]}
        )
