# mypy: ignore-errors
"""Runs INSIDE Blender: builds the start scenes of the Blender tasks.

Called by scripts/make_blend_assets.py as
    blender -b --factory-startup --python-exit-code 3 --python build_scenes.py -- OUT_DIR
Each scene starts from Blender's factory scene (cube, light, camera), so what an
agent sees is what a new Blender user sees, with a few named objects added.
Every value is set explicitly: the scenes are the same on every run.
"""

import math
import os
import sys

import bpy


def reset():
    bpy.ops.wm.read_factory_settings(use_empty=False)
    scene = bpy.context.scene
    # Deterministic selection: the cube is active and selected, as in a new file.
    for obj in scene.objects:
        obj.select_set(obj.name == "Cube")
    bpy.context.view_layer.objects.active = scene.objects["Cube"]
    return scene


def save(out_dir, name):
    path = os.path.join(out_dir, name)
    # No .blend1 backup beside a rebuilt scene.
    bpy.context.preferences.filepaths.save_version = 0
    bpy.ops.wm.save_as_mainfile(filepath=path, compress=True, relative_remap=True)


def material(name, rgb, roughness=0.5):
    mat = bpy.data.materials.new(name)
    mat.use_nodes = True
    bsdf = mat.node_tree.nodes["Principled BSDF"]
    bsdf.inputs["Base Color"].default_value = (*rgb, 1.0)
    bsdf.inputs["Roughness"].default_value = roughness
    return mat


def scene_basic(out_dir):
    """The factory scene as it is: a cube at the origin, a light and a camera."""
    reset()
    save(out_dir, "cube.blend")


def scene_product(out_dir):
    """A 'product' on a floor for the L3 shot: no light, a camera pointing away."""
    scene = reset()
    bpy.data.objects.remove(scene.objects["Light"], do_unlink=True)
    cube = scene.objects["Cube"]
    cube.name = "Product"
    cube.location = (0.0, 0.0, 1.0)
    cube.data.materials[0] = material("ProductPaint", (0.8, 0.3, 0.05), 0.4)
    bpy.ops.mesh.primitive_plane_add(size=20.0, location=(0.0, 0.0, 0.0))
    floor = bpy.context.active_object
    floor.name = "Floor"
    floor.data.materials.append(material("FloorGrey", (0.5, 0.5, 0.5), 0.9))
    cam = scene.objects["Camera"]
    cam.location = (0.0, 8.0, 1.0)
    cam.rotation_euler = (math.radians(90.0), 0.0, 0.0)  # looks along +Y, away from it
    for obj in scene.objects:
        obj.select_set(obj.name == "Product")
    bpy.context.view_layer.objects.active = cube
    bpy.context.view_layer.update()
    save(out_dir, "product.blend")


def scene_turntable(out_dir):
    """The product lit by a sun and framed by the camera, ready to animate."""
    scene = reset()
    scene.objects["Light"].data.type = "SUN"
    scene.objects["Light"].data.energy = 4.0
    cube = scene.objects["Cube"]
    cube.name = "Product"
    cube.location = (0.0, 0.0, 1.0)
    cube.data.materials[0] = material("ProductPaint", (0.1, 0.3, 0.8), 0.4)
    bpy.ops.mesh.primitive_plane_add(size=20.0, location=(0.0, 0.0, 0.0))
    bpy.context.active_object.name = "Floor"
    cam = scene.objects["Camera"]
    cam.location = (6.0, -6.0, 4.0)
    aim = cube.location - cam.location
    cam.rotation_euler = aim.to_track_quat("-Z", "Y").to_euler()
    for obj in scene.objects:
        obj.select_set(obj.name == "Product")
    bpy.context.view_layer.objects.active = cube
    bpy.context.view_layer.update()
    save(out_dir, "turntable.blend")


def main():
    out_dir = sys.argv[sys.argv.index("--") + 1]
    scene_basic(out_dir)
    scene_product(out_dir)
    scene_turntable(out_dir)


main()
