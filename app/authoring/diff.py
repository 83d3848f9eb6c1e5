"""The difference between two analysed snapshots: files and, per kind, their facts.

`diff_states(before, after)` is pure (no desktop, no file reads): it compares the
snapshots' file lists by hash and, for files of a known kind, the facts analysis read
(`app.authoring.analysis`), into typed changes a researcher can read and proposals can
be made from: a cube moved from (0, 0, 0) to (2, 0, 0), a Subdivision modifier added,
a clip added on V1 at frame 50, a layer renamed, an image scaled from 800×600 to 400×300.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from app.authoring.analysis import FileKind, file_kind
from app.authoring.state import FileEntry, StateSnapshot

FileStatus = Literal["created", "changed", "deleted"]
EPSILON = 1e-4
"""Numbers closer than this are the same (dumps round to 6 decimals)."""


@dataclass(frozen=True)
class Change:
    """One fact that changed: `what` happened to `subject`, from `before` to `after`."""

    what: str
    """object_added, object_moved, modifier_added, material_changed, render_changed,
    clips_changed, effect_added, composition_added, guides_changed, layer_added,
    layer_changed, canvas_resized, image_resized, media_changed, ... (see docs/authoring.md)."""
    subject: str
    """What it happened to: an object, material, track, layer or setting name."""
    before: Any = None
    after: Any = None
    key: tuple[str, ...] = ()
    """Where it happened, for proposals: (object, modifier type, modifier name) for a
    modifier, (object, setting) for a light or camera, (target, track, clip, effect)
    for an effect, (track, property) for a track, (layer,) for a layer; else empty."""

    def words(self) -> str:
        text = f"{self.what.replace('_', ' ')} {self.subject}"
        if self.before is not None and self.after is not None:
            return f"{text}: {_short(self.before)} → {_short(self.after)}"
        if self.after is not None:
            return f"{text}: {_short(self.after)}"
        if self.before is not None:
            return f"{text} (was {_short(self.before)})"
        return text


@dataclass(frozen=True)
class FileDiff:
    """One file created, changed or deleted, with its fact-level changes."""

    path: str
    """Relative to the home: 'Desktop/out.png'."""
    status: FileStatus
    kind: FileKind | None
    before: FileEntry | None
    after: FileEntry | None
    before_facts: dict[str, Any] | None
    after_facts: dict[str, Any] | None
    changes: tuple[Change, ...] = ()

    @property
    def guest_path(self) -> str:
        return f"~/{self.path}"

    def words(self) -> str:
        head = f"{self.status} ~/{self.path}"
        return head + "".join(f"\n  {c.words()}" for c in self.changes)


@dataclass(frozen=True)
class StateDiff:
    """What changed in the home between two snapshots."""

    before: str
    """The earlier snapshot's label (start, boundary-1, ...)."""
    after: str
    files: tuple[FileDiff, ...] = field(default_factory=tuple)
    after_snapshot: StateSnapshot | None = None
    """The later snapshot itself (its blobs hold what was produced)."""

    def of(self, status: FileStatus) -> list[FileDiff]:
        return [f for f in self.files if f.status == status]

    @property
    def empty(self) -> bool:
        return not self.files

    def words(self) -> str:
        if not self.files:
            return f"{self.before} → {self.after}: nothing changed in the home"
        return f"{self.before} → {self.after}:\n" + "\n".join(f.words() for f in self.files)


