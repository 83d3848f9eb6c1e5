"""What a snapshot's files hold, read with the same readers the checks use.

Each file of a known kind gets its facts, plain JSON kept in the snapshot
(`StateSnapshot.facts`), so that diffing and proposing later is pure and fast:

- image (.png, .jpg, ...): Pillow via app.checks.imaging: width, height, mode, format,
  the colour measures and the transparent share;
- xcf: app.checks.xcf: the canvas size and every layer (name, offsets, size,
  visibility, opacity, mode, text);
- kdenlive: app.checks.mlt: the profile, the tracks with their clips and effects, the
  compositions, the guides and the length;
- blend: the `blender_scene` probe (Blender in the guest): the scene dump the Blender
  checks read;
- media (.mp4, .wav, ...): the `ffprobe` probe (in the guest): ffprobe's JSON, as
  `media_info` reads it.

Images, XCF and Kdenlive projects are read from the snapshot's copies on this machine.
A .blend or a render needs a program in the guest: its copy is written to a hidden
folder in a guest that has the app (the recording desktop right after the recording,
or a fresh desktop of the same app), probed there and removed, so the facts are those
of the bytes the snapshot kept even when the file has changed since. These dumps are
the slow part (about 1-2 s per .blend); a file whose bytes an earlier snapshot already
analysed is not analysed again.
"""

from __future__ import annotations

import contextlib
import posixpath
import secrets
from pathlib import Path
from typing import Any, Literal

import numpy as np

from app.authoring.state import FileEntry, StateSnapshot, read_blob, save_snapshot
from app.checks.base import CheckResult, Probe
from app.checks.imaging import alpha, color_measures, decode_image, on_white
from app.checks.kdenlive_bin import read_bin
from app.checks.mlt import Clip, Effect, Project, ProjectError, parse_project
from app.checks.xcf import LEGACY_MODES, MODES, XcfError, parse_xcf
from app.core.errors import GuestError
from app.desktops.base import Guest
from app.probes import gather_probe

FileKind = Literal["image", "xcf", "kdenlive", "blend", "media"]

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".webp", ".bmp", ".tif", ".tiff", ".gif"})
MEDIA_SUFFIXES = frozenset(
    {
        ".mp4",
        ".mkv",
        ".webm",
        ".mov",
        ".avi",
        ".ogv",
        ".mpg",
        ".mpeg",
        ".mp3",
        ".wav",
        ".ogg",
        ".oga",
        ".flac",
        ".m4a",
        ".aac",
        ".opus",
    }
)
GUEST_KINDS: frozenset[FileKind] = frozenset({"blend", "media"})
"""Kinds whose facts need a program in the guest (Blender, ffprobe)."""
_MEASURE_MAX_SIDE = 1024
"""Colour measures of larger images are taken on a copy scaled to this side: the
measures are means, which scaling barely moves, and a 4K PNG stays under 0.1 s."""


def file_kind(path: str) -> FileKind | None:
    """The kind of file `path` names, by its suffix; None for kinds with no facts."""
    suffix = posixpath.splitext(path)[1].lower()
    if suffix in IMAGE_SUFFIXES:
        return "image"
    if suffix == ".xcf":
        return "xcf"
    if suffix == ".kdenlive":
        return "kdenlive"
    if suffix == ".blend":
        return "blend"
    if suffix in MEDIA_SUFFIXES:
        return "media"
    return None


# --- facts read on this machine ------------------------------------------------------


def local_facts(kind: FileKind, data: bytes, name: str) -> dict[str, Any]:
    """The facts of an image, XCF or Kdenlive file's bytes; ``{"error": ...}`` when the
    bytes are not one (a half-written export, say)."""
    if kind == "image":
        return image_facts(data, name)
    if kind == "xcf":
        try:
            return xcf_facts(data)
        except XcfError as exc:
            return {"error": f"not a readable .xcf: {exc}"}
    if kind == "kdenlive":
        try:
            facts = kdenlive_facts(parse_project(data))
            # The bin: clips imported into the project, on the timeline or not.
            facts["bin"] = sorted(clip.name or clip.resource for clip in read_bin(data).clips)
        except ProjectError as exc:
            return {"error": f"not a readable Kdenlive project: {exc}"}
        return facts
    raise ValueError(f"{kind} facts are read in the guest, not from bytes")


def image_facts(data: bytes, name: str) -> dict[str, Any]:
    image = decode_image(data, name)
    if isinstance(image, CheckResult):
        return {"error": image.evidence}
    facts: dict[str, Any] = {
        "width": image.width,
        "height": image.height,
        "mode": image.mode,
        "format": image.format,
    }
    measured = image
    if max(image.size) > _MEASURE_MAX_SIDE:
        measured = image.copy()
        measured.thumbnail((_MEASURE_MAX_SIDE, _MEASURE_MAX_SIDE))
    facts["measures"] = {
        k: round(v, 4) for k, v in color_measures(np.asarray(on_white(measured))).items()
    }
    channel = alpha(measured)
    facts["transparent"] = None if channel is None else round(float((channel < 255).mean()), 4)
    return facts


