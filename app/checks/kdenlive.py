"""Checks on Kdenlive projects (.kdenlive): profile, tracks, clips, effects,
compositions, guides and length.

Each check reads the timeline model that app.checks.mlt parses from the project
(tracks named V1, V2, A1, ... as Kdenlive shows them; clips with position, in
point and length in frames), and its evidence lists what the project really
holds, so a near miss reads as a diff. A file that is missing or not a readable
project fails every check with that reason.

This module is the whole of the Kdenlive section of docs/evaluators.md: eight
checks over one model, sharing its loading, its track lookup and one way of
writing evidence, so it is one piece even where it runs past 500 lines.
"""

from __future__ import annotations

import fnmatch
import re
from typing import Annotated, Literal

from pydantic import Field, StrictBool, StrictFloat, StrictInt, StrictStr, model_validator

from app.checks.base import (
    CheckParams,
    CheckResult,
    CheckState,
    GuestPath,
    failed,
    needs_any,
    passed,
    verdict,
)
from app.checks.files import file_bytes
from app.checks.mlt import Clip, Effect, Project, ProjectError, Track, keyframes, parse_project
from app.checks.registry import register

_NUMBER = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$")


def load_project(state: CheckState, path: str) -> Project | CheckResult:
    """The parsed project at guest `path`, or the failed result saying why not."""
    data = file_bytes(state, path)
    if isinstance(data, CheckResult):
        return data
    try:
        return parse_project(data)
    except ProjectError as exc:
        return failed(f"{path} is not a readable Kdenlive project: {exc}")


def _find_track(project: Project, path: str, ref: str) -> Track | CheckResult:
    track = project.track(ref)
    if track is None:
        return failed(f"{path} has no track {ref!r} (tracks: {project.track_labels()})")
    return track


def load_track(state: CheckState, path: str, ref: str) -> Track | CheckResult:
    """Track `ref` of the project at guest `path`, or the failed result saying why not."""
    project = load_project(state, path)
    if isinstance(project, CheckResult):
        return project
    return _find_track(project, path, ref)


# --- kdenlive_profile ----------------------------------------------------------------

Frames = Annotated[StrictInt, Field(ge=0)]


class KdenliveProfileParams(CheckParams):
    path: GuestPath
    """The guest project file, e.g. '~/Videos/edit.kdenlive'."""
    width: Annotated[StrictInt, Field(gt=0)] | None = None
    """Expected frame width in pixels; omit to accept any."""
    height: Annotated[StrictInt, Field(gt=0)] | None = None
    """Expected frame height in pixels; omit to accept any."""
    fps: Annotated[StrictFloat | StrictInt, Field(gt=0)] | None = None
    """Expected frame rate (e.g. 25 or 29.97); matched within 0.01."""

    _needs_something = needs_any("width", "height", "fps", message="give width, height and/or fps")


@register("kdenlive_profile", KdenliveProfileParams, files=("path",))
def kdenlive_profile(state: CheckState, params: KdenliveProfileParams) -> CheckResult:
    """Passes when the project's video profile has the expected size and frame rate."""
    project = load_project(state, params.path)
    if isinstance(project, CheckResult):
        return project
    got = f"{project.width}×{project.height} at {project.fps:g} fps"
    want = " ".join(
        part
        for part in (
            f"width {params.width}" if params.width is not None else "",
            f"height {params.height}" if params.height is not None else "",
            f"{params.fps:g} fps" if params.fps is not None else "",
        )
        if part
    )
    ok = (
        params.width in (None, project.width)
        and params.height in (None, project.height)
        and (params.fps is None or abs(project.fps - params.fps) <= 0.01)
    )
    return verdict(ok, f"{params.path} profile is {got}, expected {want}")


# --- kdenlive_tracks / kdenlive_track -------------------------------------------------


