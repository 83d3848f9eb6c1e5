"""A proposed check, and the thresholds proposals use (docs/authoring.md lists them).

Shared by `app.authoring.propose` (files, images, GIMP) and the per-app proposers
(`propose_blender`, `propose_media`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from app.authoring.diff import Change, FileDiff
from app.checks.registry import get_check
from app.core.errors import TaskError
from app.core.validation import validation_problems

SIMILARITY_THRESHOLD = 0.97
"""SSIM of a replay's image against the produced one: identical work gives 1.0, and a
re-encoded JPEG or a slightly different crop still passes."""
LOSSY_FORMATS = frozenset({"JPEG", "WEBP"})
"""Formats whose pixels depend on the encoder's quality setting."""
LOSSY_FLOOR_QUALITY = 70
"""The lowest export quality a lossy output's similarity threshold still accepts (GIMP
exports JPEG at 90 by default, people often choose 75 or 85)."""
LOSSY_MARGIN = 0.02
"""Taken off what a re-save at LOSSY_FLOOR_QUALITY keeps, for a second encoder's noise."""
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


GATE_CHECKS = frozenset(
    {"file_exists", "file_not_exists", "file_modified_after_start", "image_size", "image_mode"}
)
"""Checks that a file is there and of the right kind: they let the deciding checks run,
but say nothing of whether the work was done (a wrong flip passes them all)."""
WHOLE_IMAGE_CHECK = "image_similarity"
"""Compares the whole output with the produced one: where it is proposed for a file,
that file's other checks (colour measures, which a wrong flip keeps) only support it."""
GATE_SHARE = 0.2
"""The most of a task's partial credit its gate and supporting checks together give."""


def weighted(checks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`checks` (the leaves of one `all` group) with weights that let the deciding
    checks decide: the gate checks (GATE_CHECKS), and a file's other checks where its
    whole image is compared (WHOLE_IMAGE_CHECK), share GATE_SHARE of the credit; the
    deciding checks the rest, equally. A check that already carries a weight (the
    researcher's) leaves the group as it is; a group of gates alone, or of no gate, is
    left equal.

    A wrong flip used to score 0.92 on a file that exists, of the right size and mode,
    with only the one `image_similarity` failing; now it scores at most GATE_SHARE.
    """
    if any("weight" in check for check in checks):
        return checks
    compared = {c.get("path") for c in checks if c.get("check") == WHOLE_IMAGE_CHECK}

    def deciding(check: dict[str, Any]) -> bool:
        name = check.get("check")
        if name in GATE_CHECKS:
            return False
        return name == WHOLE_IMAGE_CHECK or check.get("path") not in compared

    decide = [deciding(c) for c in checks]
    gates, deciders = decide.count(False), decide.count(True)
    if not gates or not deciders:
        return checks
    # Gates weigh 1 each; the deciding checks together (1 - share) / share times that.
    each = round(gates * (1 - GATE_SHARE) / GATE_SHARE / deciders, 3)
    return [{**c, "weight": each} if d else c for c, d in zip(checks, decide, strict=True)]


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


def make_check(
    check: str, why: str, path: str, assets: dict[str, Path] | None = None, **params: Any
) -> ProposedCheck:
    entry = check_entry({"check": check, "path": path, **params}, f"proposed {check}")
    return ProposedCheck(entry, why, path, assets or {})


def rounded(value: Any, digits: int = 4) -> Any:
    """Rounded for a task file (dumps carry 6 decimals of float noise)."""
    if isinstance(value, float):
        return round(value, digits)
    if isinstance(value, list | tuple):
        return [rounded(v, digits) for v in value]
    return value


def changes_of(file: FileDiff, *whats: str) -> list[Change]:
    return [c for c in file.changes if c.what in whats]
