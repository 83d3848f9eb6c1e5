"""`ffprobe`: what a rendered media file holds, via ffprobe in the guest.

Result: ffprobe's JSON (`-print_format json`) with `format` (duration, size,
format_name) and `streams` (codec_type, codec_name, width, height, avg_frame_rate,
r_frame_rate, sample_rate, channels, nb_frames). Numbers stay as ffprobe writes
them (strings, frame rates as fractions); app.checks.media reads them.
"""

from __future__ import annotations

import json

from app.checks.base import ProbeResult
from app.desktops.base import Guest
from app.probes.registry import prober

FFPROBE_ARGS = [
    "ffprobe",
    "-v",
    "error",
    "-print_format",
    "json",
    "-show_entries",
    "format=duration,size,format_name:stream=index,codec_type,codec_name,width,height,"
    "avg_frame_rate,r_frame_rate,sample_rate,channels,nb_frames,duration",
]


@prober("ffprobe")
async def ffprobe_file(guest: Guest, path: str) -> ProbeResult:
    # A missing file gives an ffprobe error that varies by version: ask first.
    if not await guest.exists(path):
        return ProbeResult.not_found()
    result = await guest.run([*FFPROBE_ARGS, "--", path], timeout=30)
    if not result.ok:
        message = result.stderr.decode("utf-8", "replace").strip()
        return ProbeResult.failure(
            f"ffprobe could not read it: {message or f'exit status {result.returncode}'}"
        )
    try:
        data = json.loads(result.stdout_text())
    except json.JSONDecodeError as exc:
        return ProbeResult.failure(f"ffprobe printed no JSON ({exc})")
    if not isinstance(data, dict):
        return ProbeResult.failure("ffprobe printed JSON that is not an object")
    return ProbeResult(data)
