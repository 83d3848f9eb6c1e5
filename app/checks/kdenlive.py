"""Checks on Kdenlive projects (.kdenlive, MLT XML): profile, tracks, clips, effects,
compositions, guides and length.

The project is parsed with lxml with entity resolution, DTD loading and network
access switched off, so a hostile file can neither read local files nor reach
out. `parse_project` turns the MLT graph into a plain timeline model (tracks named
V1, V2, A1, ... as Kdenlive shows them; clips with position, in point and length
in frames) that every check reads. Kdenlive 22.12 writes `<producer>` and 23.x
`<chain>` for media clips; both are accepted. Facts about the format are in
APP_FORMATS.md §3.

Times are frames of the project's frame rate. A clip's `in` and `out` are
inclusive, so its length is out - in + 1.
"""

from __future__ import annotations

import fnmatch
import json
import posixpath
import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from lxml import etree
from pydantic import Field, StrictBool, StrictFloat, StrictInt, StrictStr, model_validator

from app.checks.base import (
    CheckParams,
    CheckResult,
    CheckState,
    GuestPath,
    failed,
    passed,
    verdict,
)
from app.checks.files import file_bytes
from app.checks.registry import register

INTERNAL_ADDED = "237"
"""`internal_added` value Kdenlive puts on the filters/compositors it adds itself."""

_CLOCK = re.compile(r"^(\d+):(\d{1,2}):(\d{1,2}(?:\.\d+)?)$")
_TIMECODE = re.compile(r"^(\d+):(\d{1,2}):(\d{1,2}):(\d{1,2})$")
_NUMBER = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$")


class ProjectError(ValueError):
    """The bytes are not a Kdenlive/MLT project this module can read; says why."""


# --- the timeline model -------------------------------------------------------------


@dataclass(frozen=True)
class Effect:
    """One user-visible effect (a `<filter>` Kdenlive did not add itself)."""

    kdenlive_id: str
    service: str
    params: dict[str, str]
    disabled: bool
    start: int | None
    end: int | None

    @property
    def name(self) -> str:
        return self.kdenlive_id or self.service


@dataclass(frozen=True)
class Clip:
    """One clip on a track: where it sits and which part of its source it plays."""

    position: int
    in_point: int
    length: int
    source: str
    """The media file's base name (e.g. 'shot1.mp4'), the colour for colour clips,
    or '' for generated clips without a file."""
    name: str
    """The bin clip's name in Kdenlive: its custom name, else `source`."""
    kind: str
    """'av', 'audio', 'video', 'color', 'title', 'image' or the MLT service."""
    text: str
    """A title clip's visible text (items joined by newlines); '' otherwise."""
    bin_id: str
    speed: float
    effects: tuple[Effect, ...]

    @property
    def end(self) -> int:
        """The first frame after the clip."""
        return self.position + self.length

    def describe(self) -> str:
        label = self.name or self.kind
        return f"{label} @{self.position} len {self.length} (in {self.in_point})"


@dataclass(frozen=True)
class Track:
    label: str
    """V1, V2, ... (counting up) or A1, A2, ... (counting down), as Kdenlive shows them."""
    name: str
    """The custom name, or `label` when the user never renamed the track."""
    kind: Literal["video", "audio"]
    hidden: bool
    muted: bool
    locked: bool
    clips: tuple[Clip, ...]
    effects: tuple[Effect, ...]
    index: int
    """Position in the main tractor (0 is the black background track)."""

    @property
    def end(self) -> int:
        return max((c.end for c in self.clips), default=0)


@dataclass(frozen=True)
class Composition:
    """A composition between two tracks, or a same-track mix (a_track == b_track)."""

    kdenlive_id: str
    service: str
    a_track: str
    """Label of the lower (background) track, e.g. 'V1'; 'black' for the background."""
    b_track: str
    """Label of the upper track, e.g. 'V2'."""
    start: int
    end: int
    """Last frame (inclusive)."""
    params: dict[str, str]

    @property
    def name(self) -> str:
        return self.kdenlive_id or self.service


