"""Checks proposed from a state diff, for the researcher to accept, edit or drop.

Each `ProposedCheck` is a leaf exactly as a task's ``evaluate`` tree (or a phase's
``checks``) takes it, ``{"check": NAME, PARAM: VALUE, ...}``, validated through the
check's own parameter model as it is made, so an accepted proposal always loads. It
says `why` in one line (what changed, from → to) and which files it needs copied into
the task folder (the produced image, as the expected image of `image_similarity`).

Thresholds come from what was produced, loosened just enough that a replay of the
same work passes and a different result fails (docs/authoring.md lists them): exact
sizes, counts and names; SSIM ≥ `SIMILARITY_THRESHOLD` against the produced image;
Blender positions within `LOCATION_TOLERANCE` units and rotations within
`ANGLE_TOLERANCE` degrees; timeline positions within a fifth of a second; colour
measures within a band around the produced value.
"""

from __future__ import annotations

import itertools
import math
import posixpath
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from app.authoring.diff import (
    Change,
    FileDiff,
    StateDiff,
    diff_states,
    effect_places,
    media_summary,
    principled_values,
)
from app.authoring.state import blob_path, load_snapshot, snapshot_labels
from app.checks.registry import get_check
from app.core.errors import TaskError
from app.core.validation import validation_problems

SIMILARITY_THRESHOLD = 0.97
"""SSIM of a replay's image against the produced one: identical work gives 1.0, and a
re-encoded JPEG or a slightly different crop still passes."""
LOCATION_TOLERANCE = 0.05
"""Blender units, for location and scale."""
ANGLE_TOLERANCE = 1.0
"""Degrees, for rotations."""
COLOR_TOLERANCE = 0.02
"""Per channel (linear 0-1) and for Principled numbers (metallic, roughness)."""
TIMELINE_SECONDS_TOLERANCE = 0.2
"""Kdenlive positions, in points, lengths and guides may differ by this many seconds
(5 frames at 25 fps): a clip dropped by hand lands a few frames off."""
LAYER_TOLERANCE = 4
"""Pixels a GIMP layer's offsets and size may differ (a text layer placed by a click)."""
MEASURE_BANDS = {"brightness": 6.0, "contrast": 6.0, "saturation": 0.04, "warmth": 0.03}
"""Half-widths of the accepted band around a produced colour measure."""
DURATION_SHARE = 0.02
"""A render's duration may differ by this share (at least 0.1 s)."""
EXPECTED_DIR = "assets/expected"
RENDER_PARAMS = frozenset(
    {
        "engine",
        "resolution_x",
        "resolution_y",
        "resolution_percentage",
        "frame_start",
        "frame_end",
        "file_format",
        "camera",
    }
)

MODIFIER_SETTINGS: dict[str, tuple[str, ...]] = {
    "SUBSURF": ("levels", "render_levels"),
    "BEVEL": ("width", "segments"),
    "ARRAY": ("count", "relative_offset_displace"),
    "BOOLEAN": ("operation", "object"),
    "MIRROR": ("use_axis",),
    "SOLIDIFY": ("thickness", "offset"),
    "DECIMATE": ("ratio",),
    "WIREFRAME": ("thickness",),
    "SCREW": ("steps", "angle"),
    "DISPLACE": ("strength",),
}
"""The settings proposed for a new modifier (what its panel's first rows show); for a
changed modifier, the settings that changed."""
EFFECT_PARAMS: dict[str, tuple[str, ...]] = {
    "frei0r.brightness": ("Brightness",),
    "brightness": ("level",),
    "volume": ("level",),
    "gain": ("gain",),
    "avfilter.eq": ("av.brightness", "av.contrast", "av.saturation", "av.gamma"),
    "frei0r.saturat0r": ("Saturation",),
    "frei0r.contrast0r": ("Contrast",),
    "qtblend": ("rotation",),
    "box_blur": ("hradius", "vradius"),
    "sepia": ("u", "v"),
}
"""Effect parameters proposed when they hold one value (not an animation)."""


