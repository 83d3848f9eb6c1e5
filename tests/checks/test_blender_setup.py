"""The scene-setup Blender checks (world texture, texture links, visibility, constraints,
text, particles) on dumps made by the real Blender from .blend files it saved.

As in tests/checks/test_blender.py: a Blender script builds `good.blend`, which meets
every condition below, and `near.blend`, where each is off in the way a person's slip
would leave it (the HDRI loaded but not plugged in, the normal map in Roughness, the
object hidden in renders only, the wrong tracking axis, one letter of the text, half the
particles). Each check must pass on the first and fail on the second.
"""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from app.checks.base import CheckState, Probe, ProbeResult
from app.checks.registry import get_check, run_check
from app.probes import gather_probe
from tests.checks.test_blender import _guest

pytestmark = pytest.mark.desktop  # runs the real Blender (no display needed)

BUILD = r"""
import bpy, sys
near = sys.argv[sys.argv.index("--") + 1] == "near"
out = sys.argv[sys.argv.index("--") + 2]
folder = out.rsplit("/", 1)[0]

def image(name, fmt, ext, float_buffer=False):
    img = bpy.data.images.new(name, 8, 4, float_buffer=float_buffer)
    img.filepath_raw = f"{folder}/{name}.{ext}"
    img.file_format = fmt
    img.save()
    return img

scene = bpy.context.scene
# World: an HDRI through an Environment Texture node.
world = scene.world
nodes, links = world.node_tree.nodes, world.node_tree.links
env = nodes.new("ShaderNodeTexEnvironment")
env.image = image("studio", "OPEN_EXR", "exr", float_buffer=True)
if not near:
    links.new(env.outputs["Color"], nodes["Background"].inputs["Color"])
nodes["Background"].inputs["Strength"].default_value = 1.5
# Material: a diffuse texture into Base Color, a normal map through a Normal Map node.
cube = scene.objects["Cube"]
mat = bpy.data.materials.new("Brick")
mat.use_nodes = True
tree = mat.node_tree
bsdf = tree.nodes["Principled BSDF"]
diff = tree.nodes.new("ShaderNodeTexImage")
diff.image = image("brick_diff", "PNG", "png")
tree.links.new(diff.outputs["Color"], bsdf.inputs["Base Color"])
nor = tree.nodes.new("ShaderNodeTexImage")
nor.image = image("brick_nor", "PNG", "png")
if near:
    tree.links.new(nor.outputs["Color"], bsdf.inputs["Roughness"])
else:
    nmap = tree.nodes.new("ShaderNodeNormalMap")
    tree.links.new(nor.outputs["Color"], nmap.inputs["Color"])
    tree.links.new(nmap.outputs["Normal"], bsdf.inputs["Normal"])
cube.data.materials[0] = mat
# Visibility.
bpy.ops.mesh.primitive_uv_sphere_add(location=(3, 0, 0))
ball = bpy.context.active_object
ball.name = "Ball"
ball.hide_render = True
if not near:
    ball.hide_viewport = True
# The eye in the Outliner (what H does): saved with the view layer.
bpy.ops.mesh.primitive_cone_add(location=(-3, 0, 0))
cone = bpy.context.active_object
cone.name = "Cone"
cone.hide_set(not near)
# A constraint.
target = bpy.data.objects.new("Target", None)
scene.collection.objects.link(target)
cam = scene.objects["Camera"]
con = cam.constraints.new("TRACK_TO")
con.target = target
con.track_axis = "TRACK_Z" if near else "TRACK_NEGATIVE_Z"
con.up_axis = "UP_Y"
# A text object.
bpy.ops.object.text_add(location=(0, 0, 2))
title = bpy.context.active_object
title.name = "Title"
title.data.body = "Hello blender" if near else "Hello Blender"
title.data.size = 1.5
title.data.extrude = 0.1
# Particles.
bpy.ops.mesh.primitive_plane_add(location=(0, 0, -2))
emitter = bpy.context.active_object
emitter.name = "Emitter"
emitter.modifiers.new("Particles", "PARTICLE_SYSTEM")
ps = emitter.particle_systems[0].settings
ps.count = 1000 if near else 2000
ps.lifetime = 100
ps.frame_start = 1
ps.frame_end = 50
ps.normal_factor = 5
bpy.ops.wm.save_as_mainfile(filepath=out)
"""