class KdenliveTracksParams(CheckParams):
    path: GuestPath
    """The guest project file."""
    video: Frames | None = None
    """Expected number of video tracks; omit to accept any."""
    audio: Frames | None = None
    """Expected number of audio tracks; omit to accept any."""
    min_video: Frames | None = None
    """At least this many video tracks."""
    min_audio: Frames | None = None
    """At least this many audio tracks."""

    _needs_a_count = needs_any(
        "video", "audio", "min_video", "min_audio", message="give video, audio or both"
    )


@register("kdenlive_tracks", KdenliveTracksParams, files=("path",))
def kdenlive_tracks(state: CheckState, params: KdenliveTracksParams) -> CheckResult:
    """Passes when the project has the expected numbers of video and audio tracks (or
    at least `min_video` / `min_audio`)."""
    project = load_project(state, params.path)
    if isinstance(project, CheckResult):
        return project
    video = sum(1 for t in project.tracks if t.kind == "video")
    audio = len(project.tracks) - video
    ok = params.video in (None, video) and params.audio in (None, audio)
    ok = ok and video >= (params.min_video or 0) and audio >= (params.min_audio or 0)
    wanted = (
        (params.video, "video"),
        (params.audio, "audio"),
        (params.min_video, "or more video"),
        (params.min_audio, "or more audio"),
    )
    want = ", ".join(f"{n} {k}" for n, k in wanted if n is not None)
    return verdict(
        ok,
        f"{params.path} has {video} video and {audio} audio tracks "
        f"({project.track_labels()}), expected {want}",
    )


class KdenliveTrackParams(CheckParams):
    path: GuestPath
    """The guest project file."""
    track: StrictStr
    """The track: 'V1', 'V2', ... counted upward, 'A1', 'A2', ... counted downward (as
    Kdenlive labels them), or a custom track name."""
    name: StrictStr | None = None
    """Expected custom name of the track; omit to accept any."""
    hidden: StrictBool | None = None
    """Video tracks: whether the track must be hidden (true) or shown (false)."""
    muted: StrictBool | None = None
    """Audio tracks: whether the track must be muted (true) or audible (false)."""
    locked: StrictBool | None = None
    """Whether the track must be locked (true) or unlocked (false)."""

    _needs_a_property = needs_any(
        "name",
        "hidden",
        "muted",
        "locked",
        message="give at least one of name, hidden, muted, locked",
    )


@register("kdenlive_track", KdenliveTrackParams, files=("path",))
def kdenlive_track(state: CheckState, params: KdenliveTrackParams) -> CheckResult:
    """Passes when the track exists and has the expected name and hidden/muted/locked
    states."""
    track = load_track(state, params.path, params.track)
    if isinstance(track, CheckResult):
        return track
    if params.hidden is not None and track.kind != "video":
        return failed(f"{params.track} is an audio track: 'hidden' applies to video tracks")
    if params.muted is not None and track.kind != "audio":
        return failed(f"{params.track} is a video track: 'muted' applies to audio tracks")
    wrong = []
    for what, want, got in (
        ("name", params.name, track.name),
        ("hidden", params.hidden, track.hidden),
        ("muted", params.muted, track.muted),
        ("locked", params.locked, track.locked),
    ):
        if want is not None and want != got:
            wrong.append(f"{what} is {got!r}, expected {want!r}")
    state_words = (
        f"name {track.name!r}, hidden {track.hidden}, muted {track.muted}, locked {track.locked}"
    )
    if wrong:
        return failed(f"{params.path} track {track.label}: {'; '.join(wrong)}")
    return passed(f"{params.path} track {track.label}: {state_words}")


# --- kdenlive_clips --------------------------------------------------------------------

ClipKind = Literal["av", "audio", "video", "color", "title", "image"]