@dataclass(frozen=True)
class ProposedCheck:
    """One check the diff suggests, as a task's evaluate tree takes it."""

    entry: dict[str, Any]
    """``{"check": NAME, PARAM: VALUE, ...}``: a leaf of an evaluate tree."""
    why: str
    """One line for the researcher: what changed, from → to."""
    path: str
    """The guest file it is about: '~/Desktop/out.png'."""
    assets: dict[str, Path] = field(default_factory=dict)
    """Files to copy into the task folder: the task-relative path the entry names
    (``assets/expected/Desktop/out.png``) → the copy in the recording's blobs."""

    @property
    def check(self) -> str:
        return str(self.entry["check"])

    def edited(self, **params: Any) -> ProposedCheck:
        """This proposal with parameters changed (None removes one), validated again.

        Raises:
            TaskError: the edited parameters are not valid for the check.
        """
        entry = {k: v for k, v in {**self.entry, **params}.items() if v is not None}
        return ProposedCheck(check_entry(entry), self.why, self.path, dict(self.assets))


def check_entry(entry: Mapping[str, Any], where: str = "proposal") -> dict[str, Any]:
    """`entry` if it is a valid evaluate-tree leaf (a known check, valid parameters).

    Raises:
        TaskError: unknown check or invalid parameters, one line per problem.
    """
    name = entry.get("check")
    if not isinstance(name, str):
        raise TaskError(f"{where}: check: a leaf names its check")
    spec = get_check(name)
    params = {k: v for k, v in entry.items() if k not in ("check", "weight", "required", "label")}
    try:
        spec.parse_params(params)
    except ValidationError as exc:
        problems = validation_problems(exc, f"{where} ({name})")
        raise TaskError("\n".join(problems)) from None
    return dict(entry)


@dataclass(frozen=True)
class Proposals:
    """What a recording's snapshots suggest: the task's checks and each phase's."""

    final: list[ProposedCheck]
    """From the start to the end: the task's evaluate tree."""
    phases: list[list[ProposedCheck]]
    """From each boundary's diff against the previous one (start for the first): the
    checks of the phase that boundary ends."""
    diffs: list[StateDiff]
    """start → end, then each phase's diff, in the same order."""


def propose_recording(folder: Path, expected_dir: str = "") -> Proposals:
    """Proposals from the snapshots of recording `folder` (start, boundary-N, end),
    analysed beforehand (`app.authoring.analysis.analyse_snapshot`). Pure: reads only
    the snapshots. Expected images are named under `expected_dir` in the task (default
    ``assets/expected``; a drafted task uses its own ``assets/ID/expected``), a
    boundary's under ``EXPECTED_DIR/<label>``.

    Raises:
        RecordingError: no start or end snapshot, or one that cannot be read.
    """
    labels = snapshot_labels(folder)
    snapshots = [load_snapshot(folder, label) for label in labels]
    start = load_snapshot(folder, "start")
    end = load_snapshot(folder, "end")
    final_diff = diff_states(start, end)
    phase_diffs = [diff_states(a, b) for a, b in itertools.pairwise(snapshots)]
    root = expected_dir or EXPECTED_DIR
    return Proposals(
        final=propose_checks(final_diff, folder, root),
        phases=[propose_checks(d, folder, f"{root}/{d.after}") for d in phase_diffs],
        diffs=[final_diff, *phase_diffs],
    )


def subgoal_diffs(folder: Path) -> list[StateDiff]:
    """What each sub-goal changed: start → boundary-1, ..., boundary-N → end (empty
    when the recording has no snapshots). Pure: reads only the snapshots."""
    labels = snapshot_labels(folder)
    if "start" not in labels or "end" not in labels:
        return []
    snapshots = [load_snapshot(folder, label) for label in labels]
    return [diff_states(a, b) for a, b in itertools.pairwise(snapshots)]


def propose_checks(
    diff: StateDiff, folder: Path, expected_dir: str | None = None
) -> list[ProposedCheck]:
    """The checks `diff` suggests, in file order, each valid by construction.

    `folder` is the recording (its blobs are the files to copy); expected images are
    named under `expected_dir` in the task, by default ``assets/expected`` for the
    end and ``assets/expected/<label>`` for a boundary's phase.
    """
    under = expected_dir or (
        EXPECTED_DIR if diff.after == "end" else f"{EXPECTED_DIR}/{diff.after}"
    )
    proposals: list[ProposedCheck] = []
    for file in diff.files:
        if _is_noise(file.path):
            continue
        proposals.extend(_file_checks(file))
        facts = file.after_facts
        if file.status == "deleted" or facts is None or "error" in facts:
            continue
        if file.kind == "image":
            proposals.extend(_image_checks(file, facts, folder, under))
        elif file.kind == "xcf":
            proposals.extend(_xcf_checks(file, facts))
        elif file.kind == "blend":
            proposals.extend(_blend_checks(file, facts))
        elif file.kind == "kdenlive":
            proposals.extend(_kdenlive_checks(file, facts))
        elif file.kind == "media":
            proposals.extend(_media_checks(file, facts))
    return proposals