def diff_states(before: StateSnapshot, after: StateSnapshot) -> StateDiff:
    """The files created, changed (other bytes) and deleted from `before` to `after`,
    each with the changes of its facts. A file rewritten with the same bytes is not a
    change. Pure and fast: it reads nothing but the two snapshots."""
    files: list[FileDiff] = []
    for path in sorted(set(before.files) | set(after.files)):
        old, new = before.files.get(path), after.files.get(path)
        if old is not None and new is not None:
            same = (
                old.sha256 == new.sha256
                if old.sha256 is not None and new.sha256 is not None
                else (old.size, old.mtime) == (new.size, new.mtime)
            )
            if same:
                continue
        status: FileStatus = "created" if old is None else "deleted" if new is None else "changed"
        old_facts = before.facts.get(path) if old is not None else None
        new_facts = after.facts.get(path) if new is not None else None
        kind = file_kind(path)
        changes: tuple[Change, ...] = ()
        if status != "deleted" and kind is not None:
            changes = tuple(fact_changes(kind, old_facts, new_facts))
        files.append(FileDiff(path, status, kind, old, new, old_facts, new_facts, changes))
    return StateDiff(before.label, after.label, tuple(files), after)


def fact_changes(
    kind: FileKind, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None
) -> list[Change]:
    """The changes between two facts of one kind; a file with no earlier facts (just
    created) is diffed against nothing, so everything in it reads as added."""
    if after is None or "error" in after:
        why = "no facts" if after is None else after["error"]
        return [Change("not_analysed", kind, after=why)]
    old: Mapping[str, Any] = before if before is not None and "error" not in before else {}
    return _DIFFERS[kind](old, after)


# --- shared ------------------------------------------------------------------------------


def _short(value: Any) -> str:
    if isinstance(value, list | tuple | dict) and not value:
        return "none"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list | tuple) and all(isinstance(v, int | float) for v in value):
        return "(" + ", ".join(_short(v) for v in value) + ")"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_short(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_short(v)}" for k, v in value.items()) + "}"
    return repr(value) if isinstance(value, str) else str(value)


