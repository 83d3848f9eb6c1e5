# mypy: ignore-errors
"""Runs INSIDE Blender (background mode) to dump a scene as JSON for scoring.

Not part of the `app` package (this folder has no __init__.py, and `bpy` exists only
inside Blender): app/probes/blender.py writes this file into the guest at scoring
time, runs it, and removes it. Usage:

    blender -b --factory-startup --disable-autoexec FILE.blend \
        --python-exit-code 3 --python blender_dump.py -- OUT.json

Output is written to OUT.json, not stdout, because Blender prints its own lines
there. Plain Python only: numpy is not importable inside Blender on this system.
"""

import json
import math
import os
import sys

import bpy

SIMPLE = {"BOOLEAN", "INT", "FLOAT", "ENUM", "STRING"}
SKIP_PROPS = {"rna_type", "name", "type", "is_override_data", "persistent_uid"}


def num(x):
    """A JSON-safe float, rounded so dumps are stable across runs."""
    value = float(x)
    if not math.isfinite(value):
        return None
    return round(value, 6)


def vec(values):
    return [num(v) for v in values]


def rna_props(struct):
    """Every simple RNA property of `struct` (modifier, light, camera settings).

    Generic on purpose: a check names the setting it cares about ('levels',
    'width', 'count'), and the dump never needs to know each modifier type.
    """
    out = {}
    for prop in struct.bl_rna.properties:
        key = prop.identifier
        if key in SKIP_PROPS:
            continue
        try:
            value = getattr(struct, key)
        except AttributeError:
            continue
        if prop.type == "POINTER":
            if value is not None and hasattr(value, "name") and isinstance(value.name, str):
                out[key] = value.name
            elif value is None:
                out[key] = None
            continue
        if prop.type not in SIMPLE:
            continue
        if prop.type == "ENUM" and getattr(prop, "is_enum_flag", False):
            out[key] = sorted(value)
        elif prop.type == "FLOAT":
            out[key] = vec(value) if getattr(prop, "array_length", 0) else num(value)
        elif prop.type in ("INT", "BOOLEAN") and getattr(prop, "array_length", 0):
            out[key] = [v if isinstance(v, bool) else int(v) for v in value]
        else:
            out[key] = value
    return out


def socket_value(socket):
    if not hasattr(socket, "default_value"):
        return None
    value = socket.default_value
    try:
        return vec(value)
    except TypeError:
        if isinstance(value, bool | int | float):
            return num(value)
        return None


def fcurves(anim_owner):
    anim = getattr(anim_owner, "animation_data", None)
    if anim is None or anim.action is None:
        return []
    curves = []
    for fc in anim.action.fcurves:
        curves.append(
            {
                "data_path": fc.data_path,
                "index": fc.array_index,
                "keys": [[num(k.co[0]), num(k.co[1])] for k in fc.keyframe_points],
                "interpolation": [k.interpolation for k in fc.keyframe_points],
            }
        )
    return curves


def upstream(socket, limit=64):
    """The nodes whose output reaches `socket`, nearest first, through any nodes between
    (an Image Texture → Normal Map → Normal socket chain counts as a link to Normal)."""
    found, queue, seen = [], [socket], set()
    while queue and len(found) < limit:
        current = queue.pop(0)
        for link in current.links if current.is_linked else ():
            node = link.from_node
            if node.name in seen:
                continue
            seen.add(node.name)
            found.append(node)
            queue.extend(node.inputs)
    return found


def image_ref(image):
    return {"name": image.name, "file": bpy.path.abspath(image.filepath)}


def texture_links(node_tree):
    """For each linked input of each shader node (a BSDF, an emission, a mix: a node
    whose output is a shader): the images that feed it."""
    links = []
    for node in node_tree.nodes:
        if not any(o.type == "SHADER" for o in node.outputs):
            continue
        for socket in node.inputs:
            for source in upstream(socket):
                if source.type == "TEX_IMAGE" and source.image is not None:
                    links.append(dict(image_ref(source.image), socket=socket.name, node=node.type))
    return links


def particle_systems(obj):
    systems = []
    for ps in getattr(obj, "particle_systems", ()):
        systems.append(
            {
                "name": ps.name,
                "settings_name": ps.settings.name,
                "settings": rna_props(ps.settings),
                "seed": ps.seed,
            }
        )
    return systems


def text_data(curve):
    out = rna_props(curve)
    out["body"] = curve.body
    out["font"] = curve.font.name if curve.font is not None else None
    return out


def material(mat):
    out = {
        "name": mat.name,
        "use_nodes": mat.use_nodes,
        "diffuse_color": vec(mat.diffuse_color),
        "metallic": num(mat.metallic),
        "roughness": num(mat.roughness),
        "users": mat.users,
        "principled": None,
        "nodes": [],
        "images": [],
    }
    if mat.use_nodes and mat.node_tree is not None:
        for node in mat.node_tree.nodes:
            out["nodes"].append(node.type)
            if node.type == "BSDF_PRINCIPLED" and out["principled"] is None:
                out["principled"] = {
                    s.name: {"value": socket_value(s), "linked": s.is_linked}
                    for s in node.inputs
                    if s.enabled
                }
            if node.type == "TEX_IMAGE" and node.image is not None:
                out["images"].append(bpy.path.abspath(node.image.filepath))
        out["texture_links"] = texture_links(mat.node_tree)
    return out


