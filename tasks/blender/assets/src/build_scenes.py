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


def only_selected(scene, name):
    """Select `name` alone and make it active (None: nothing selected, none active)."""
    for obj in scene.objects:
        obj.select_set(obj.name == name)
    bpy.context.view_layer.objects.active = scene.objects[name] if name else None
    bpy.context.view_layer.update()


def scene_catalogue(out_dir):
    """Three one-piece scenes for blender-three-scenes-l3, each worked on in turn: a
    stool, a lamp and a table, each piece selected so keys act on it."""
    scene = reset()
    stool = scene.objects["Cube"]
    stool.name = "Stool"
    stool.location = (0.0, 0.0, 0.5)
    stool.scale = (0.6, 0.6, 0.5)
    stool.data.materials[0] = material("StoolWood", (0.45, 0.25, 0.1), 0.6)
    only_selected(scene, "Stool")
    save(out_dir, "stool.blend")

    scene = reset()
    bpy.data.objects.remove(scene.objects["Cube"], do_unlink=True)
    bpy.ops.mesh.primitive_cone_add(radius1=1.0, radius2=0.4, depth=1.0, location=(0.0, 0.0, 1.5))
    shade = bpy.context.active_object
    shade.name = "Shade"
    shade.data.materials.append(material("ShadeLinen", (0.9, 0.85, 0.7), 0.8))
    only_selected(scene, "Shade")
    save(out_dir, "lamp.blend")

    scene = reset()
    table = scene.objects["Cube"]
    table.name = "Table"
    table.location = (0.0, 0.0, 0.25)
    table.scale = (1.5, 1.0, 0.25)
    table.data.materials[0] = material("TableOak", (0.6, 0.4, 0.2), 0.5)
    only_selected(scene, "Table")
    save(out_dir, "table.blend")


def scene_shop_window(out_dir):
    """A shop window and its two products, each in its own file, for
    blender-shop-window-l3: two empty plinths (tops at z = 1) before a backdrop, no
    light, nothing selected; a bottle and a gift box, each selected, standing at x = 0
    at the height of a plinth's top."""
    scene = reset()
    bpy.data.objects.remove(scene.objects["Cube"], do_unlink=True)
    bpy.data.objects.remove(scene.objects["Light"], do_unlink=True)
    bpy.ops.mesh.primitive_plane_add(size=12.0, location=(0.0, 0.0, 0.0))
    bpy.context.active_object.name = "Floor"
    bpy.ops.mesh.primitive_plane_add(size=12.0, location=(0.0, 3.0, 6.0))
    backdrop = bpy.context.active_object
    backdrop.name = "Backdrop"
    backdrop.rotation_euler = (math.radians(90.0), 0.0, 0.0)
    white = material("WindowWhite", (0.9, 0.9, 0.9), 0.7)
    for name, x in (("PlinthLeft", -2.0), ("PlinthRight", 2.0)):
        bpy.ops.mesh.primitive_cube_add(size=1.0, location=(x, 0.0, 0.5))
        plinth = bpy.context.active_object
        plinth.name = name
        plinth.data.materials.append(white)
    cam = scene.objects["Camera"]
    cam.location = (0.0, -9.0, 3.0)
    aim = scene.objects["Floor"].location.copy()
    aim.z = 1.0
    cam.rotation_euler = (aim - cam.location).to_track_quat("-Z", "Y").to_euler()
    only_selected(scene, None)
    save(out_dir, "window.blend")

    scene = reset()
    bpy.data.objects.remove(scene.objects["Cube"], do_unlink=True)
    bpy.ops.mesh.primitive_cylinder_add(radius=0.3, depth=1.0, location=(0.0, 0.0, 1.5))
    bottle = bpy.context.active_object
    bottle.name = "Bottle"
    bottle.data.materials.append(material("BottleGlass", (0.1, 0.5, 0.2), 0.1))
    only_selected(scene, "Bottle")
    save(out_dir, "bottle.blend")

    scene = reset()
    gift = scene.objects["Cube"]
    gift.name = "Gift"
    gift.location = (0.0, 0.0, 1.4)
    gift.scale = (0.4, 0.4, 0.4)
    gift.data.materials[0] = material("GiftRed", (0.7, 0.05, 0.05), 0.4)
    only_selected(scene, "Gift")
    save(out_dir, "gift.blend")


def main():
    out_dir = sys.argv[sys.argv.index("--") + 1]
    scene_basic(out_dir)
    scene_product(out_dir)
    scene_turntable(out_dir)
    scene_catalogue(out_dir)
    scene_shop_window(out_dir)


main()