class ClipSpec(CheckParams):
    source: StrictStr | None = None
    """Glob matched against the clip's media file name (e.g. 'shot1.mp4', 'shot*') or
    its bin name; omit to accept any source."""
    kind: ClipKind | None = None
    """The kind of clip: av, audio, video (media files), color, title or image."""
    text: StrictStr | None = None
    """For title clips: text the title must contain (case-insensitive)."""
    position: Frames | None = None
    """Frame where the clip starts on the track; omit to accept any."""
    in_point: Frames | None = Field(default=None, alias="in")
    """First frame of the source the clip plays (written `in`); omit to accept any."""
    length: Annotated[StrictInt, Field(gt=0)] | None = None
    """Length in frames on the timeline; omit to accept any."""
    min_length: Annotated[StrictInt, Field(gt=0)] | None = None
    """Shortest acceptable length in frames (for 'at least N seconds' requirements)."""
    speed: Annotated[StrictFloat | StrictInt, Field(gt=0)] | None = None
    """Playback speed (1 = normal, 2 = 200 %); matched within 0.01."""


class KdenliveClipsParams(CheckParams):
    path: GuestPath
    """The guest project file."""
    track: StrictStr | None = None
    """The track ('V1', 'A1', ... or a custom name); omitted: any one track of the
    project holding the clips passes (for an instruction that names no track)."""
    clips: Annotated[list[ClipSpec], Field(min_length=1)]
    """The expected clips in timeline order, each with the fields to compare."""
    tolerance: Frames = 0
    """How many frames a position, in point or length may differ."""
    exact: StrictBool = True
    """True: the track holds exactly these clips, in this order. False: these clips
    appear in this order, other clips may come between them."""


def _source_matches(clip: Clip, glob: str) -> bool:
    """Whether `glob` matches the clip's media file name or its bin name."""
    return fnmatch.fnmatchcase(clip.source, glob) or fnmatch.fnmatchcase(clip.name, glob)


def _clip_problems(clip: Clip, spec: ClipSpec, tolerance: int) -> list[str]:
    problems = []
    if spec.source is not None and not _source_matches(clip, spec.source):
        problems.append(f"source {clip.name or clip.kind!r} is not {spec.source!r}")
    if spec.kind is not None and clip.kind != spec.kind:
        problems.append(f"kind {clip.kind} is not {spec.kind}")
    if spec.text is not None and spec.text.lower() not in clip.text.lower():
        problems.append(f"text {clip.text!r} lacks {spec.text!r}")
    for what, want, got in (
        ("position", spec.position, clip.position),
        ("in", spec.in_point, clip.in_point),
        ("length", spec.length, clip.length),
    ):
        if want is not None and abs(got - want) > tolerance:
            problems.append(f"{what} {got} is not {want}")
    if spec.min_length is not None and clip.length + tolerance < spec.min_length:
        problems.append(f"length {clip.length} is under {spec.min_length}")
    if spec.speed is not None and abs(clip.speed - spec.speed) > 0.01:
        problems.append(f"speed {clip.speed:g} is not {spec.speed:g}")
    return problems


def _describe_spec(spec: ClipSpec) -> str:
    fields = spec.model_dump(exclude_none=True, by_alias=True)
    return "{" + ", ".join(f"{k}: {v}" for k, v in fields.items()) + "}"


@register("kdenlive_clips", KdenliveClipsParams, files=("path",))
def kdenlive_clips(state: CheckState, params: KdenliveClipsParams) -> CheckResult:
    """Passes when the track holds the expected clips in order, each at its position
    with its in point and length (within `tolerance` frames). Partial credit is the
    share of expected clips found. Without `track`, the project's tracks are tried in
    order: the first that holds them passes, else the best one's result is given."""
    if params.track is not None:
        track = load_track(state, params.path, params.track)
        if isinstance(track, CheckResult):
            return track
        return _clips_on(track, params)
    project = load_project(state, params.path)
    if isinstance(project, CheckResult):
        return project
    if not project.tracks:
        return failed(f"{params.path} has no tracks")
    results = [_clips_on(track, params) for track in project.tracks]
    return next((r for r in results if r.passed), max(results, key=lambda r: r.score))