@dataclass(frozen=True)
class Guide:
    position: int
    comment: str
    category: int


@dataclass(frozen=True)
class Project:
    width: int
    height: int
    fps: float
    tracks: tuple[Track, ...]
    compositions: tuple[Composition, ...]
    guides: tuple[Guide, ...]
    master_effects: tuple[Effect, ...]

    @property
    def length(self) -> int:
        """Frames from 0 to the end of the last clip on any track."""
        return max((t.end for t in self.tracks), default=0)

    def track(self, ref: str) -> Track | None:
        """The track labelled `ref` ('V1', 'a2'), else the one whose custom name is `ref`."""
        for track in self.tracks:
            if track.label.lower() == ref.lower():
                return track
        for track in self.tracks:
            if track.name == ref:
                return track
        return None

    def track_labels(self) -> str:
        return ", ".join(
            t.label if t.name == t.label else f"{t.label} ({t.name})" for t in self.tracks
        )


# --- parsing -------------------------------------------------------------------------


def _parser() -> etree.XMLParser:
    # No entities, DTDs or network: a project file is data, never a way to read the
    # scorer's files or reach a server.
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
    )


def _props(element: Any) -> dict[str, str]:
    return {
        str(p.get("name")): (p.text or "")
        for p in element.iterchildren("property")
        if p.get("name") is not None
    }


def to_frames(value: str | None, fps: float) -> int | None:
    """An MLT time ('HH:MM:SS.mmm', 'HH:MM:SS:FF' or a frame count) in frames."""
    if value is None or value == "":
        return None
    value = value.strip()
    if value.lstrip("-").isdigit():
        return int(value)
    match = _CLOCK.match(value)
    if match:
        hours, minutes, seconds = match.groups()
        total = int(hours) * 3600 + int(minutes) * 60 + float(seconds)
        return round(total * fps)
    match = _TIMECODE.match(value)
    if match:
        hours, minutes, seconds, frames = (int(g) for g in match.groups())
        return round((hours * 3600 + minutes * 60 + seconds) * fps) + frames
    raise ProjectError(f"unreadable MLT time {value!r}")


def keyframes(value: str, fps: float) -> list[tuple[int, str]]:
    """The (frame, value) pairs of a keyframe string 'T=V;T=V'; a static value is one
    pair at frame 0. Interpolation marks ('~=', '|=') are accepted and dropped."""
    pairs: list[tuple[int, str]] = []
    for part in value.split(";"):
        if not part:
            continue
        if "=" not in part:
            pairs.append((0, part))
            continue
        when, _, what = part.partition("=")
        when = when.rstrip("~|!-$")
        frame = to_frames(when, fps)
        pairs.append((0 if frame is None else frame, what))
    return pairs


def _effects(parent: Any, fps: float) -> tuple[Effect, ...]:
    found = []
    for element in parent.iterchildren("filter"):
        props = _props(element)
        # Kdenlive tags every effect a user adds with its kdenlive_id; filters without
        # one (the audio meters' `audiolevel`) or marked internal are its own plumbing.
        if props.get("internal_added") == INTERNAL_ADDED or not props.get("kdenlive_id"):
            continue
        found.append(
            Effect(
                kdenlive_id=props.get("kdenlive_id", ""),
                service=props.get("mlt_service", ""),
                params=props,
                disabled=props.get("disable") == "1",
                start=to_frames(element.get("in"), fps),
                end=to_frames(element.get("out"), fps),
            )
        )
    return tuple(found)


def _title_text(xmldata: str) -> str:
    if not xmldata:
        return ""
    try:
        root = etree.fromstring(xmldata.encode("utf-8"), _parser())
    except etree.XMLSyntaxError:
        return ""
    return "\n".join((c.text or "").strip() for c in root.iter("content") if c.text)