def obj_dump(obj):
    rot = obj.rotation_euler
    out = {
        "name": obj.name,
        "type": obj.type,
        "data": obj.data.name if obj.data is not None else None,
        "location": vec(obj.location),
        "rotation_euler": vec(rot),
        "rotation_mode": obj.rotation_mode,
        "scale": vec(obj.scale),
        "dimensions": vec(obj.dimensions),
        "matrix_world": [vec(row) for row in obj.matrix_world],
        "parent": obj.parent.name if obj.parent is not None else None,
        "hide_render": obj.hide_render,
        "hide_viewport": obj.hide_viewport,
        # The eye in the Outliner (this view layer), apart from the monitor above.
        "hidden": obj.hide_get(),
        "particle_systems": particle_systems(obj),
        "collections": [c.name for c in obj.users_collection],
        "materials": [s.material.name if s.material else None for s in obj.material_slots],
        "modifiers": [dict(rna_props(m), name=m.name, type=m.type) for m in obj.modifiers],
        "constraints": [dict(rna_props(c), name=c.name, type=c.type) for c in obj.constraints],
        "fcurves": fcurves(obj),
    }
    if obj.type == "MESH":
        mesh = obj.data
        out["mesh"] = {
            "vertices": len(mesh.vertices),
            "edges": len(mesh.edges),
            "polygons": len(mesh.polygons),
            "smooth_polygons": sum(1 for p in mesh.polygons if p.use_smooth),
        }
    if obj.type == "LIGHT":
        out["light"] = dict(rna_props(obj.data), type=obj.data.type)
    if obj.type == "CAMERA":
        out["camera"] = dict(rna_props(obj.data), type=obj.data.type)
    if obj.type == "FONT":
        out["text"] = text_data(obj.data)
    return out


def world(scene):
    w = scene.world
    if w is None:
        return None
    out = {"name": w.name, "use_nodes": w.use_nodes, "color": vec(w.color), "background": None}
    if w.use_nodes and w.node_tree is not None:
        out["nodes"] = [n.type for n in w.node_tree.nodes]
        out["images"] = [
            bpy.path.abspath(n.image.filepath)
            for n in w.node_tree.nodes
            if n.type == "TEX_ENVIRONMENT" and n.image is not None
        ]
        # The background that reaches the output; the first one when several exist.
        for n in w.node_tree.nodes:
            if n.type == "BACKGROUND":
                out["background"] = {
                    "color": socket_value(n.inputs["Color"]),
                    "color_linked": n.inputs["Color"].is_linked,
                    "strength": socket_value(n.inputs["Strength"]),
                    # Environment images that reach the background's colour.
                    "environment": [
                        image_ref(u.image)
                        for u in upstream(n.inputs["Color"])
                        if u.type == "TEX_ENVIRONMENT" and u.image is not None
                    ],
                }
                break
    return out


def scripting():
    """Traces of Blender's own scripting in the saved file's UI (the integrity flags,
    app/episode/integrity.py): the Python console is an area of the main window, not a
    window, so no title shows it; its history and the screens the windows show are
    saved with the file."""
    windows = []
    for wm in bpy.data.window_managers:
        for win in wm.windows:
            screen = win.screen
            windows.append(
                {
                    "workspace": win.workspace.name if win.workspace is not None else None,
                    "areas": [a.type for a in screen.areas] if screen is not None else [],
                }
            )
    consoles = []
    for screen in bpy.data.screens:
        for area in screen.areas:
            for space in area.spaces:
                if space.type != "CONSOLE":
                    continue
                history = [line.body for line in space.history if line.body.strip()]
                typed = [line.body for line in space.scrollback if line.type == "INPUT"]
                if history or typed:
                    consoles.append({"screen": screen.name, "history": history, "input": typed})
    texts = [
        {"name": t.name, "lines": len(t.lines), "chars": len(t.as_string())}
        for t in bpy.data.texts
        if t.as_string().strip()
    ]
    return {"windows": windows, "consoles": consoles, "texts": texts}


def main():
    out_path = sys.argv[sys.argv.index("--") + 1]
    scene = bpy.context.scene
    render = scene.render
    dump = {
        "blender_version": list(bpy.app.version),
        "file_version": list(bpy.data.version),
        "filepath": bpy.data.filepath,
        "home": os.path.expanduser("~"),
        "scene": {
            "name": scene.name,
            "frame_start": scene.frame_start,
            "frame_end": scene.frame_end,
            "frame_current": scene.frame_current,
            "fps": render.fps,
            "fps_base": num(render.fps_base),
            "engine": render.engine,
            "resolution_x": render.resolution_x,
            "resolution_y": render.resolution_y,
            "resolution_percentage": render.resolution_percentage,
            "filepath": render.filepath,
            "filepath_abs": os.path.normpath(bpy.path.abspath(render.filepath))
            + ("/" if render.filepath.endswith(("/", "\\")) else ""),
            "file_format": render.image_settings.file_format,
            "color_mode": render.image_settings.color_mode,
            "camera": scene.camera.name if scene.camera is not None else None,
            "cycles_samples": getattr(getattr(scene, "cycles", None), "samples", None),
            "eevee_samples": getattr(getattr(scene, "eevee", None), "taa_render_samples", None),
        },
        "objects": [obj_dump(o) for o in scene.objects],
        "materials": [material(m) for m in bpy.data.materials if m.users > 0],
        "world": world(scene),
        "scene_fcurves": fcurves(scene),
        "scripting": scripting(),
    }
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(dump, f, sort_keys=True)


main()
