"""Blender side of scripts/make_deskcraft_assets.py: substitutes for DeskCraft media that
its public repository does not hold (Git LFS objects it never published: the GLB
product models of its interactive Blender tasks, one HDRI sky) or that DeskLoop cannot
use as published (its start scenes were saved by Blender 5, which the desktops'
Blender 3.4 cannot open; its other HDRI is 1.4 MB). Same file names as DeskCraft's, so
the imported instructions still read true; each file is a few KB.

Run by the driver as: blender -b --factory-startup --python THIS -- OUT_DIR [NAME...]
(NAMEs: build only those, e.g. text_scene; a .blend is not byte-reproducible, so
rebuilding one changes the proofs of the tasks that load it).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import bpy

OUT = Path(sys.argv[sys.argv.index("--") + 1])
ONLY = set(sys.argv[sys.argv.index("--") + 2 :])


def clear() -> None:
    bpy.ops.wm.read_factory_settings(use_empty=True)


def material(
    name: str,
    rgb: tuple[float, float, float],
    metallic: float = 0.0,
    roughness: float = 0.5,
    alpha: float = 1.0,
) -> bpy.types.Material:
    mat = bpy.data.materials.new(name)
    mat.use_nodes = True
    bsdf = mat.node_tree.nodes["Principled BSDF"]
    bsdf.inputs["Base Color"].default_value = (*rgb, 1.0)
    bsdf.inputs["Metallic"].default_value = metallic
    bsdf.inputs["Roughness"].default_value = roughness
    bsdf.inputs["Alpha"].default_value = alpha
    return mat


def finish(obj: bpy.types.Object, mat: bpy.types.Material, smooth: bool = True) -> None:
    obj.data.materials.append(mat)
    if smooth:
        for poly in obj.data.polygons:
            poly.use_smooth = True


def lathe(name: str, profile: list[tuple[float, float]], segments: int = 24) -> bpy.types.Object:
    """A solid of revolution about Z from (radius, height) points: bottles, lanterns."""
    verts = []
    for i in range(segments):
        a = 2 * math.pi * i / segments
        verts += [(r * math.cos(a), r * math.sin(a), z) for r, z in profile]
    n = len(profile)
    faces = []
    for i in range(segments):
        j = (i + 1) % segments
        faces += [(i * n + k, j * n + k, j * n + k + 1, i * n + k + 1) for k in range(n - 1)]
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(verts, [], faces)
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def export(name: str) -> None:
    bpy.ops.export_scene.gltf(filepath=str(OUT / f"glb/{name}.glb"), export_format="GLB")


def waterbottle() -> None:
    clear()
    body = lathe(
        "WaterBottle",
        [
            (0.0, 0.0),
            (0.33, 0.0),
            (0.35, 0.05),
            (0.35, 0.7),
            (0.3, 0.85),
            (0.14, 0.98),
            (0.14, 1.05),
            (0.0, 1.05),
        ],
    )
    finish(body, material("Bottle", (0.6, 0.75, 0.85), roughness=0.15, alpha=0.6))
    cap = lathe("Cap", [(0.0, 1.05), (0.16, 1.05), (0.16, 1.18), (0.0, 1.18)])
    finish(cap, material("Cap", (0.05, 0.2, 0.6), roughness=0.4))
    export("model_waterbottle")


def avocado() -> None:
    clear()
    bpy.ops.mesh.primitive_uv_sphere_add(segments=24, ring_count=12, radius=0.5)
    half = bpy.context.object
    half.name = "Avocado"
    half.scale = (0.8, 0.65, 1.1)
    finish(half, material("Skin", (0.12, 0.22, 0.05), roughness=0.7))
    bpy.ops.mesh.primitive_uv_sphere_add(
        segments=16, ring_count=8, radius=0.18, location=(0.0, -0.3, 0.0)
    )
    pit = bpy.context.object
    pit.name = "Pit"
    finish(pit, material("Pit", (0.35, 0.18, 0.07), roughness=0.4))
    export("model_avocado")


def boombox() -> None:
    clear()
    bpy.ops.mesh.primitive_cube_add(size=1.0)
    box = bpy.context.object
    box.name = "Boombox"
    box.scale = (1.6, 0.5, 0.9)
    finish(box, material("Body", (0.7, 0.1, 0.1), roughness=0.35), smooth=False)
    for x in (-0.5, 0.5):
        bpy.ops.mesh.primitive_cylinder_add(
            vertices=24,
            radius=0.3,
            depth=0.1,
            location=(x, -0.27, 0.0),
            rotation=(math.pi / 2, 0.0, 0.0),
        )
        speaker = bpy.context.object
        speaker.name = "Speaker"
        finish(speaker, material("Grille", (0.05, 0.05, 0.05), metallic=0.8))
    export("model_boombox")


def corset() -> None:
    clear()
    body = lathe(
        "Corset",
        [(0.0, 0.0), (0.42, 0.0), (0.32, 0.4), (0.3, 0.55), (0.4, 0.9), (0.36, 1.0), (0.0, 1.0)],
        segments=32,
    )
    finish(body, material("Fabric", (0.55, 0.05, 0.12), roughness=0.3))
    export("model_corset")


def lantern() -> None:
    clear()
    glass = lathe("Lantern", [(0.0, 0.1), (0.25, 0.1), (0.3, 0.4), (0.25, 0.7), (0.0, 0.7)])
    finish(glass, material("Glass", (1.0, 0.85, 0.5), roughness=0.05, alpha=0.5))
    frame = lathe("Frame", [(0.0, 0.0), (0.3, 0.0), (0.3, 0.1), (0.0, 0.1)], segments=6)
    finish(frame, material("Iron", (0.1, 0.1, 0.1), metallic=1.0, roughness=0.5), smooth=False)
    top = lathe("Roof", [(0.0, 0.95), (0.32, 0.7), (0.0, 0.7)], segments=6)
    finish(top, material("Iron", (0.1, 0.1, 0.1), metallic=1.0, roughness=0.5), smooth=False)
    export("model_lantern")


def sky(
    name: str,
    zenith: tuple[float, float, float],
    horizon: tuple[float, float, float],
    ground: tuple[float, float, float],
) -> None:
    """A 64x32 equirectangular sky in linear light: enough to light a product shot."""
    width, height = 64, 32
    image = bpy.data.images.new(name, width, height, float_buffer=True)
    pixels: list[float] = []
    for y in range(height):
        t = y / (height - 1)  # 0 at the bottom row
        for _x in range(width):
            if t < 0.5:
                c = [g + (h - g) * (t / 0.5) for g, h in zip(ground, horizon, strict=True)]
            else:
                c = [h + (z - h) * ((t - 0.5) / 0.5) for h, z in zip(horizon, zenith, strict=True)]
            pixels += [*c, 1.0]
    image.pixels = pixels
    image.filepath_raw = str(OUT / f"exr/{name}.exr")
    image.file_format = "OPEN_EXR"
    image.save()


def scene(name: str, with_objects: bool) -> None:
    """A start scene: camera and sun, and for `simple_scene` a ground Plane with a Cube
    and a Sphere on it (the objects DeskCraft's tasks on that scene name)."""
    clear()
    sc = bpy.context.scene
    cam = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    sc.collection.objects.link(cam)
    cam.location = (7.0, -6.5, 4.5)
    cam.rotation_euler = (math.radians(65), 0.0, math.radians(47))
    sc.camera = cam
    sun = bpy.data.objects.new("Light", bpy.data.lights.new("Light", "SUN"))
    sc.collection.objects.link(sun)
    sun.location = (4.0, 1.0, 6.0)
    sun.data.energy = 3.0
    sc.world = bpy.data.worlds.new("World")
    sc.render.engine = "CYCLES"
    if with_objects:
        bpy.ops.mesh.primitive_plane_add(size=10.0)
        bpy.context.object.name = "Plane"
        bpy.ops.mesh.primitive_cube_add(size=1.5, location=(-1.2, 0.0, 0.75))
        bpy.context.object.name = "Cube"
        bpy.ops.mesh.primitive_uv_sphere_add(radius=0.75, location=(1.2, 0.0, 0.75))
        bpy.context.object.name = "Sphere"
    (OUT / "blend").mkdir(parents=True, exist_ok=True)
    bpy.ops.wm.save_as_mainfile(filepath=str(OUT / f"blend/{name}.blend"), compress=True)


def text_scene() -> None:
    """DeskCraft's text_scene.blend (a Blender 5 file): a 3D text object "Text" showing
    "Text", selected and active, with a camera and a sun."""
    scene("text_scene", with_objects=False)
    bpy.ops.object.text_add(location=(0.0, 0.0, 0.0))
    bpy.context.object.name = "Text"
    bpy.ops.wm.save_as_mainfile(filepath=str(OUT / "blend/text_scene.blend"), compress=True)


def camera_views() -> None:
    """DeskCraft's camera_views.blend (a Blender 5 file): a cube seen by three cameras,
    "Camera" the scene's camera, "Camera.Front" and "Camera.Top"; Camera.Front selected
    and active."""
    scene("camera_views", with_objects=False)
    bpy.ops.mesh.primitive_cube_add(size=2.0)
    sc = bpy.context.scene
    views = {
        "Camera.Top": ((0.0, 0.0, 10.0), (0.0, 0.0, 0.0)),
        "Camera.Front": ((0.0, -10.0, 1.0), (math.radians(90), 0.0, 0.0)),
    }
    for name, (location, rotation) in views.items():
        cam = bpy.data.objects.new(name, bpy.data.cameras.new(name))
        sc.collection.objects.link(cam)
        cam.location, cam.rotation_euler = location, rotation
    for obj in sc.objects:
        obj.select_set(obj.name == "Camera.Front")
    bpy.context.view_layer.objects.active = sc.objects["Camera.Front"]
    bpy.ops.wm.save_as_mainfile(filepath=str(OUT / "blend/camera_views.blend"), compress=True)


def skies() -> None:
    clear()
    sky("hdri_kloppenheim_06_puresky_1k", (0.25, 0.45, 1.2), (1.4, 1.5, 1.6), (0.3, 0.28, 0.25))
    sky("hdri_aerodynamics_workshop_1k", (0.6, 0.6, 0.65), (1.0, 0.95, 0.85), (0.15, 0.15, 0.15))


BUILDERS = {
    "model_waterbottle": waterbottle,
    "model_avocado": avocado,
    "model_boombox": boombox,
    "model_corset": corset,
    "model_lantern": lantern,
    "skies": skies,
    "empty_scene": lambda: scene("empty_scene", with_objects=False),
    "simple_scene": lambda: scene("simple_scene", with_objects=True),
    "text_scene": text_scene,
    "camera_views": camera_views,
}

(OUT / "glb").mkdir(parents=True, exist_ok=True)
(OUT / "exr").mkdir(parents=True, exist_ok=True)
for _name, _build in BUILDERS.items():
    if not ONLY or _name in ONLY:
        _build()