def _clip_kind(service: str, props: dict[str, str]) -> str:
    if service in ("color", "colour"):
        return "color"
    if service == "kdenlivetitle":
        return "title"
    if service in ("qimage", "pixbuf"):
        return "image"
    if service.startswith("avformat") or service == "timewarp":
        clip_type = props.get("kdenlive:clip_type", "0")
        return {"1": "audio", "2": "video"}.get(clip_type, "av")
    return service


def parse_project(data: bytes) -> Project:
    """Read a Kdenlive project's timeline.

    Raises:
        ProjectError: not XML, not MLT, or a structure this reader does not know,
            saying what is wrong.
    """
    try:
        root = etree.fromstring(data, _parser())
    except etree.XMLSyntaxError as exc:
        raise ProjectError(f"not well-formed XML ({exc})") from None
    if root.tag != "mlt":
        raise ProjectError(f"root element is <{root.tag}>, not <mlt>")
    profile = root.find("profile")
    if profile is None:
        raise ProjectError("no <profile> element")
    try:
        width = int(profile.get("width", "0"))
        height = int(profile.get("height", "0"))
        fps = int(profile.get("frame_rate_num", "0")) / int(profile.get("frame_rate_den", "1"))
    except (ValueError, ZeroDivisionError):
        raise ProjectError("the <profile> has unreadable size or frame rate") from None
    if fps <= 0:
        raise ProjectError("the <profile> has no frame rate")

    producers: dict[str, Any] = {}
    for element in root:
        if element.tag in ("producer", "chain", "playlist", "tractor") and element.get("id"):
            producers[str(element.get("id"))] = element
    bin_clips: dict[str, dict[str, str]] = {}
    for element in root:
        if element.tag in ("producer", "chain"):
            props = _props(element)
            bin_id = props.get("kdenlive:id")
            # The first element with an id is the bin ("master") clip; timeline copies
            # follow it and carry set.test_* properties.
            if bin_id is not None and bin_id not in bin_clips:
                bin_clips[bin_id] = props
    tractors = [e for e in root if e.tag == "tractor"]
    if not tractors:
        raise ProjectError("no <tractor>: this is not a Kdenlive timeline")
    main = tractors[-1]

    raw_tracks: list[tuple[int, Any, dict[str, str]]] = []
    for index, ref in enumerate(main.iterchildren("track")):
        target = producers.get(str(ref.get("producer")))
        if index == 0 or target is None or target.tag != "tractor":
            continue  # the black background track, or a bare playlist (not Kdenlive)
        raw_tracks.append((index, target, _props(target)))
    video = [t for t in raw_tracks if t[2].get("kdenlive:audio_track") != "1"]
    audio = [t for t in raw_tracks if t[2].get("kdenlive:audio_track") == "1"]
    labels: dict[int, str] = {}
    for n, (index, _, _) in enumerate(video, 1):
        labels[index] = f"V{n}"
    for n, (index, _, _) in enumerate(reversed(audio), 1):
        labels[index] = f"A{n}"
    labels[0] = "black"

    tracks = []
    for index, tractor, props in raw_tracks:
        kind: Literal["video", "audio"] = (
            "audio" if props.get("kdenlive:audio_track") == "1" else "video"
        )
        hides = {str(t.get("hide", "")) for t in tractor.iterchildren("track")}
        # Kdenlive writes the same hide value on both sub-playlists of a track.
        hide = hides.pop() if len(hides) == 1 else ""
        clips: list[Clip] = []
        for sub in tractor.iterchildren("track"):
            playlist = producers.get(str(sub.get("producer")))
            if playlist is None or playlist.tag != "playlist":
                continue
            clips.extend(_playlist_clips(playlist, producers, bin_clips, fps))
        clips.sort(key=lambda c: (c.position, c.length))
        label = labels[index]
        tracks.append(
            Track(
                label=label,
                name=props.get("kdenlive:track_name") or label,
                kind=kind,
                hidden=kind == "video" and hide in ("video", "both"),
                muted=kind == "audio" and hide in ("audio", "both"),
                locked=props.get("kdenlive:locked_track") == "1",
                clips=tuple(clips),
                effects=_effects(tractor, fps),
                index=index,
            )
        )
    # Show tracks as Kdenlive does, top to bottom: V_n..V1 then A1..A_n.
    tracks.sort(key=lambda t: -t.index)

    compositions = []
    for element in main.iterchildren("transition"):
        props = _props(element)
        if props.get("internal_added") == INTERNAL_ADDED:
            continue
        a_index = _track_index(props, "a_track")
        b_index = _track_index(props, "b_track")
        compositions.append(
            Composition(
                kdenlive_id=props.get("kdenlive_id", ""),
                service=props.get("mlt_service", ""),
                a_track=labels.get(a_index, f"#{a_index}"),
                b_track=labels.get(b_index, f"#{b_index}"),
                start=to_frames(element.get("in"), fps) or 0,
                end=to_frames(element.get("out"), fps) or 0,
                params=props,
            )
        )

    # Same-track mixes (Kdenlive's crossfade between adjacent clips on one track) are
    # transitions inside a track's tractor, between its two playlists.
    for index, tractor, _ in raw_tracks:
        for element in tractor.iterchildren("transition"):
            props = _props(element)
            if props.get("internal_added") == INTERNAL_ADDED:
                continue
            compositions.append(
                Composition(
                    kdenlive_id=props.get("kdenlive_id", ""),
                    service=props.get("mlt_service", ""),
                    a_track=labels[index],
                    b_track=labels[index],
                    start=to_frames(element.get("in"), fps) or 0,
                    end=to_frames(element.get("out"), fps) or 0,
                    params=props,
                )
            )

    main_bin = producers.get("main_bin")
    bin_props = _props(main_bin) if main_bin is not None else {}
    guides = _guides(bin_props.get("kdenlive:docproperties.guides", ""))
    return Project(
        width=width,
        height=height,
        fps=fps,
        tracks=tuple(tracks),
        compositions=tuple(compositions),
        guides=guides,
        master_effects=_effects(main, fps),
    )


