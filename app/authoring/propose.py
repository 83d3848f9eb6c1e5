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

import io
import itertools
import math
import posixpath
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from app.authoring.diff import (
    FileDiff,
    StateDiff,
    diff_states,
)
from app.authoring.propose_blender import blend_checks
from app.authoring.propose_media import kdenlive_checks, media_checks
from app.authoring.proposed import (
    EXPECTED_DIR,
    LAYER_TOLERANCE,
    LOSSY_FLOOR_QUALITY,
    LOSSY_FORMATS,
    LOSSY_MARGIN,
    MEASURE_BANDS,
    SIMILARITY_THRESHOLD,
    ProposedCheck,
    changes_of,
    check_entry,
    make_check,
    rounded,
    weighted,
)
from app.authoring.state import blob_path, load_snapshot, snapshot_labels
from app.checks.imaging import on_white, ssim

# Re-exported: callers build and edit proposals through this module.
__all__ = [
    "ProposedCheck",
    "check_entry",
    "copy_assets",
    "evaluate_tree",
    "propose_checks",
    "propose_recording",
    "subgoal_diffs",
]


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
    cut_at: str | None = None
    """The last boundary, when the recording was cut off before its end (a crash):
    its snapshot stands for the end, and what came after it is lost."""


def propose_recording(folder: Path, expected_dir: str = "") -> Proposals:
    """Proposals from the snapshots of recording `folder` (start, boundary-N, end),
    analysed beforehand (`app.authoring.analysis.analyse_snapshot`). Pure: reads only
    the snapshots. Expected images are named under `expected_dir` in the task (default
    ``assets/expected``; a drafted task uses its own ``assets/ID/expected``), a
    boundary's under ``EXPECTED_DIR/<label>``.

    A recording cut off before its end (no end snapshot: the recorder died) proposes
    from its last boundary: that snapshot stands for the end (`Proposals.cut_at`),
    so what was done up to the crash is kept.

    Raises:
        RecordingError: no start snapshot (or neither an end nor a boundary), or one
            that cannot be read.
    """
    labels = snapshot_labels(folder)
    cut_at = _cut_at(labels)
    snapshots = [load_snapshot(folder, label) for label in labels]
    start = load_snapshot(folder, "start")
    end = load_snapshot(folder, cut_at or "end")
    final_diff = diff_states(start, end)
    phase_diffs = [diff_states(a, b) for a, b in itertools.pairwise(snapshots)]
    root = expected_dir or EXPECTED_DIR
    return Proposals(
        final=propose_checks(final_diff, folder, root),
        phases=[propose_checks(d, folder, f"{root}/{d.after}") for d in phase_diffs],
        diffs=[final_diff, *phase_diffs],
        cut_at=cut_at,
    )


def _cut_at(labels: list[str]) -> str | None:
    """The last boundary of a recording that has no end snapshot, else None."""
    if "end" in labels:
        return None
    boundaries = [label for label in labels if label.startswith("boundary-")]
    return boundaries[-1] if boundaries else None


def subgoal_diffs(folder: Path) -> list[StateDiff]:
    """What each sub-goal changed: start → boundary-1, ..., boundary-N → end (empty
    when the recording has no snapshots). Pure: reads only the snapshots."""
    labels = snapshot_labels(folder)
    if "start" not in labels or ("end" not in labels and _cut_at(labels) is None):
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
            proposals.extend(blend_checks(file, facts))
        elif file.kind == "kdenlive":
            proposals.extend(kdenlive_checks(file, facts))
        elif file.kind == "media":
            proposals.extend(media_checks(file, facts))
    return proposals


def evaluate_tree(accepted: Iterable[ProposedCheck]) -> dict[str, Any]:
    """An evaluate tree (or a phase's checks) of the accepted proposals: all must pass,
    the deciding ones weighing most of the partial credit (`weighted`)."""
    return {"all": weighted([dict(p.entry) for p in accepted])}


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