def evaluate_tree(accepted: Iterable[ProposedCheck]) -> dict[str, Any]:
    """An evaluate tree (or a phase's checks) of the accepted proposals: all must pass."""
    return {"all": [dict(p.entry) for p in accepted]}


def copy_assets(accepted: Iterable[ProposedCheck], task_folder: Path) -> list[Path]:
    """Copy the files the accepted proposals name into `task_folder`; the paths written."""
    written: list[Path] = []
    for proposal in accepted:
        for relative, source in proposal.assets.items():
            target = task_folder / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            written.append(target)
    return written


# --- helpers -----------------------------------------------------------------------------


def _is_noise(path: str) -> bool:
    """Backups the apps write beside a file (scene.blend1, notes.txt~)."""
    suffix = posixpath.splitext(path)[1]
    return path.endswith("~") or (
        suffix.startswith(".blend") and suffix[6:].isdigit() and suffix != ".blend"
    )


def _make(
    check: str, why: str, path: str, assets: dict[str, Path] | None = None, **params: Any
) -> ProposedCheck:
    entry = check_entry({"check": check, "path": path, **params}, f"proposed {check}")
    return ProposedCheck(entry, why, path, assets or {})


def _r(value: Any, digits: int = 4) -> Any:
    """Rounded for a task file (dumps carry 6 decimals of float noise)."""
    if isinstance(value, float):
        return round(value, digits)
    if isinstance(value, list | tuple):
        return [_r(v, digits) for v in value]
    return value


def _changes(file: FileDiff, *whats: str) -> list[Change]:
    return [c for c in file.changes if c.what in whats]


def _file_checks(file: FileDiff) -> list[ProposedCheck]:
    path = file.guest_path
    if file.status == "created":
        size = file.after.size if file.after else 0
        return [_make("file_exists", f"created {path} ({size} bytes)", path)]
    if file.status == "deleted":
        return [_make("file_not_exists", f"deleted {path}", path)]
    old = file.before.size if file.before else "?"
    sizes = f"{old} → {file.after.size if file.after else '?'} bytes"
    return [_make("file_modified_after_start", f"changed {path} ({sizes})", path)]


# --- images and GIMP -----------------------------------------------------------------------


def _image_checks(
    file: FileDiff, facts: Mapping[str, Any], folder: Path, under: str
) -> list[ProposedCheck]:
    path = file.guest_path
    size = f"{facts['width']}×{facts['height']}"
    resized = _changes(file, "image_resized")
    was = f"{resized[0].before} → " if resized else ""
    out = [
        _make(
            "image_size",
            f"{path} is {was}{size}",
            path,
            width=facts["width"],
            height=facts["height"],
        ),
        _make(
            "image_mode",
            f"{path} is {facts['format']} {facts['mode']}",
            path,
            mode=facts["mode"],
            **({"format": facts["format"]} if facts.get("format") else {}),
        ),
    ]
    if file.after is not None and file.after.sha256 is not None:
        source = blob_path(folder, file.after.sha256)
        if source.is_file():
            reference = f"{under}/{file.path}"
            out.append(
                _make(
                    "image_similarity",
                    f"{path} looks like the produced image (copied to {reference})",
                    path,
                    {reference: source},
                    reference=reference,
                    threshold=SIMILARITY_THRESHOLD,
                )
            )
    moved = _changes(file, "image_colors")
    if moved:
        measures = facts.get("measures") or {}
        bounds = {
            c.subject: [
                _r(measures[c.subject] - MEASURE_BANDS[c.subject], 3),
                _r(measures[c.subject] + MEASURE_BANDS[c.subject], 3),
            ]
            for c in moved
            if isinstance(measures.get(c.subject), int | float)
        }
        why = "; ".join(f"{c.subject} {c.before} → {c.after}" for c in moved)
        out.append(_make("image_color_stats", f"{path}: {why}", path, None, **bounds))
    return out