def _track_index(props: dict[str, str], name: str) -> int:
    try:
        return int(props.get(name, "0") or 0)
    except ValueError:
        raise ProjectError(f"a composition's {name} is {props.get(name)!r}, not a number") from None


def _guides(raw: str) -> tuple[Guide, ...]:
    if not raw.strip():
        return ()
    try:
        items = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ProjectError(f"kdenlive:docproperties.guides is not JSON ({exc})") from None
    if not isinstance(items, list):
        raise ProjectError("kdenlive:docproperties.guides is not a list")
    guides = []
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("pos"), int | float):
            guides.append(
                Guide(
                    position=int(item["pos"]),
                    comment=str(item.get("comment", "")),
                    category=int(item.get("type", 0) or 0),
                )
            )
    return tuple(sorted(guides, key=lambda g: g.position))


def _playlist_clips(
    playlist: Any, producers: dict[str, Any], bin_clips: dict[str, dict[str, str]], fps: float
) -> list[Clip]:
    clips: list[Clip] = []
    position = 0
    for child in playlist:
        if child.tag == "blank":
            position += to_frames(child.get("length"), fps) or 0
            continue
        if child.tag != "entry":
            continue
        producer = producers.get(str(child.get("producer")))
        props = _props(producer) if producer is not None else {}
        entry_props = _props(child)
        start = to_frames(child.get("in"), fps) or 0
        out = to_frames(child.get("out"), fps)
        if out is None:
            out = to_frames(producer.get("out") if producer is not None else None, fps) or start
        length = out - start + 1
        bin_id = entry_props.get("kdenlive:id") or props.get("kdenlive:id", "")
        master = bin_clips.get(bin_id, props)
        service = props.get("mlt_service", "")
        resource = props.get("warp_resource") or props.get("resource", "")
        if service in ("color", "colour"):
            source = resource
        elif service == "kdenlivetitle":
            source = ""
        else:
            source = posixpath.basename(resource)
        speed = 1.0
        if service == "timewarp":
            try:
                speed = float(props.get("warp_speed", "1"))
            except ValueError:
                speed = 1.0
        kind = _clip_kind(service if service != "timewarp" else "avformat", master)
        clips.append(
            Clip(
                position=position,
                in_point=start,
                length=length,
                source=source,
                name=master.get("kdenlive:clipname") or source,
                kind=kind,
                text=_title_text(props.get("xmldata") or master.get("xmldata", "")),
                bin_id=bin_id,
                speed=speed,
                effects=_effects(child, fps),
            )
        )
        position += length
    return clips


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

    @model_validator(mode="after")
    def _needs_something(self) -> KdenliveProfileParams:
        if self.width is None and self.height is None and self.fps is None:
            raise ValueError("give width, height and/or fps")
        return self


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

    @model_validator(mode="after")
    def _needs_a_count(self) -> KdenliveTracksParams:
        if self.video is None and self.audio is None:
            raise ValueError("give video, audio or both")
        return self


