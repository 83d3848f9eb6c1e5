"""A reader for Kdenlive projects (.kdenlive, MLT XML): a plain model of the timeline.

The project is parsed with lxml with entity resolution, DTD loading and network
access switched off, so a hostile file can neither read local files nor reach
out. `parse_project` turns the MLT graph (producers, playlists, tractors, filters
and transitions) into the timeline Kdenlive shows: tracks named V1, V2, A1, ... as
Kdenlive labels them; clips with position, in point and length in frames; effects,
compositions, guides and the profile. Kdenlive 22.12 writes `<producer>` and 23.x
`<chain>` for media clips; both are accepted. Facts about the format are in
APP_FORMATS.md §3; the checks that read this model are in app.checks.kdenlive.

Times are frames of the project's frame rate. A clip's `in` and `out` are
inclusive, so its length is out - in + 1.

Anything this reader cannot make sense of raises `ProjectError` saying what, so a
check can fail with the reason; nothing here guesses. The model and the reader that
builds it are one piece (each class is made in one place below), so they share a
module even where it runs past 500 lines.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from lxml import etree

INTERNAL_ADDED = "237"
"""`internal_added` value Kdenlive puts on the filters/compositors it adds itself."""

_CLOCK = re.compile(r"^(\d+):(\d{1,2}):(\d{1,2}(?:\.\d+)?)$")
_TIMECODE = re.compile(r"^(\d+):(\d{1,2}):(\d{1,2}):(\d{1,2})$")


class ProjectError(ValueError):
    """The bytes are not a Kdenlive/MLT project this module can read; says why."""


# --- the timeline model -------------------------------------------------------------


@dataclass(frozen=True)
class Service:
    """An MLT filter or transition as Kdenlive tags it: its id, service and properties."""

    kdenlive_id: str
    service: str
    params: dict[str, str]

    @property
    def name(self) -> str:
        return self.kdenlive_id or self.service


@dataclass(frozen=True)
class Effect(Service):
    """One user-visible effect (a `<filter>` Kdenlive did not add itself)."""

    disabled: bool
    start: int | None
    end: int | None


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
class Composition(Service):
    """A composition between two tracks, or a same-track mix (a_track == b_track)."""

    a_track: str
    """Label of the lower (background) track, e.g. 'V1'; 'black' for the background."""
    b_track: str
    """Label of the upper track, e.g. 'V2'."""
    start: int
    end: int
    """Last frame (inclusive)."""


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


# --- values ---------------------------------------------------------------------------


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


def _transitions(parent: Any) -> Iterator[tuple[Any, dict[str, str]]]:
    """The `<transition>` elements directly in `parent` that Kdenlive did not add itself
    (its internal compositors), each with its properties."""
    for element in parent.iterchildren("transition"):
        props = _props(element)
        if props.get("internal_added") != INTERNAL_ADDED:
            yield element, props


def _composition(
    element: Any, props: dict[str, str], a_track: str, b_track: str, fps: float
) -> Composition:
    return Composition(
        kdenlive_id=props.get("kdenlive_id", ""),
        service=props.get("mlt_service", ""),
        params=props,
        a_track=a_track,
        b_track=b_track,
        start=to_frames(element.get("in"), fps) or 0,
        end=to_frames(element.get("out"), fps) or 0,
    )


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


def _profile(root: Any) -> tuple[int, int, float]:
    """The project's width, height and frame rate."""
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
    return width, height, fps


def _bin_clips(root: Any) -> dict[str, dict[str, str]]:
    """The properties of each bin ("master") clip, by its kdenlive:id."""
    bin_clips: dict[str, dict[str, str]] = {}
    for element in root:
        if element.tag in ("producer", "chain"):
            props = _props(element)
            bin_id = props.get("kdenlive:id")
            # The first element with an id is the bin ("master") clip; timeline copies
            # follow it and carry set.test_* properties.
            if bin_id is not None and bin_id not in bin_clips:
                bin_clips[bin_id] = props
    return bin_clips


def _labels(raw_tracks: list[tuple[int, Any, dict[str, str]]]) -> dict[int, str]:
    """Kdenlive's label for each main-tractor index: V1 is the lowest video track,
    A1 the audio track nearest the video tracks, 'black' the background."""
    video = [t for t in raw_tracks if t[2].get("kdenlive:audio_track") != "1"]
    audio = [t for t in raw_tracks if t[2].get("kdenlive:audio_track") == "1"]
    labels: dict[int, str] = {}
    for n, (index, _, _) in enumerate(video, 1):
        labels[index] = f"V{n}"
    for n, (index, _, _) in enumerate(reversed(audio), 1):
        labels[index] = f"A{n}"
    labels[0] = "black"
    return labels


def _track(
    index: int,
    tractor: Any,
    props: dict[str, str],
    label: str,
    producers: dict[str, Any],
    bin_clips: dict[str, dict[str, str]],
    fps: float,
) -> Track:
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
    return Track(
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


def _track_label(props: dict[str, str], name: str, labels: dict[int, str]) -> str:
    """The label of the track a composition's `a_track` or `b_track` property names."""
    try:
        index = int(props.get(name, "0") or 0)
    except ValueError:
        raise ProjectError(f"a composition's {name} is {props.get(name)!r}, not a number") from None
    return labels.get(index, f"#{index}")


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
    width, height, fps = _profile(root)

    producers: dict[str, Any] = {}
    for element in root:
        if element.tag in ("producer", "chain", "playlist", "tractor") and element.get("id"):
            producers[str(element.get("id"))] = element
    bin_clips = _bin_clips(root)
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
    labels = _labels(raw_tracks)
    tracks = [
        _track(index, tractor, props, labels[index], producers, bin_clips, fps)
        for index, tractor, props in raw_tracks
    ]
    # Show tracks as Kdenlive does, top to bottom: V_n..V1 then A1..A_n.
    tracks.sort(key=lambda t: -t.index)

    compositions = [
        _composition(
            element,
            props,
            _track_label(props, "a_track", labels),
            _track_label(props, "b_track", labels),
            fps,
        )
        for element, props in _transitions(main)
    ]
    # Same-track mixes (Kdenlive's crossfade between adjacent clips on one track) are
    # transitions inside a track's tractor, between its two playlists.
    for index, tractor, _ in raw_tracks:
        compositions.extend(
            _composition(element, props, labels[index], labels[index], fps)
            for element, props in _transitions(tractor)
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


__all__ = [
    "INTERNAL_ADDED",
    "Clip",
    "Composition",
    "Effect",
    "Guide",
    "Project",
    "ProjectError",
    "Service",
    "Track",
    "keyframes",
    "parse_project",
    "to_frames",
]