def _xcf_checks(file: FileDiff, facts: Mapping[str, Any]) -> list[ProposedCheck]:
    path = file.guest_path
    layers = facts.get("layers") or []
    names = [str(layer["name"]) for layer in layers]
    out: list[ProposedCheck] = []
    structural = _changes(
        file, "layer_added", "layer_removed", "layer_renamed", "layers_reordered", "canvas_resized"
    )
    if file.status == "created" or structural:
        why = "; ".join(c.words() for c in structural) or f"created with layers {names}"
        params: dict[str, Any] = {
            "count": len(layers),
            "width": facts["width"],
            "height": facts["height"],
        }
        if names:
            params["order"] = names
        out.append(_make("xcf_layers", f"{path}: {why}", path, **params))
    by_name = {str(layer["name"]): layer for layer in layers}
    touched = [
        c for c in file.changes if c.what in ("layer_added", "layer_renamed", "layer_changed")
    ]
    for change in touched:
        name = change.key[0] if change.key else ""
        layer = by_name.get(name)
        if layer is None:
            continue
        if change.what == "layer_changed":
            keys = [k for k in change.after if k != "is_group"]
        else:
            keys = ["visible", "opacity", "mode", "x", "y", "width", "height", "text"]
        params = {"name": name}
        for key in keys:
            value = layer.get(key)
            if value is None:
                continue
            params[key] = float(value) if key == "opacity" else value
        if any(k in params for k in ("x", "y", "width", "height")):
            params["size_tolerance"] = LAYER_TOLERANCE
        out.append(_make("xcf_layer", f"{path}: {change.words()}", path, **params))
    return out


# --- Blender -----------------------------------------------------------------------------------


def _degrees(radians: list[float]) -> list[float]:
    return [round(math.degrees(v), 2) for v in radians]


def _blend_checks(file: FileDiff, facts: Mapping[str, Any]) -> list[ProposedCheck]:
    path = file.guest_path
    dump: Mapping[str, Any] = facts.get("probe") or {}
    objects = {str(o.get("name")): o for o in dump.get("objects", [])}
    out: list[ProposedCheck] = []
    for change in _changes(file, "object_count"):
        out.append(
            _make(
                "blender_object_count",
                f"{path}: {change.subject} objects {change.before} → {change.after}",
                path,
                type=change.subject,
                count=change.after,
            )
        )
    for change in _changes(file, "object_added"):
        obj = objects[change.subject]
        params: dict[str, Any] = {
            "name": change.subject,
            "type": obj.get("type"),
            "location": _r(obj.get("location")),
            "tolerance": LOCATION_TOLERANCE,
        }
        rotation = obj.get("rotation_euler") or [0, 0, 0]
        if any(abs(v) > 1e-4 for v in rotation):
            params.update(rotation=_degrees(rotation), angle_tolerance=ANGLE_TOLERANCE)
        if any(abs(v - 1) > 1e-4 for v in obj.get("scale") or [1, 1, 1]):
            params["scale"] = _r(obj.get("scale"))
        material = next((m for m in obj.get("materials") or [] if m), None)
        if material:
            params["material"] = material
        out.append(_make("blender_object", f"{path}: {change.words()}", path, **params))
    for change in _changes(file, "object_removed"):
        out.append(
            _make(
                "blender_object",
                f"{path}: {change.words()}",
                path,
                name=change.subject,
                exists=False,
            )
        )
    # One check per object for how it was placed, another for what it is made of.
    placed: dict[str, list[Change]] = {}
    for change in _changes(
        file,
        "object_moved",
        "object_rotated",
        "object_scaled",
        "object_parent",
        "object_hide_render",
        "object_materials",
        "object_shading",
    ):
        placed.setdefault(change.subject, []).append(change)
    for name, changes in placed.items():
        obj = objects[name]
        params = {"name": name}
        for change in changes:
            if change.what == "object_moved":
                params.update(location=_r(obj["location"]), tolerance=LOCATION_TOLERANCE)
            elif change.what == "object_rotated":
                params.update(
                    rotation=_degrees(obj["rotation_euler"]), angle_tolerance=ANGLE_TOLERANCE
                )
            elif change.what == "object_scaled":
                params.update(scale=_r(obj["scale"]), tolerance=LOCATION_TOLERANCE)
            elif change.what == "object_parent":
                params["parent"] = obj.get("parent") or ""
            elif change.what == "object_hide_render":
                params["hide_render"] = bool(obj.get("hide_render"))
            elif change.what == "object_shading":
                params["smooth"] = change.after == "smooth"
            elif change.what == "object_materials":
                new = [
                    m for m in obj.get("materials") or [] if m and m not in (change.before or [])
                ]
                if new:
                    params["material"] = new[0]
        if len(params) > 1:
            why = "; ".join(c.words() for c in changes)
            out.append(_make("blender_object", f"{path}: {why}", path, **params))
    out.extend(_modifier_checks(file, path, objects))
    out.extend(_material_checks(file, path, dump))
    out.extend(_light_camera_checks(file, path, objects))
    out.extend(_scene_checks(file, path, dump))
    return out