@register("kdenlive_tracks", KdenliveTracksParams, files=("path",))
def kdenlive_tracks(state: CheckState, params: KdenliveTracksParams) -> CheckResult:
    """Passes when the project has the expected numbers of video and audio tracks."""
    project = load_project(state, params.path)
    if isinstance(project, CheckResult):
        return project
    video = sum(1 for t in project.tracks if t.kind == "video")
    audio = len(project.tracks) - video
    ok = params.video in (None, video) and params.audio in (None, audio)
    want = ", ".join(
        f"{n} {k}" for n, k in ((params.video, "video"), (params.audio, "audio")) if n is not None
    )
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

    @model_validator(mode="after")
    def _needs_a_property(self) -> KdenliveTrackParams:
        if all(v is None for v in (self.name, self.hidden, self.muted, self.locked)):
            raise ValueError("give at least one of name, hidden, muted, locked")
        return self


@register("kdenlive_track", KdenliveTrackParams, files=("path",))
def kdenlive_track(state: CheckState, params: KdenliveTrackParams) -> CheckResult:
    """Passes when the track exists and has the expected name and hidden/muted/locked
    states."""
    project = load_project(state, params.path)
    if isinstance(project, CheckResult):
        return project
    track = _find_track(project, params.path, params.track)
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
    track: StrictStr
    """The track ('V1', 'A1', ... or a custom name)."""
    clips: Annotated[list[ClipSpec], Field(min_length=1)]
    """The expected clips in timeline order, each with the fields to compare."""
    tolerance: Frames = 0
    """How many frames a position, in point or length may differ."""
    exact: StrictBool = True
    """True: the track holds exactly these clips, in this order. False: these clips
    appear in this order, other clips may come between them."""


def _clip_problems(clip: Clip, spec: ClipSpec, tolerance: int) -> list[str]:
    problems = []
    if spec.source is not None and not (
        fnmatch.fnmatchcase(clip.source, spec.source) or fnmatch.fnmatchcase(clip.name, spec.source)
    ):
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
    share of expected clips found."""
    project = load_project(state, params.path)
    if isinstance(project, CheckResult):
        return project
    track = _find_track(project, params.path, params.track)
    if isinstance(track, CheckResult):
        return track
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
                if params.clip is not None and not (
                    fnmatch.fnmatchcase(clip.source, params.clip)
                    or fnmatch.fnmatchcase(clip.name, params.clip)
                ):
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


__all__ = [
    "Clip",
    "Composition",
    "Effect",
    "Guide",
    "Project",
    "ProjectError",
    "Track",
    "keyframes",
    "parse_project",
    "to_frames",
]