def _file_checks(file: FileDiff) -> list[ProposedCheck]:
    path = file.guest_path
    if file.status == "created":
        size = file.after.size if file.after else 0
        return [make_check("file_exists", f"created {path} ({size} bytes)", path)]
    if file.status == "deleted":
        return [make_check("file_not_exists", f"deleted {path}", path)]
    old = file.before.size if file.before else "?"
    sizes = f"{old} → {file.after.size if file.after else '?'} bytes"
    return [make_check("file_modified_after_start", f"changed {path} ({sizes})", path)]


# --- images and GIMP -----------------------------------------------------------------------


def _image_checks(
    file: FileDiff, facts: Mapping[str, Any], folder: Path, under: str
) -> list[ProposedCheck]:
    path = file.guest_path
    size = f"{facts['width']}×{facts['height']}"
    resized = changes_of(file, "image_resized")
    was = f"{resized[0].before} → " if resized else ""
    out = [
        make_check(
            "image_size",
            f"{path} is {was}{size}",
            path,
            width=facts["width"],
            height=facts["height"],
        ),
        make_check(
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
            threshold, why = similarity_threshold(source, str(facts.get("format") or ""))
            out.append(
                make_check(
                    "image_similarity",
                    f"{path} looks like the produced image (copied to {reference}); {why}",
                    path,
                    {reference: source},
                    reference=reference,
                    threshold=threshold,
                )
            )
    moved = changes_of(file, "image_colors")
    if moved:
        measures = facts.get("measures") or {}
        bounds = {
            c.subject: [
                rounded(measures[c.subject] - MEASURE_BANDS[c.subject], 3),
                rounded(measures[c.subject] + MEASURE_BANDS[c.subject], 3),
            ]
            for c in moved
            if isinstance(measures.get(c.subject), int | float)
        }
        why = "; ".join(f"{c.subject} {c.before} → {c.after}" for c in moved)
        out.append(make_check("image_color_stats", f"{path}: {why}", path, None, **bounds))
    return out


def similarity_threshold(source: Path, image_format: str) -> tuple[float, str]:
    """The SSIM an agent's output must reach against the produced image `source`, and
    one line saying why.

    A lossless format keeps SIMILARITY_THRESHOLD: the same work gives 1.0. A lossy one
    (JPEG, WebP) is compared through its encoder: the agent's export is decoded from
    its own lossy file, at whatever quality its app chose, so the threshold is what
    this very picture keeps when saved again at quality LOSSY_FLOOR_QUALITY, less a
    margin. GIMP's exports at quality 85 and 75 failed the fixed 0.97, while a wrong
    picture stays far below.
    """
    if image_format.upper() not in LOSSY_FORMATS:
        return SIMILARITY_THRESHOLD, (
            f"SSIM ≥ {SIMILARITY_THRESHOLD}: a lossless file of the same work gives 1.0"
        )
    with Image.open(source) as image:
        work = on_white(image)
    longest = max(work.size)
    if longest > 2048:  # as the check compares: both sides shrunk alike
        scale = 2048 / longest
        work = work.resize((max(1, round(work.width * scale)), max(1, round(work.height * scale))))
    encoded = io.BytesIO()
    work.save(encoded, image_format.upper(), quality=LOSSY_FLOOR_QUALITY)
    encoded.seek(0)
    with Image.open(encoded) as again:
        saved_again = again.convert("RGB")
    window = min(7, work.width, work.height)
    window -= 1 - window % 2
    kept = ssim(np.asarray(saved_again), np.asarray(work), max(3, window))
    threshold = min(SIMILARITY_THRESHOLD, math.floor((kept - LOSSY_MARGIN) * 100) / 100)
    return threshold, (
        f"SSIM ≥ {threshold}: this {image_format.upper()} saved again at quality "
        f"{LOSSY_FLOOR_QUALITY} keeps {kept:.3f}"
    )


def _xcf_checks(file: FileDiff, facts: Mapping[str, Any]) -> list[ProposedCheck]:
    path = file.guest_path
    layers = facts.get("layers") or []
    names = [str(layer["name"]) for layer in layers]
    out: list[ProposedCheck] = []
    structural = changes_of(
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
        out.append(make_check("xcf_layers", f"{path}: {why}", path, **params))
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
        out.append(make_check("xcf_layer", f"{path}: {change.words()}", path, **params))
    return out
