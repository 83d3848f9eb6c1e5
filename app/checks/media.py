"""Checks on rendered media files, over ffprobe's view of them (the `ffprobe` probe).

ffprobe runs in the guest at scoring time (app/probes/media.py); the check reads
its JSON. A file ffprobe cannot read (missing, truncated, not media) fails with
ffprobe's reason; nothing falls back to looking at the file name.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Annotated, Any

from pydantic import Field, StrictBool, StrictFloat, StrictInt, StrictStr

from app.checks.base import (
    CheckParams,
    CheckResult,
    CheckState,
    GuestPath,
    Probe,
    failed,
    needs_any,
    passed,
)
from app.checks.registry import register


def _rate(value: Any) -> float | None:
    """An ffprobe frame rate ('25/1', '30000/1001') as a number; None for '0/0'."""
    try:
        rate = Fraction(str(value))
    except (ValueError, ZeroDivisionError):
        return None
    return float(rate) if rate > 0 else None


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


class MediaInfoParams(CheckParams):
    path: GuestPath
    """The guest media file, e.g. '~/Videos/final.mp4'."""
    duration: Annotated[StrictFloat | StrictInt, Field(gt=0)] | None = None
    """Expected duration in seconds; omit to accept any."""
    duration_tolerance: Annotated[StrictFloat | StrictInt, Field(ge=0)] = 0.1
    """How many seconds the duration may differ."""
    min_duration: Annotated[StrictFloat | StrictInt, Field(gt=0)] | None = None
    """The shortest duration that passes, in seconds (a render that is not a stub)."""
    width: Annotated[StrictInt, Field(gt=0)] | None = None
    """Expected video width in pixels."""
    height: Annotated[StrictInt, Field(gt=0)] | None = None
    """Expected video height in pixels."""
    fps: Annotated[StrictFloat | StrictInt, Field(gt=0)] | None = None
    """Expected video frame rate; matched within 0.01."""
    video_codec: StrictStr | None = None
    """Expected video codec as ffprobe names it ('h264', 'hevc', 'vp9', 'mpeg4', ...)."""
    audio_codec: StrictStr | None = None
    """Expected audio codec as ffprobe names it ('aac', 'mp3', 'opus', 'vorbis', ...)."""
    video: StrictBool | None = None
    """True: there must be a video stream; false: there must be none."""
    audio: StrictBool | None = None
    """True: there must be an audio stream; false: there must be none (a silent render)."""

    _needs_something = needs_any(
        "duration",
        "min_duration",
        "width",
        "height",
        "fps",
        "video_codec",
        "audio_codec",
        "video",
        "audio",
        message="give at least one property to check",
    )


def _summary(
    video: dict[str, Any] | None, audio: dict[str, Any] | None, duration: float | None
) -> str:
    parts = []
    if video is not None:
        rate = _rate(video.get("avg_frame_rate")) or _rate(video.get("r_frame_rate"))
        parts.append(
            f"{video.get('codec_name')} {video.get('width')}×{video.get('height')}"
            + (f" {rate:.3g} fps" if rate else "")
        )
    else:
        parts.append("no video")
    if audio is not None:
        parts.append(f"{audio.get('codec_name')} audio {audio.get('sample_rate')} Hz")
    else:
        parts.append("no audio")
    parts.append(f"{duration:.2f} s" if duration is not None else "unknown duration")
    return ", ".join(parts)


@register("media_info", MediaInfoParams, probes=(("ffprobe", "path"),))
def media_info(state: CheckState, params: MediaInfoParams) -> CheckResult:
    """Passes when ffprobe finds the expected duration (within `duration_tolerance`),
    video size, frame rate, codecs and presence or absence of audio and video."""
    probe = state.probe(Probe("ffprobe", params.path))
    if probe.error is not None:
        if probe.missing:
            return failed(f"{params.path} does not exist")
        return failed(f"{params.path}: {probe.error}")
    data = probe.data if isinstance(probe.data, dict) else {}
    streams = [s for s in data.get("streams", []) if isinstance(s, dict)]
    video = next((s for s in streams if s.get("codec_type") == "video"), None)
    audio = next((s for s in streams if s.get("codec_type") == "audio"), None)
    raw_format = data.get("format")
    fmt: dict[str, Any] = raw_format if isinstance(raw_format, dict) else {}
    duration = _number(fmt.get("duration"))
    problems = []
    if params.duration is not None:
        if duration is None:
            problems.append("duration unknown")
        elif abs(duration - params.duration) > params.duration_tolerance:
            problems.append(f"duration {duration:.2f} s is not {params.duration:g} s")
    if params.min_duration is not None:
        if duration is None:
            problems.append("duration unknown")
        elif duration < params.min_duration:
            problems.append(f"duration {duration:.2f} s is under {params.min_duration:g} s")
    for what, want, present in (("video", params.video, video), ("audio", params.audio, audio)):
        if want is True and present is None:
            problems.append(f"no {what} stream")
        if want is False and present is not None:
            problems.append(f"has a {what} stream")
    needs_video = any(
        v is not None for v in (params.width, params.height, params.fps, params.video_codec)
    )
    if needs_video and video is None:
        problems.append("no video stream to measure")
    elif video is not None:
        for dimension, want_px, got_px in (
            ("width", params.width, video.get("width")),
            ("height", params.height, video.get("height")),
        ):
            if want_px is not None and got_px != want_px:
                problems.append(f"{dimension} {got_px} is not {want_px}")
        if params.fps is not None:
            rate = _rate(video.get("avg_frame_rate")) or _rate(video.get("r_frame_rate"))
            if rate is None or abs(rate - params.fps) > 0.01:
                problems.append(f"frame rate {rate} is not {params.fps:g}")
        if params.video_codec is not None and video.get("codec_name") != params.video_codec:
            problems.append(f"video codec {video.get('codec_name')} is not {params.video_codec}")
    if params.audio_codec is not None:
        if audio is None:
            problems.append("no audio stream for the codec check")
        elif audio.get("codec_name") != params.audio_codec:
            problems.append(f"audio codec {audio.get('codec_name')} is not {params.audio_codec}")
    summary = f"{params.path}: {_summary(video, audio, duration)}"
    if problems:
        return failed(f"{summary}; {'; '.join(problems)}")
    return passed(summary)