def _setting(value: Any) -> bool:
    """Whether a dump value is one `blender_modifier` settings can hold."""
    if isinstance(value, bool | int | float | str):
        return True
    return isinstance(value, list) and all(isinstance(v, int | float) for v in value)


def _modifier_checks(file: FileDiff, path: str, objects: Mapping[str, Any]) -> list[ProposedCheck]:
    out: list[ProposedCheck] = []
    for change in _changes(file, "modifier_added", "modifier_changed", "modifier_removed"):
        obj_name, mod_type, mod_name = change.key
        if change.what == "modifier_removed":
            out.append(
                _make(
                    "blender_modifier",
                    f"{path}: {change.words()}",
                    path,
                    object=obj_name,
                    type=mod_type,
                    name=mod_name,
                    exists=False,
                )
            )
            continue
        mod = next(
            m
            for m in objects[obj_name].get("modifiers", [])
            if (m.get("type"), m.get("name")) == (mod_type, mod_name)
        )
        keys = (
            MODIFIER_SETTINGS.get(mod_type, ())
            if change.what == "modifier_added"
            else tuple(change.after)
        )
        settings = {k: _r(mod[k]) for k in keys if k in mod and _setting(mod[k])}
        params: dict[str, Any] = {"object": obj_name, "type": mod_type, "name": mod_name}
        if settings:
            params["settings"] = settings
        out.append(_make("blender_modifier", f"{path}: {change.words()}", path, **params))
    return out


def _material_checks(file: FileDiff, path: str, dump: Mapping[str, Any]) -> list[ProposedCheck]:
    materials = {str(m.get("name")): m for m in dump.get("materials", [])}
    fields = {
        "Base Color": "base_color",
        "Metallic": "metallic",
        "Roughness": "roughness",
        "Emission": "emission",
        "Emission Strength": "emission_strength",
        "Alpha": "alpha",
    }
    out: list[ProposedCheck] = []
    for change in _changes(file, "material_added", "material_changed"):
        values = principled_values(materials[change.subject])
        keys = (
            ("Base Color", "Metallic", "Roughness")
            if change.what == "material_added"
            else tuple(change.after)
        )
        params: dict[str, Any] = {"name": change.subject}
        for key in keys:
            value = values.get(key)
            if value is None:
                continue
            params[fields[key]] = _r(value[:3], 4) if isinstance(value, list) else _r(value, 4)
        if len(params) > 1:
            params["tolerance"] = COLOR_TOLERANCE
        out.append(_make("blender_material", f"{path}: {change.words()}", path, **params))
    return out


