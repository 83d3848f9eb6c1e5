"""The difference between two analysed snapshots: files and, per kind, their facts.

`diff_states(before, after)` is pure (no desktop, no file reads): it compares the
snapshots' file lists by hash and, for files of a known kind, the facts analysis read
(`app.authoring.analysis`), into typed changes a researcher can read and proposals can
be made from: a cube moved from (0, 0, 0) to (2, 0, 0), a Subdivision modifier added,
a clip added on V1 at frame 50, a layer renamed, an image scaled from 800×600 to 400×300.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from app.authoring.analysis import FileKind, file_kind
from app.authoring.changes import Change, by_name, changed_keys, differs
from app.authoring.diff_blender import blend_changes, principled_values
from app.authoring.diff_kdenlive import clip_words, effect_places, kdenlive_changes
from app.authoring.state import FileEntry, StateSnapshot

FileStatus = Literal["created", "changed", "deleted"]

# Re-exported: proposals and the UI read changes and app facts through this module.
__all__ = [
    "Change",
    "FileDiff",
    "StateDiff",
    "clip_words",
    "diff_states",
    "differs",
    "effect_places",
    "fact_changes",
    "media_summary",
    "principled_values",
]


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
    old_layers, new_layers = by_name(old.get("layers", [])), by_name(new.get("layers", []))
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
            moved = changed_keys(old_layers[name], layer, LAYER_KEYS)
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
    return [Change("media_changed", k, x, y) for k, (x, y) in changed_keys(a, b, a).items()]


_DIFFERS: dict[FileKind, Callable[[Mapping[str, Any], Mapping[str, Any]], list[Change]]] = {
    "blend": blend_changes,
    "kdenlive": kdenlive_changes,
    "xcf": _xcf,
    "image": _image,
    "media": _media,
}