def _clips_on(track: Track, params: KdenliveClipsParams) -> CheckResult:
    have = "; ".join(c.describe() for c in track.clips) or "no clips"
    matched = 0
    problems: list[str] = []
    if params.exact:
        if len(track.clips) != len(params.clips):
            problems.append(f"{len(track.clips)} clips, expected {len(params.clips)}")
        for n, (clip, spec) in enumerate(zip(track.clips, params.clips, strict=False), 1):
            wrong = _clip_problems(clip, spec, params.tolerance)
            if wrong:
                problems.append(f"clip {n}: {', '.join(wrong)}")
            else:
                matched += 1
    else:
        cursor = 0
        for n, spec in enumerate(params.clips, 1):
            for i in range(cursor, len(track.clips)):
                if not _clip_problems(track.clips[i], spec, params.tolerance):
                    matched += 1
                    cursor = i + 1
                    break
            else:
                problems.append(f"no clip matching {_describe_spec(spec)} (expected #{n})")
    score = matched / len(params.clips)
    where = f"{params.path} track {track.label} has {have}"
    if problems:
        return failed(f"{where}: {'; '.join(problems)}", score=score)
    return passed(where)


# --- kdenlive_effect -------------------------------------------------------------------

ParamValue = StrictFloat | StrictInt | StrictStr | list[tuple[StrictInt, StrictFloat | StrictInt]]


class KdenliveEffectParams(CheckParams):
    path: GuestPath
    """The guest project file."""
    effect: StrictStr
    """The effect's Kdenlive id or MLT service, e.g. 'fade_from_black', 'qtblend',
    'frei0r.brightness', 'avfilter.eq', 'volume'."""
    track: StrictStr | None = None
    """Only effects on this track's clips (or on the track itself); omit for any track."""
    clip: StrictStr | None = None
    """Only effects on clips whose source matches this glob; omit for any clip."""
    target: Literal["clip", "track", "master", "any"] = "clip"
    """Where the effect sits: on a clip, on a whole track, on the master, or anywhere."""
    params: dict[StrictStr, ParamValue] = Field(default_factory=dict)
    """Expected parameter values by MLT property name. A number matches when every
    keyframe's value (the first number of it) is within `tolerance`; a list of
    [frame, value] pairs matches animated keyframes one by one (frames within
    `frame_tolerance`); a string must be equal."""
    tolerance: Annotated[StrictFloat | StrictInt, Field(ge=0)] = 0.01
    """Allowed difference for numeric parameter values."""
    frame_tolerance: Frames = 1
    """Allowed difference in frames for keyframe times."""
    enabled: StrictBool = True
    """The effect must be switched on (true) or may be disabled too (false)."""


def _first_number(text: str) -> float | None:
    head = text.strip().split(" ")[0] if text.strip() else ""
    return float(head) if _NUMBER.match(head) else None


def _param_problem(
    effect: Effect, name: str, want: ParamValue, params: KdenliveEffectParams, fps: float
) -> str | None:
    raw = effect.params.get(name)
    if raw is None:
        return f"has no parameter {name!r}"
    if isinstance(want, str):
        return None if raw == want else f"{name}={raw!r}, expected {want!r}"
    try:
        keys = keyframes(raw, fps)
    except ProjectError as exc:
        return f"{name}={raw!r} is unreadable ({exc})"
    values = [(frame, _first_number(v)) for frame, v in keys]
    if any(v is None for _, v in values) or not values:
        return f"{name}={raw!r} is not numeric"
    if isinstance(want, int | float):
        ok = all(abs(v - want) <= params.tolerance for _, v in values if v is not None)
        return None if ok else f"{name}={raw!r}, expected {want:g}"
    if len(values) != len(want):
        return f"{name}={raw!r} has {len(values)} keyframes, expected {len(want)}"
    for (frame, value), (want_frame, want_value) in zip(values, want, strict=True):
        assert value is not None
        if (
            abs(frame - want_frame) > params.frame_tolerance
            or abs(value - want_value) > params.tolerance
        ):
            return f"{name}={raw!r}, expected keyframes {want}"
    return None