def _light_camera_checks(
    file: FileDiff, path: str, objects: Mapping[str, Any]
) -> list[ProposedCheck]:
    out: list[ProposedCheck] = []
    added = {c.subject for c in _changes(file, "object_added")}
    lights = {c.key[0] for c in _changes(file, "light_changed")} | {
        n for n in added if objects[n].get("type") == "LIGHT"
    }
    for name in sorted(lights):
        light = objects[name].get("light") or {}
        params: dict[str, Any] = {"name": name, "light_type": light.get("type")}
        energy = light.get("energy")
        if isinstance(energy, int | float):
            params.update(
                energy=_r(float(energy), 3), energy_tolerance=max(0.5, round(0.05 * energy, 3))
            )
        if isinstance(light.get("color"), list):
            params["color"] = _r(light["color"][:3])
        why = "; ".join(c.words() for c in _changes(file, "light_changed") if c.key[0] == name)
        out.append(
            _make("blender_light", f"{path}: {why or f'added light {name}'}", path, **params)
        )
    cameras = {c.key[0] for c in _changes(file, "camera_changed")} | {
        n for n in added if objects[n].get("type") == "CAMERA"
    }
    for name in sorted(cameras):
        camera = objects[name].get("camera") or {}
        params = {"name": name}
        if isinstance(camera.get("lens"), int | float):
            params["lens"] = _r(float(camera["lens"]), 3)
        if camera.get("type"):
            params["camera_type"] = camera["type"]
        why = "; ".join(c.words() for c in _changes(file, "camera_changed") if c.key[0] == name)
        out.append(
            _make("blender_camera", f"{path}: {why or f'added camera {name}'}", path, **params)
        )
    return out


def _scene_checks(file: FileDiff, path: str, dump: Mapping[str, Any]) -> list[ProposedCheck]:
    out: list[ProposedCheck] = []
    scene: Mapping[str, Any] = dump.get("scene") or {}
    render = _changes(file, "render_changed")
    if render:
        params: dict[str, Any] = {}
        for change in render:
            key = change.subject
            if key in ("fps", "fps_base"):
                base = scene.get("fps_base") or 1.0
                params["fps"] = round(float(scene.get("fps") or 0) / float(base), 3)
            elif key == "filepath":
                params["output_path"] = _output_path(str(scene.get("filepath") or ""), file.path)
            elif key in RENDER_PARAMS and scene.get(key) is not None:
                params[key] = scene[key]
        if params:
            why = "; ".join(c.words() for c in render)
            out.append(_make("blender_render", f"{path}: {why}", path, **params))
    world = _changes(file, "world_changed")
    if world:
        params = {c.subject: _r(c.after) for c in world if c.after is not None}
        if params:
            params["tolerance"] = COLOR_TOLERANCE
            why = "; ".join(c.words() for c in world)
            out.append(_make("blender_world", f"{path}: {why}", path, **params))
    return out


def _output_path(filepath: str, blend: str) -> str:
    """A render output path as `blender_render` takes it: Blender's '//' (beside the
    .blend) made '~/' relative, since the dump was made of a copy elsewhere."""
    if filepath.startswith("//"):
        folder = posixpath.dirname(blend)
        return "~/" + posixpath.join(folder, filepath[2:]) if folder else "~/" + filepath[2:]
    return filepath


# --- Kdenlive ----------------------------------------------------------------------------------