def xcf_facts(data: bytes) -> dict[str, Any]:
    image = parse_xcf(data)
    return {
        "width": image.width,
        "height": image.height,
        "base_type": image.base_type,
        "layers": [
            {
                "name": layer.name,
                "x": layer.x,
                "y": layer.y,
                "width": layer.width,
                "height": layer.height,
                "visible": layer.visible,
                "opacity": round(layer.opacity, 3),
                # The name the xcf_layer check takes (legacy modes by their plain name).
                "mode": MODES.get(layer.mode) or LEGACY_MODES.get(layer.mode),
                "is_group": layer.is_group,
                "depth": layer.depth,
                "text": layer.text,
            }
            for layer in image.layers
        ],
    }


def _effect(effect: Effect) -> dict[str, Any]:
    return {
        "id": effect.name,
        "service": effect.service,
        "params": dict(effect.params),
        "disabled": effect.disabled,
        "start": effect.start,
        "end": effect.end,
    }


def _clip(clip: Clip) -> dict[str, Any]:
    return {
        "source": clip.source,
        "name": clip.name,
        "kind": clip.kind,
        "text": clip.text,
        "position": clip.position,
        "in": clip.in_point,
        "length": clip.length,
        "speed": clip.speed,
        "effects": [_effect(e) for e in clip.effects],
    }


def kdenlive_facts(project: Project) -> dict[str, Any]:
    return {
        "width": project.width,
        "height": project.height,
        "fps": project.fps,
        "length": project.length,
        "tracks": [
            {
                "label": t.label,
                "name": t.name,
                "kind": t.kind,
                "hidden": t.hidden,
                "muted": t.muted,
                "locked": t.locked,
                "clips": [_clip(c) for c in t.clips],
                "effects": [_effect(e) for e in t.effects],
            }
            for t in project.tracks
        ],
        "compositions": [
            {
                "id": c.name,
                "service": c.service,
                "a_track": c.a_track,
                "b_track": c.b_track,
                "start": c.start,
                "end": c.end,
            }
            for c in project.compositions
        ],
        "guides": [
            {"position": g.position, "comment": g.comment, "category": g.category}
            for g in project.guides
        ],
        "master_effects": [_effect(e) for e in project.master_effects],
    }


# --- facts made in the guest ------------------------------------------------------------


async def guest_facts(
    guest: Guest, kind: FileKind, entry: FileEntry, data: bytes
) -> dict[str, Any]:
    """The facts of a .blend or media file, made by probing a copy of `data` in `guest`
    (which needs Blender or ffprobe); the copy is removed afterwards."""
    probe_kind = {"blend": "blender_scene", "media": "ffprobe"}[kind]
    workdir = f"~/.cache/deskloop-state-{secrets.token_hex(6)}"
    copy = f"{workdir}/{posixpath.basename(entry.path)}"
    try:
        await guest.write_file(copy, data)
        result = await gather_probe(guest, Probe(probe_kind, copy))
    except GuestError as exc:
        return {"error": f"could not copy it into the guest to probe: {exc}"}
    finally:
        with contextlib.suppress(GuestError):
            await guest.run(["rm", "-rf", "--", workdir], timeout=30)
    if result.error is not None:
        return {"error": result.error}
    return {"probe": result.data}


# --- a whole snapshot -------------------------------------------------------------------


async def analyse_snapshot(
    folder: Path, snapshot: StateSnapshot, guest: Guest | None = None
) -> StateSnapshot:
    """Fill in the facts of every file of a known kind that has none yet, and save the
    snapshot again.

    Images, XCF files and Kdenlive projects are read from the copies in `folder`.
    Blender scenes and media need `guest` (a desktop with Blender / ffprobe); without
    one they are left without facts (`missing_guest_facts` lists them), so a later call
    with a guest finishes the job. Facts already present (carried over from an earlier
    snapshot of the same bytes) are kept.
    """
    for path, entry in sorted(snapshot.files.items()):
        kind = file_kind(path)
        if kind is None or path in snapshot.facts:
            continue
        if kind in GUEST_KINDS and guest is None:
            continue
        data = read_blob(folder, entry)
        if data is None:
            snapshot.facts[path] = {"kind": kind, "error": entry.note or "its bytes were not kept"}
            continue
        if kind in GUEST_KINDS:
            assert guest is not None
            facts = await guest_facts(guest, kind, entry, data)
        else:
            facts = local_facts(kind, data, entry.guest_path)
        snapshot.facts[path] = {"kind": kind, **facts}
    save_snapshot(folder, snapshot)
    return snapshot


def missing_guest_facts(snapshot: StateSnapshot) -> list[str]:
    """Paths whose facts need a guest with the app and have not been made yet."""
    return [
        path
        for path in sorted(snapshot.files)
        if file_kind(path) in GUEST_KINDS and path not in snapshot.facts
    ]