@register("kdenlive_effect", KdenliveEffectParams, files=("path",))
def kdenlive_effect(state: CheckState, params: KdenliveEffectParams) -> CheckResult:
    """Passes when some effect with that id (on the given track/clip) has the expected
    parameter values. Evidence lists the candidates and what differed."""
    project = load_project(state, params.path)
    if isinstance(project, CheckResult):
        return project
    tracks = project.tracks
    if params.track is not None:
        track = _find_track(project, params.path, params.track)
        if isinstance(track, CheckResult):
            return track
        tracks = (track,)
    candidates: list[tuple[str, Effect]] = []
    if params.target in ("clip", "any"):
        for track in tracks:
            for clip in track.clips:
                if params.clip is not None and not _source_matches(clip, params.clip):
                    continue
                where = f"{track.label} clip {clip.name or clip.kind}@{clip.position}"
                candidates.extend((where, e) for e in clip.effects)
    if params.target in ("track", "any"):
        for track in tracks:
            candidates.extend((f"track {track.label}", e) for e in track.effects)
    if params.target in ("master", "any"):
        candidates.extend(("master", e) for e in project.master_effects)
    named = [(w, e) for w, e in candidates if params.effect in (e.kdenlive_id, e.service)]
    if not named:
        seen = ", ".join(sorted({f"{e.name} ({w})" for w, e in candidates})) or "none"
        return failed(f"{params.path}: no {params.effect} effect; effects found: {seen}")
    reasons = []
    for where, effect in named:
        problems = []
        if params.enabled and effect.disabled:
            problems.append("is disabled")
        for name, want in params.params.items():
            problem = _param_problem(effect, name, want, params, project.fps)
            if problem is not None:
                problems.append(problem)
        if not problems:
            shown = ", ".join(f"{k}={effect.params.get(k)!r}" for k in params.params)
            return passed(
                f"{params.path}: {effect.name} on {where}" + (f": {shown}" if shown else "")
            )
        reasons.append(f"{where}: {'; '.join(problems)}")
    return failed(f"{params.path}: {params.effect} found but " + " | ".join(reasons))


# --- kdenlive_composition --------------------------------------------------------------


class KdenliveCompositionParams(CheckParams):
    path: GuestPath
    """The guest project file."""
    composition: StrictStr
    """Kdenlive id or MLT service of the composition/transition, e.g. 'dissolve',
    'luma', 'wipe', 'composite', 'qtblend'; a list separated by '|' accepts any."""
    a_track: StrictStr | None = None
    """Lower track it blends onto ('V1', ...); omit to accept any."""
    b_track: StrictStr | None = None
    """Upper track it blends from ('V2', ...); omit to accept any."""
    start: Frames | None = None
    """First frame of the composition; omit to accept any."""
    end: Frames | None = None
    """Last frame (inclusive) of the composition; omit to accept any."""
    min_length: Annotated[StrictInt, Field(gt=0)] = 1
    """Shortest acceptable duration in frames."""
    tolerance: Frames = 0
    """How many frames start and end may differ."""


@register("kdenlive_composition", KdenliveCompositionParams, files=("path",))
def kdenlive_composition(state: CheckState, params: KdenliveCompositionParams) -> CheckResult:
    """Passes when a composition of that kind joins the given tracks over the given
    frames (within `tolerance`) and lasts at least `min_length` frames."""
    project = load_project(state, params.path)
    if isinstance(project, CheckResult):
        return project
    wanted = set(params.composition.split("|"))
    found = [c for c in project.compositions if wanted & {c.kdenlive_id, c.service}]
    all_found = ", ".join(
        f"{c.name} {c.a_track}/{c.b_track} {c.start}-{c.end}" for c in project.compositions
    )
    if not found:
        return failed(
            f"{params.path}: no {params.composition} composition; found: {all_found or 'none'}"
        )
    for comp in found:
        problems = []
        for what, want, got in (
            ("a_track", params.a_track, comp.a_track),
            ("b_track", params.b_track, comp.b_track),
        ):
            if want is not None and want.lower() != got.lower():
                problems.append(f"{what} {got} is not {want}")
        for what, want_frame, got_frame in (
            ("start", params.start, comp.start),
            ("end", params.end, comp.end),
        ):
            if want_frame is not None and abs(got_frame - want_frame) > params.tolerance:
                problems.append(f"{what} {got_frame} is not {want_frame}")
        if comp.end - comp.start + 1 < params.min_length:
            problems.append(f"lasts {comp.end - comp.start + 1} frames, under {params.min_length}")
        if not problems:
            return passed(
                f"{params.path}: {comp.name} from {comp.a_track} to {comp.b_track}, "
                f"frames {comp.start}-{comp.end}"
            )
    return failed(
        f"{params.path}: compositions found ({all_found}) do not match: {'; '.join(problems)}"
    )