def _glob_literal(text: str) -> str:
    """`text` as an fnmatch pattern that matches only itself."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


def _first_value(value: str) -> float | None:
    """The one number of a parameter that is a plain number or a single keyframe."""
    parts = value.split(";")
    if len(parts) != 1:
        return None
    text = parts[0].rsplit("=", 1)[-1].split()[0] if parts[0].strip() else ""
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _kdenlive_checks(file: FileDiff, facts: Mapping[str, Any]) -> list[ProposedCheck]:
    path = file.guest_path
    fps = float(facts.get("fps") or 25.0)
    tolerance = max(1, round(fps * TIMELINE_SECONDS_TOLERANCE))
    tracks = {t["label"]: t for t in facts.get("tracks", [])}
    out: list[ProposedCheck] = []
    for change in _changes(file, "profile_changed"):
        out.append(
            _make(
                "kdenlive_profile",
                f"{path}: {change.words()}",
                path,
                width=facts["width"],
                height=facts["height"],
                fps=round(fps, 3),
            )
        )
    for change in _changes(file, "tracks_changed"):
        video, audio = change.after
        out.append(
            _make("kdenlive_tracks", f"{path}: {change.words()}", path, video=video, audio=audio)
        )
    for change in _changes(file, "track_changed"):
        label, key = change.key
        out.append(
            _make(
                "kdenlive_track",
                f"{path}: {change.words()}",
                path,
                track=label,
                **{key: tracks[label][key]},
            )
        )
    for change in _changes(file, "clips_changed"):
        clips = tracks[change.subject]["clips"]
        if not clips:
            continue  # an emptied track: kdenlive_clips needs at least one clip
        specs = [_clip_spec(c) for c in clips]
        out.append(
            _make(
                "kdenlive_clips",
                f"{path}: {change.words()}",
                path,
                track=change.subject,
                clips=specs,
                tolerance=tolerance,
            )
        )
    effects = {(*where, str(e.get("id"))): e for where, e in effect_places(facts)}
    for change in _changes(file, "effect_added", "effect_changed"):
        if len(change.key) != 4 or change.key not in effects:
            continue
        target, track, clip, effect_id = change.key
        effect = effects[(target, track, clip, effect_id)]
        params: dict[str, Any] = {"effect": effect_id, "target": target}
        if track:
            params["track"] = track
        if clip:
            params["clip"] = _glob_literal(clip)
        wanted = EFFECT_PARAMS.get(effect_id, EFFECT_PARAMS.get(str(effect.get("service")), ()))
        values = {
            k: _first_value(str(v)) for k, v in (effect.get("params") or {}).items() if k in wanted
        }
        values = {k: v for k, v in values.items() if v is not None}
        if values:
            params["params"] = values
        if effect.get("disabled"):
            params["enabled"] = False
        out.append(_make("kdenlive_effect", f"{path}: {change.words()}", path, **params))
    compositions = {
        (c.get("id"), c.get("a_track"), c.get("b_track")): c for c in facts.get("compositions", [])
    }
    for change in _changes(file, "composition_added"):
        for (comp_id, a_track, b_track), comp in compositions.items():
            if change.subject == f"{comp_id} {a_track}→{b_track}":
                out.append(
                    _make(
                        "kdenlive_composition",
                        f"{path}: {change.words()}",
                        path,
                        composition=comp_id,
                        a_track=a_track,
                        b_track=b_track,
                        start=comp["start"],
                        end=comp["end"],
                        tolerance=tolerance,
                    )
                )
    for change in _changes(file, "guides_changed"):
        guides = [
            {"position": g["position"], **({"comment": g["comment"]} if g.get("comment") else {})}
            for g in facts.get("guides", [])
        ]
        if guides:
            out.append(
                _make(
                    "kdenlive_guides",
                    f"{path}: {change.words()}",
                    path,
                    guides=guides,
                    tolerance=tolerance,
                )
            )
    for change in _changes(file, "length_changed"):
        if facts.get("length"):
            out.append(
                _make(
                    "kdenlive_length",
                    f"{path}: {change.words()} ({facts['length'] / fps:.2f} s)",
                    path,
                    frames=facts["length"],
                    tolerance=tolerance,
                )
            )
    return out


def _clip_spec(clip: Mapping[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if clip.get("source") and clip.get("kind") not in ("color",):
        spec["source"] = _glob_literal(str(clip["source"]))
    else:
        spec["kind"] = clip.get("kind")
    if clip.get("kind") == "title" and str(clip.get("text") or "").strip():
        spec["text"] = str(clip["text"]).strip()
    spec.update(position=clip["position"], length=clip["length"])
    if clip.get("in"):
        spec["in"] = clip["in"]
    if isinstance(clip.get("speed"), int | float) and abs(clip["speed"] - 1.0) > 1e-3:
        spec["speed"] = float(clip["speed"])
    return spec


# --- renders -------------------------------------------------------------------------------------


def _media_checks(file: FileDiff, facts: Mapping[str, Any]) -> list[ProposedCheck]:
    path = file.guest_path
    info = media_summary(facts)
    params: dict[str, Any] = {"video": info["video"], "audio": info["audio"]}
    if info["duration"]:
        params.update(
            duration=round(info["duration"], 3),
            duration_tolerance=round(max(0.1, DURATION_SHARE * info["duration"]), 3),
        )
    for key in ("width", "height", "video_codec", "audio_codec"):
        if info[key] is not None:
            params[key] = info[key]
    if info["fps"]:
        params["fps"] = round(info["fps"], 3)
    moved = _changes(file, "media_changed")
    why = (
        "; ".join(c.words() for c in moved)
        if moved
        else (
            f"rendered {info['width']}×{info['height']} {info['video_codec']}, {info['duration']} s"
            if info["video"]
            else f"rendered audio {info['audio_codec']}, {info['duration']} s"
        )
    )
    return [_make("media_info", f"{path}: {why}", path, **params)]