def _build(tmp: Path, variant: str) -> Path:
    script = tmp / "build.py"
    script.write_text(BUILD)
    out = tmp / "home" / "Desktop" / variant / "scene.blend"
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


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ProbeResult]:
    tmp = tmp_path_factory.mktemp("blender-setup")
    for variant in ("good", "near"):
        _build(tmp, variant)
    guest = _guest(tmp / "home")

    async def dump_all() -> dict[str, ProbeResult]:
        return {
            v: await gather_probe(guest, Probe("blender_scene", f"~/Desktop/{v}/scene.blend"))
            for v in ("good", "near")
        }

    return asyncio.run(dump_all())


def _run(dumps: dict[str, ProbeResult], variant: str, check: str, **params: Any) -> Any:
    path = f"~/Desktop/{variant}/scene.blend"
    spec = get_check(check)
    parsed = spec.parse_params({"path": path, **params})
    state = CheckState(files={}, assets={}, probes={Probe("blender_scene", path): dumps[variant]})
    return run_check(spec, state, parsed)


CASES: list[tuple[str, dict[str, Any]]] = [
    ("blender_world_texture", {"image": "studio.exr", "strength": 1.5}),
    ("blender_texture_link", {"object": "Cube", "image": "brick_nor.png", "socket": "Normal"}),
    ("blender_visibility", {"name": "Ball", "hide_viewport": True, "hide_render": True}),
    ("blender_visibility", {"name": "Cone", "hidden": True, "hide_viewport": False}),
    (
        "blender_constraint",
        {
            "object": "Camera",
            "type": "TRACK_TO",
            "target": "Target",
            "settings": {"track_axis": "TRACK_NEGATIVE_Z", "up_axis": "UP_Y"},
        },
    ),
    ("blender_text", {"name": "Title", "body": "Hello Blender", "settings": {"size": 1.5}}),
    (
        "blender_particles",
        {"object": "Emitter", "settings": {"count": 2000, "lifetime": 100, "frame_end": 50}},
    ),
]


@pytest.mark.parametrize(("check", "params"), CASES, ids=[c for c, _ in CASES])
def test_check_passes_on_the_scene_and_fails_on_the_near_miss(
    dumps: dict[str, ProbeResult], check: str, params: dict[str, Any]
) -> None:
    assert dumps["good"].error is None, dumps["good"].error
    good = _run(dumps, "good", check, **params)
    assert good.passed, good.evidence
    near = _run(dumps, "near", check, **params)
    assert not near.passed, near.evidence


def test_what_the_near_misses_still_share_passes_on_both(dumps: dict[str, ProbeResult]) -> None:
    # The parts the two scenes have in common pass on both, so the failures above are
    # about the one difference, not a broken reading.
    for variant in ("good", "near"):
        assert _run(
            dumps,
            variant,
            "blender_texture_link",
            material="Brick",
            image="brick_diff.png",
            socket="Base Color",
        ).passed
        assert _run(dumps, variant, "blender_visibility", name="Ball", hide_render=True).passed
        assert _run(
            dumps, variant, "blender_constraint", object="Camera", type="TRACK_TO", target="Target"
        ).passed
        assert _run(dumps, variant, "blender_text", settings={"extrude": 0.1}).passed
        assert _run(
            dumps, variant, "blender_particles", object="Emitter", settings={"normal_factor": 5}
        ).passed


def test_evidence_names_what_was_found(dumps: dict[str, ProbeResult]) -> None:
    world = _run(dumps, "near", "blender_world_texture", image="studio.exr")
    assert "feeding the background: none" in world.evidence and "studio.exr" in world.evidence
    link = _run(
        dumps, "near", "blender_texture_link", object="Cube", image="brick_nor.png", socket="Normal"
    )
    assert "brick_nor.png → Roughness" in link.evidence
    text = _run(dumps, "near", "blender_text", body="Hello Blender")
    assert "'Hello blender'" in text.evidence
    none = _run(dumps, "good", "blender_constraint", object="Cube", type="TRACK_TO", exists=False)
    assert none.passed
    missing = _run(dumps, "good", "blender_particles", object="Cube")
    assert not missing.passed and "no particle system" in missing.evidence


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ValidationError, match="give object or material"):
        get_check("blender_texture_link").parse_params(
            {"path": "~/a.blend", "image": "x.png", "socket": "Normal"}
        )
    with pytest.raises(ValidationError, match="give hide_viewport, hidden or hide_render"):
        get_check("blender_visibility").parse_params({"path": "~/a.blend", "name": "Cube"})