# --- kdenlive_guides ------------------------------------------------------------------


class GuideSpec(CheckParams):
    position: Frames
    """Frame of the guide."""
    comment: StrictStr | None = None
    """The guide's label must contain this text (case-insensitive); omit to accept any."""


class KdenliveGuidesParams(CheckParams):
    path: GuestPath
    """The guest project file."""
    guides: Annotated[list[GuideSpec], Field(min_length=1)]
    """Guides that must exist."""
    tolerance: Frames = 0
    """How many frames a guide may be off."""
    exact: StrictBool = False
    """True: no other guides may exist."""


@register("kdenlive_guides", KdenliveGuidesParams, files=("path",))
def kdenlive_guides(state: CheckState, params: KdenliveGuidesParams) -> CheckResult:
    """Passes when each expected guide (timeline marker) exists at its frame (within
    `tolerance`) with the expected label. Partial credit is the share found."""
    project = load_project(state, params.path)
    if isinstance(project, CheckResult):
        return project
    have = ", ".join(f"{g.position} {g.comment!r}" for g in project.guides) or "none"
    missing = []
    for spec in params.guides:
        if not any(
            abs(g.position - spec.position) <= params.tolerance
            and (spec.comment is None or spec.comment.lower() in g.comment.lower())
            for g in project.guides
        ):
            missing.append(f"{spec.position}" + (f" {spec.comment!r}" if spec.comment else ""))
    score = (len(params.guides) - len(missing)) / len(params.guides)
    where = f"{params.path} guides: {have}"
    if missing:
        return failed(f"{where}; missing: {', '.join(missing)}", score=score)
    if params.exact and len(project.guides) != len(params.guides):
        return failed(f"{where}; expected exactly {len(params.guides)}", score=0.5)
    return passed(where)


# --- kdenlive_length ------------------------------------------------------------------


class KdenliveLengthParams(CheckParams):
    path: GuestPath
    """The guest project file."""
    frames: Annotated[StrictInt, Field(gt=0)] | None = None
    """Expected project length in frames (to the end of the last clip)."""
    seconds: Annotated[StrictFloat | StrictInt, Field(gt=0)] | None = None
    """Expected project length in seconds (converted with the project's frame rate)."""
    tolerance: Frames = 0
    """How many frames the length may differ."""

    @model_validator(mode="after")
    def _one_length(self) -> KdenliveLengthParams:
        if (self.frames is None) == (self.seconds is None):
            raise ValueError("give exactly one of frames and seconds")
        return self


@register("kdenlive_length", KdenliveLengthParams, files=("path",))
def kdenlive_length(state: CheckState, params: KdenliveLengthParams) -> CheckResult:
    """Passes when the timeline (to the end of its last clip) has the expected length."""
    project = load_project(state, params.path)
    if isinstance(project, CheckResult):
        return project
    want = (
        params.frames if params.frames is not None else round((params.seconds or 0.0) * project.fps)
    )
    got = project.length
    message = (
        f"{params.path} is {got} frames ({got / project.fps:.2f} s at {project.fps:g} fps), "
        f"expected {want}" + (f" ±{params.tolerance}" if params.tolerance else "")
    )
    return verdict(abs(got - want) <= params.tolerance, message)