def differs(a: Any, b: Any) -> bool:
    """Whether two JSON values differ, numbers by more than EPSILON."""
    if isinstance(a, bool) or isinstance(b, bool):
        return bool(a != b)
    if isinstance(a, int | float) and isinstance(b, int | float):
        return not math.isclose(float(a), float(b), abs_tol=EPSILON)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) != len(b) or any(differs(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() != b.keys() or any(differs(a[k], b[k]) for k in a)
    return bool(a != b)


def _by_name(items: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    return {str(item.get("name")): item for item in items if isinstance(item, Mapping)}


def _changed_keys(
    old: Mapping[str, Any], new: Mapping[str, Any], keys: Iterable[str]
) -> dict[str, tuple[Any, Any]]:
    return {k: (old.get(k), new.get(k)) for k in keys if differs(old.get(k), new.get(k))}


# --- Blender ------------------------------------------------------------------------------

RENDER_KEYS = (
    "engine",
    "resolution_x",
    "resolution_y",
    "resolution_percentage",
    "fps",
    "fps_base",
    "frame_start",
    "frame_end",
    "filepath",
    "file_format",
    "camera",
)
PRINCIPLED_KEYS = ("Base Color", "Metallic", "Roughness", "Emission", "Emission Strength", "Alpha")


def principled_values(material: Mapping[str, Any]) -> dict[str, Any]:
    """The Principled BSDF inputs a `blender_material` check takes, by socket name
    (inputs driven by a node link have no value of their own and are left out)."""
    inputs = material.get("principled")
    if not isinstance(inputs, Mapping):
        return {}
    return {
        k: inputs[k].get("value")
        for k in PRINCIPLED_KEYS
        if isinstance(inputs.get(k), Mapping) and not inputs[k].get("linked")
    }


def _blend(old_facts: Mapping[str, Any], new_facts: Mapping[str, Any]) -> list[Change]:
    old: Mapping[str, Any] = old_facts.get("probe") or {}
    new: Mapping[str, Any] = new_facts.get("probe") or {}
    changes: list[Change] = []
    old_objects, new_objects = _by_name(old.get("objects", [])), _by_name(new.get("objects", []))
    old_types = Counter(str(o.get("type")) for o in old_objects.values())
    new_types = Counter(str(o.get("type")) for o in new_objects.values())
    for kind in sorted(set(old_types) | set(new_types)):
        if old_types[kind] != new_types[kind]:
            changes.append(Change("object_count", kind, old_types[kind], new_types[kind]))
    for name, obj in new_objects.items():
        if name not in old_objects:
            changes.append(
                Change(
                    "object_added",
                    name,
                    after={"type": obj.get("type"), "location": obj.get("location")},
                )
            )
    for name in old_objects:
        if name not in new_objects:
            changes.append(Change("object_removed", name, before=old_objects[name].get("type")))
    for name, obj in new_objects.items():
        was = old_objects.get(name) if name in old_objects else {}
        changes.extend(_object_changes(name, was or {}, obj, added=name not in old_objects))
    old_mats, new_mats = _by_name(old.get("materials", [])), _by_name(new.get("materials", []))
    for name, mat in new_mats.items():
        if name not in old_mats:
            changes.append(Change("material_added", name, after=principled_values(mat)))
        else:
            moved = _changed_keys(
                principled_values(old_mats[name]), principled_values(mat), PRINCIPLED_KEYS
            )
            if moved:
                changes.append(
                    Change(
                        "material_changed",
                        name,
                        {k: a for k, (a, _) in moved.items()},
                        {k: b for k, (_, b) in moved.items()},
                    )
                )
    for name in old_mats:
        if name not in new_mats:
            changes.append(Change("material_removed", name))
    old_scene, new_scene = old.get("scene") or {}, new.get("scene") or {}
    for key, (a, b) in _changed_keys(old_scene, new_scene, RENDER_KEYS).items():
        changes.append(Change("render_changed", key, a, b))
    old_world, new_world = _world(old.get("world")), _world(new.get("world"))
    for key, (a, b) in _changed_keys(old_world, new_world, ("color", "strength")).items():
        changes.append(Change("world_changed", key, a, b))
    return changes


def _world(world: Any) -> dict[str, Any]:
    """The world's colour and strength as `blender_world` judges them."""
    if not isinstance(world, Mapping):
        return {}
    background = world.get("background") if world.get("use_nodes") else None
    if isinstance(background, Mapping):
        color = background.get("color")
        return {
            "color": None if background.get("color_linked") or color is None else color[:3],
            "strength": background.get("strength"),
        }
    color = world.get("color")
    return {"color": color[:3] if isinstance(color, list) else None}


def _shading(obj: Mapping[str, Any]) -> str | None:
    """A mesh's shading: 'smooth' (every face), 'flat' (none), 'mixed'; None when it
    is not a mesh or has no faces."""
    mesh = obj.get("mesh")
    if not isinstance(mesh, Mapping) or not mesh.get("polygons"):
        return None
    smooth = mesh.get("smooth_polygons", 0)
    return "flat" if smooth == 0 else "smooth" if smooth == mesh["polygons"] else "mixed"


def _object_changes(
    name: str, old: Mapping[str, Any], new: Mapping[str, Any], added: bool
) -> list[Change]:
    changes: list[Change] = []
    if not added:
        for key, what in (
            ("location", "object_moved"),
            ("rotation_euler", "object_rotated"),
            ("scale", "object_scaled"),
            ("materials", "object_materials"),
            ("parent", "object_parent"),
            ("hide_render", "object_hide_render"),
        ):
            if differs(old.get(key), new.get(key)):
                changes.append(Change(what, name, old.get(key), new.get(key)))
        # Shading lives in the mesh's faces: what `blender_object`'s `smooth` judges.
        was_shaded, shaded = _shading(old), _shading(new)
        if was_shaded != shaded and shaded in ("smooth", "flat"):
            changes.append(Change("object_shading", name, was_shaded, shaded))
    old_mods = {(m.get("name"), m.get("type")): m for m in old.get("modifiers", [])}
    new_mods = {(m.get("name"), m.get("type")): m for m in new.get("modifiers", [])}
    for (mod_name, mod_type), mod in new_mods.items():
        subject = f"{mod_type} {mod_name!r} on {name}"
        was = old_mods.get((mod_name, mod_type))
        if was is None:
            changes.append(
                Change("modifier_added", subject, after=mod_type, key=(name, mod_type, mod_name))
            )
        else:
            moved = _changed_keys(was, mod, sorted(set(was) | set(mod)))
            if moved:
                changes.append(
                    Change(
                        "modifier_changed",
                        subject,
                        {k: a for k, (a, _) in moved.items()},
                        {k: b for k, (_, b) in moved.items()},
                        key=(name, str(mod_type), str(mod_name)),
                    )
                )
    for mod_name, mod_type in old_mods:
        if (mod_name, mod_type) not in new_mods:
            changes.append(
                Change(
                    "modifier_removed",
                    f"{mod_type} {mod_name!r} on {name}",
                    key=(name, str(mod_type), str(mod_name)),
                )
            )
    for section, what, keys in (
        ("light", "light_changed", ("type", "energy", "color")),
        ("camera", "camera_changed", ("type", "lens")),
    ):
        if section in new:
            moved = _changed_keys(old.get(section) or {}, new[section], keys)
            for key, (a, b) in moved.items():
                changes.append(Change(what, f"{name} {key}", a, b, key=(name, key)))
    if differs(old.get("fcurves") or [], new.get("fcurves") or []):
        paths = sorted({f"{c.get('data_path')}[{c.get('index')}]" for c in new.get("fcurves", [])})
        changes.append(Change("keyframes_changed", name, after=paths or None))
    return changes


# --- Kdenlive -----------------------------------------------------------------------------


def clip_words(clip: Mapping[str, Any]) -> str:
    label = clip.get("name") or clip.get("source") or clip.get("kind")
    return f"{label} @{clip.get('position')} len {clip.get('length')}"


def effect_places(facts: Mapping[str, Any]) -> list[tuple[tuple[str, str, str], Mapping[str, Any]]]:
    """Every effect of a project with where it sits: ((target, track, clip), effect)."""
    found: list[tuple[tuple[str, str, str], Mapping[str, Any]]] = []
    for track in facts.get("tracks", []):
        for clip in track.get("clips", []):
            clip_name = str(clip.get("source") or clip.get("name") or "")
            for effect in clip.get("effects", []):
                found.append((("clip", track["label"], clip_name), effect))
        for effect in track.get("effects", []):
            found.append((("track", track["label"], ""), effect))
    for effect in facts.get("master_effects", []):
        found.append((("master", "", ""), effect))
    return found


def _kdenlive(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    changes: list[Change] = []
    profile_keys = ("width", "height", "fps")
    if old and differs([old.get(k) for k in profile_keys], [new.get(k) for k in profile_keys]):
        changes.append(
            Change(
                "profile_changed",
                "profile",
                [old.get(k) for k in profile_keys],
                [new.get(k) for k in profile_keys],
            )
        )

    def counts(facts: Mapping[str, Any]) -> tuple[int, int]:
        kinds = [t.get("kind") for t in facts.get("tracks", [])]
        return kinds.count("video"), kinds.count("audio")

    if counts(old) != counts(new):
        changes.append(Change("tracks_changed", "tracks (video, audio)", counts(old), counts(new)))
    old_tracks = {t["label"]: t for t in old.get("tracks", [])}
    for track in new.get("tracks", []):
        label = track["label"]
        was = old_tracks.get(label, {})
        for key, (a, b) in _changed_keys(was, track, ("name", "hidden", "muted", "locked")).items():
            if was:
                changes.append(Change("track_changed", f"{label} {key}", a, b, key=(label, key)))

        def shape(clips: list[Any]) -> list[Any]:
            return [
                [
                    c.get("source"),
                    c.get("name"),
                    c.get("kind"),
                    c.get("position"),
                    c.get("in"),
                    c.get("length"),
                    c.get("speed"),
                ]
                for c in clips
            ]

        if differs(shape(was.get("clips", [])), shape(track.get("clips", []))):
            changes.append(
                Change(
                    "clips_changed",
                    label,
                    [clip_words(c) for c in was.get("clips", [])],
                    [clip_words(c) for c in track.get("clips", [])],
                )
            )
    old_effects = Counter((where, e.get("id")) for where, e in effect_places(old))
    new_effects = Counter((where, e.get("id")) for where, e in effect_places(new))
    for (where, effect_id), n in new_effects.items():
        if n > old_effects[(where, effect_id)]:
            changes.append(
                Change("effect_added", _where(where), after=effect_id, key=(*where, str(effect_id)))
            )
    for (where, effect_id), n in old_effects.items():
        if n > new_effects[(where, effect_id)]:
            changes.append(Change("effect_removed", _where(where), before=effect_id))
    old_params = {(w, e.get("id")): e.get("params") for w, e in effect_places(old)}
    for where, effect in effect_places(new):
        placed = (where, effect.get("id"))
        if placed in old_params and old_effects[placed] == new_effects[placed] == 1:
            was = old_params[placed] or {}
            moved = _changed_keys(
                was,
                effect.get("params") or {},
                sorted(set(was) | set(effect.get("params") or {})),
            )
            if moved:
                changes.append(
                    Change(
                        "effect_changed",
                        f"{effect.get('id')} {_where(where)}",
                        {k: a for k, (a, _) in moved.items()},
                        {k: b for k, (_, b) in moved.items()},
                        key=(*where, str(effect.get("id"))),
                    )
                )

    def composition_key(c: Mapping[str, Any]) -> tuple[Any, ...]:
        return (c.get("id"), c.get("a_track"), c.get("b_track"), c.get("start"), c.get("end"))

    old_comps = Counter(composition_key(c) for c in old.get("compositions", []))
    new_comps = Counter(composition_key(c) for c in new.get("compositions", []))
    for comp in new_comps - old_comps:
        changes.append(
            Change(
                "composition_added",
                f"{comp[0]} {comp[1]}→{comp[2]}",
                after=f"frames {comp[3]}-{comp[4]}",
            )
        )
    for comp in old_comps - new_comps:
        changes.append(
            Change(
                "composition_removed",
                f"{comp[0]} {comp[1]}→{comp[2]}",
                before=f"frames {comp[3]}-{comp[4]}",
            )
        )

    def guides(facts: Mapping[str, Any]) -> list[str]:
        return [f"{g.get('position')} {g.get('comment')!r}" for g in facts.get("guides", [])]

    if guides(old) != guides(new):
        changes.append(Change("guides_changed", "guides", guides(old), guides(new)))
    if old.get("length") != new.get("length"):
        changes.append(
            Change("length_changed", "timeline frames", old.get("length"), new.get("length"))
        )
    return changes


def _where(where: tuple[str, str, str]) -> str:
    target, track, clip = where
    if target == "clip":
        return f"on clip {clip or '?'} ({track})"
    return f"on track {track}" if target == "track" else "on the master"


# --- GIMP, images, media ------------------------------------------------------------------

LAYER_KEYS = ("x", "y", "width", "height", "visible", "opacity", "mode", "text", "is_group")


def _xcf(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    changes: list[Change] = []
    if old and (old.get("width"), old.get("height")) != (new.get("width"), new.get("height")):
        changes.append(
            Change(
                "canvas_resized",
                "canvas",
                f"{old['width']}×{old['height']}",
                f"{new['width']}×{new['height']}",
            )
        )
    old_layers, new_layers = _by_name(old.get("layers", [])), _by_name(new.get("layers", []))
    added = [n for n in new_layers if n not in old_layers]
    removed = [n for n in old_layers if n not in new_layers]
    # A layer that left and one that arrived in the same place with the same size and
    # pixels' frame is one layer renamed (GIMP's Layers dialog, double click).
    for gone in list(removed):
        same = [
            n
            for n in added
            if all(
                not differs(old_layers[gone].get(k), new_layers[n].get(k))
                for k in ("x", "y", "width", "height", "is_group")
            )
        ]
        if len(same) == 1:
            changes.append(Change("layer_renamed", repr(gone), gone, same[0], key=(same[0],)))
            removed.remove(gone)
            added.remove(same[0])
    changes.extend(
        Change("layer_added", repr(n), after=_layer_words(new_layers[n]), key=(n,)) for n in added
    )
    changes.extend(Change("layer_removed", repr(n)) for n in removed)
    for name, layer in new_layers.items():
        if name in old_layers:
            moved = _changed_keys(old_layers[name], layer, LAYER_KEYS)
            if moved:
                changes.append(
                    Change(
                        "layer_changed",
                        repr(name),
                        {k: a for k, (a, _) in moved.items()},
                        {k: b for k, (_, b) in moved.items()},
                        key=(name,),
                    )
                )
    common_old = [n for n in old_layers if n in new_layers]
    common_new = [n for n in new_layers if n in old_layers]
    if common_old != common_new:
        changes.append(Change("layers_reordered", "layers (top to bottom)", common_old, common_new))
    return changes


def _layer_words(layer: Mapping[str, Any]) -> str:
    return f"{layer.get('width')}×{layer.get('height')} at {layer.get('x')},{layer.get('y')}"


MEASURE_STEPS = {"brightness": 4.0, "contrast": 4.0, "saturation": 0.03, "warmth": 0.02}
"""Smallest change of a colour measure worth telling (smaller ones are re-encoding)."""


def _image(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    changes: list[Change] = []
    if not old:
        return changes
    if (old.get("width"), old.get("height")) != (new.get("width"), new.get("height")):
        changes.append(
            Change(
                "image_resized",
                "size",
                f"{old['width']}×{old['height']}",
                f"{new['width']}×{new['height']}",
            )
        )
    for key in ("mode", "format"):
        if old.get(key) != new.get(key):
            changes.append(Change(f"image_{key}", key, old.get(key), new.get(key)))
    old_m, new_m = old.get("measures") or {}, new.get("measures") or {}
    for measure, step in MEASURE_STEPS.items():
        a, b = old_m.get(measure), new_m.get(measure)
        if isinstance(a, int | float) and isinstance(b, int | float) and abs(b - a) >= step:
            changes.append(Change("image_colors", measure, round(a, 3), round(b, 3)))
    return changes


def media_summary(facts: Mapping[str, Any]) -> dict[str, Any]:
    """What `media_info` judges, from ffprobe's JSON: duration, size, rate, codecs."""
    probe = facts.get("probe") or {}
    streams = [s for s in probe.get("streams", []) if isinstance(s, Mapping)]
    video = next((s for s in streams if s.get("codec_type") == "video"), None)
    audio = next((s for s in streams if s.get("codec_type") == "audio"), None)
    duration: float | None = None
    try:
        duration = float((probe.get("format") or {}).get("duration"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        duration = None
    fps: float | None = None
    if video is not None:
        num, _, den = str(video.get("avg_frame_rate") or "").partition("/")
        try:
            fps = float(num) / float(den or 1)
        except (ValueError, ZeroDivisionError):  # '0/0' or missing: no rate
            fps = None
    return {
        "duration": duration,
        "width": video.get("width") if video else None,
        "height": video.get("height") if video else None,
        "fps": fps,
        "video_codec": video.get("codec_name") if video else None,
        "audio_codec": audio.get("codec_name") if audio else None,
        "video": video is not None,
        "audio": audio is not None,
    }


def _media(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    if not old:
        return []
    a, b = media_summary(old), media_summary(new)
    return [Change("media_changed", k, x, y) for k, (x, y) in _changed_keys(a, b, a).items()]


_DIFFERS: dict[FileKind, Callable[[Mapping[str, Any], Mapping[str, Any]], list[Change]]] = {
    "blend": _blend,
    "kdenlive": _kdenlive,
    "xcf": _xcf,
    "image": _image,
    "media": _media,
}
