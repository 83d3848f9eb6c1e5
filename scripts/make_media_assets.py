"""Generate the Kdenlive task assets: short clips, a voice-over, and start projects.

Clips are made with ffmpeg's lavfi test sources (testsrc2, smptehdbars, colour)
with drawtext labels and sine tones; the voice-over with espeak-ng. Start
projects are Kdenlive 22.12 project XML written from a template (`kdenlive_xml`),
in the layout Kdenlive itself saves (APP_FORMATS.md §3), so Kdenlive opens them
without questions.

Run: .venv/bin/python scripts/make_media_assets.py [--check]
With --check, regenerate into a temporary folder and fail when a committed asset
differs: media files by their ffprobe properties (encoders need not be
bit-identical across builds), projects byte for byte.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

import yaml

ROOT = Path(__file__).resolve().parent.parent
KDENLIVE_ASSETS = ROOT / "tasks" / "kdenlive" / "assets"
FPS = 25
WIDTH, HEIGHT = 640, 360


# --- media -------------------------------------------------------------------------


def _ffmpeg(args: list[str], out: Path) -> None:
    subprocess.run(
        [
            "ffmpeg",
            "-v",
            "error",
            "-y",
            *args,
            "-map_metadata",
            "-1",
            "-fflags",
            "+bitexact",
            str(out),
        ],
        check=True,
    )


def _shot(source: str, label: str, seconds: int, tone: int) -> Callable[[Path], None]:
    def make(out: Path) -> None:
        video = (
            f"{source}{':' if '=' in source else '='}s={WIDTH}x{HEIGHT}:r={FPS}:d={seconds},"
            f"drawtext=text='{label}':fontsize=44:fontcolor=white:box=1:"
            "boxcolor=black@0.6:boxborderw=8:x=30:y=30"
        )
        _ffmpeg(
            [
                "-f", "lavfi", "-i", video,
                "-f", "lavfi", "-i", f"sine=f={tone}:d={seconds}:r=48000",
                "-c:v", "libx264", "-preset", "veryfast", "-crf", "30", "-pix_fmt", "yuv420p",
                "-flags:v", "+bitexact", "-c:a", "aac", "-b:a", "64k", "-ac", "2", "-shortest",
            ],
            out,
        )  # fmt: skip

    return make


def voice(out: Path) -> None:
    """A spoken line (espeak-ng, 22.05 kHz mono WAV)."""
    subprocess.run(
        [
            "espeak-ng", "-v", "en-us", "-s", "150", "-w", str(out),
            "Welcome to the harbour. The boats leave at nine.",
        ],
        check=True,
    )  # fmt: skip


MEDIA: dict[str, Callable[[Path], None]] = {
    "harbour.mp4": _shot("testsrc2", "HARBOUR", 4, 440),
    "market.mp4": _shot("smptehdbars", "MARKET", 3, 660),
    "sunset.mp4": _shot("color=c=0xd06020", "SUNSET", 5, 330),
    "voice.wav": voice,
}
"""Media assets by file name; the lengths (frames at 25 fps) are 100, 75, 125."""

CLIP_FRAMES = {"harbour.mp4": 100, "market.mp4": 75, "sunset.mp4": 125}
"""The shots every project's bin holds."""
AUDIO_FRAMES = {"voice.wav": 90}
"""Audio-only clips (3.6 s), in a project's bin only when it uses them."""
CLIP_LENGTHS: dict[str, int] = {}
"""Lengths of the clips in the project being written (media plus titles)."""


# --- Kdenlive projects -----------------------------------------------------------------


@dataclass(frozen=True)
class EffectSpec:
    """A clip effect as Kdenlive stores it: its id, MLT service and properties."""

    kdenlive_id: str
    service: str
    params: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Placed:
    """A bin clip (or a title, when `title` is set) placed on a track."""

    clip: str
    position: int
    in_point: int = 0
    length: int | None = None
    effects: tuple[EffectSpec, ...] = ()
    title: str | None = None


@dataclass(frozen=True)
class CompositionSpec:
    """A composition between two video tracks (1 = V1), inclusive frames."""

    kdenlive_id: str
    service: str
    a_track: int
    b_track: int
    start: int
    end: int
    params: tuple[tuple[str, str], ...] = ()


@dataclass
class ProjectSpec:
    video: list[list[Placed]] = field(default_factory=lambda: [[], []])
    """V1, V2, ... (bottom to top)."""
    audio: list[list[Placed]] = field(default_factory=lambda: [[], []])
    """A1, A2, ... (A1 nearest the video tracks)."""
    guides: list[tuple[int, str]] = field(default_factory=list)
    compositions: list[CompositionSpec] = field(default_factory=list)
    locked: set[str] = field(default_factory=set)
    """Track labels ('V1', 'A2') that are locked."""
    off: set[str] = field(default_factory=set)
    """Video track labels that are hidden, audio track labels that are muted."""
    names: dict[str, str] = field(default_factory=dict)
    """Custom track names by label."""


def title_xml(text: str, frames: int) -> str:
    """A Kdenlive title: white text, centred low in the frame, transparent background."""
    return (
        f'<kdenlivetitle duration="{frames}" LC_NUMERIC="C" width="{WIDTH}" height="{HEIGHT}" '
        f'out="{frames - 1}">\n <item type="QGraphicsTextItem" z-index="0">\n'
        '  <position x="60" y="250"><transform>1,0,0,0,1,0,0,0,1</transform></position>\n'
        '  <content font-underline="0" box-height="60" font-outline-color="0,0,0,255" '
        'font="DejaVu Sans" letter-spacing="0" font-pixel-size="44" font-italic="0" '
        'typewriter="0;2;1;0;0" alignment="1" font-weight="63" font-outline="2" '
        'box-width="520" font-color="255,255,255,255" shadow="0;#64000000;3;3;3" '
        f'tab-width="80" line-spacing="0">{escape(text)}</content>\n </item>\n'
        f' <startviewport rect="0,0,{WIDTH},{HEIGHT}"/>\n'
        f' <endviewport rect="0,0,{WIDTH},{HEIGHT}"/>\n'
        ' <background color="0,0,0,0"/>\n</kdenlivetitle>\n'
    )


def _clock(frames: int) -> str:
    seconds = frames / FPS
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{int(hours):02d}:{int(minutes):02d}:{secs:06.3f}"


def _props(props: dict[str, str], indent: str) -> str:
    return "".join(
        f"{indent}<property name={quoteattr(k)}>{escape(v)}</property>\n" for k, v in props.items()
    )


def kdenlive_xml(spec: ProjectSpec) -> str:
    """A Kdenlive 22.12 project (MLT XML) for a 640×360 25 fps timeline.

    Resources are relative file names: Kdenlive resolves them against the folder
    the project is opened from, which is where the task uploads the clips.
    """
    clips = sorted(
        {p.clip for track in (*spec.video, *spec.audio) for p in track} | set(CLIP_FRAMES)
    )
    CLIP_LENGTHS.clear()
    CLIP_LENGTHS.update(CLIP_FRAMES)
    CLIP_LENGTHS.update(AUDIO_FRAMES)
    bin_ids = {name: str(n) for n, name in enumerate(clips, 2)}
    out: list[str] = [
        "<?xml version='1.0' encoding='utf-8'?>\n",
        '<mlt LC_NUMERIC="C" producer="main_bin" version="7.12.0">\n',
        f' <profile frame_rate_num="{FPS}" sample_aspect_num="1" display_aspect_den="9" '
        f'colorspace="601" progressive="1" description="{WIDTH}x{HEIGHT} {FPS}.00fps" '
        f'display_aspect_num="16" frame_rate_den="1" width="{WIDTH}" height="{HEIGHT}" '
        'sample_aspect_den="1"/>\n',
    ]

    titles = {p.clip: p for track in spec.video for p in track if p.title is not None}
    for name, placed in titles.items():
        CLIP_LENGTHS[name] = placed.length or 125

    def clip_props(name: str) -> dict[str, str]:
        if name in titles:
            frames = CLIP_LENGTHS[name]
            return {
                "length": str(frames),
                "eof": "pause",
                "resource": "",
                "mlt_service": "kdenlivetitle",
                "xmldata": title_xml(titles[name].title or "", frames),
                "kdenlive:clipname": name,
                "kdenlive:clip_type": "2",
                "kdenlive:duration": _clock(frames),
                "kdenlive:folderid": "-1",
                "kdenlive:id": bin_ids[name],
            }
        return {
            "length": str(CLIP_LENGTHS[name]),
            "eof": "pause",
            "resource": name,
            "mlt_service": "avformat-novalidate",
            "kdenlive:clipname": "",
            "kdenlive:clip_type": "1" if name in AUDIO_FRAMES else "0",
            "kdenlive:folderid": "-1",
            "kdenlive:id": bin_ids[name],
        }

    for n, name in enumerate(clips):
        out.append(
            f' <producer id="bin{n}" in="{_clock(0)}" out="{_clock(CLIP_LENGTHS[name] - 1)}">\n'
        )
        out.append(_props(clip_props(name), "  ") + " </producer>\n")
    guides = [{"comment": c, "pos": p, "type": 0} for p, c in spec.guides]
    docprops = {
        "kdenlive:docproperties.version": "1.04",
        "kdenlive:docproperties.kdenliveversion": "22.12.3",
        "kdenlive:docproperties.audioChannels": "2",
        "kdenlive:docproperties.guides": json.dumps(guides),
        "xml_retain": "1",
    }
    out.append(' <playlist id="main_bin">\n' + _props(docprops, "  "))
    for n, _ in enumerate(clips):
        out.append(f'  <entry producer="bin{n}"/>\n')
    out.append(" </playlist>\n")
    out.append(
        ' <producer id="black_track" in="00:00:00.000" out="00:20:00.000">\n'
        + _props(
            {
                "length": "2147483647",
                "eof": "continue",
                "resource": "black",
                "mlt_service": "color",
                "mlt_image_format": "rgba",
                "set.test_audio": "0",
            },
            "  ",
        )
        + " </producer>\n"
    )
    # Main tractor order is bottom to top: A_n .. A1, V1 .. V_n.
    ordered = [("audio", t) for t in reversed(spec.audio)] + [("video", t) for t in spec.video]
    copy = 0
    for n, (kind, track) in enumerate(ordered):
        audio = kind == "audio"
        entries: list[str] = []
        cursor = 0
        for item in sorted(track, key=lambda p: p.position):
            if item.position > cursor:
                entries.append(f'  <blank length="{_clock(item.position - cursor)}"/>\n')
            length = item.length or CLIP_LENGTHS[item.clip] - item.in_point
            props = clip_props(item.clip) | {
                "set.test_audio": "0" if audio else "1",
                "set.test_image": "1" if audio else "0",
            }
            out.append(
                f' <producer id="copy{copy}" in="{_clock(0)}" '
                f'out="{_clock(CLIP_LENGTHS[item.clip] - 1)}">\n'
                + _props(props, "  ")
                + " </producer>\n"
            )
            entries.append(
                f'  <entry producer="copy{copy}" in="{_clock(item.in_point)}" '
                f'out="{_clock(item.in_point + length - 1)}">\n'
                f'   <property name="kdenlive:id">{bin_ids[item.clip]}</property>\n'
                + "".join(_effect(e, copy, k) for k, e in enumerate(item.effects))
                + "  </entry>\n"
            )
            copy += 1
            cursor = item.position + length
        label = f"A{len(spec.audio) - n}" if audio else f"V{n - len(spec.audio) + 1}"
        flag = '  <property name="kdenlive:audio_track">1</property>\n' if audio else ""
        out.append(f' <playlist id="pl{n}a">\n{flag}{"".join(entries)} </playlist>\n')
        out.append(f' <playlist id="pl{n}b">\n{flag} </playlist>\n')
        hide = "both" if label in spec.off else ("video" if audio else "audio")
        track_props = {"kdenlive:trackheight": "69", "kdenlive:timeline_active": "1",
                       "kdenlive:collapsed": "0"}  # fmt: skip
        if label in spec.locked:
            track_props["kdenlive:locked_track"] = "1"
        if label in spec.names:
            track_props["kdenlive:track_name"] = spec.names[label]
        out.append(
            f' <tractor id="track{n}" in="00:00:00.000">\n{flag}'
            + _props(track_props, "  ")
            + f'  <track hide="{hide}" producer="pl{n}a"/>\n'
            f'  <track hide="{hide}" producer="pl{n}b"/>\n </tractor>\n'
        )
    out.append(' <tractor id="main" in="00:00:00.000" out="00:20:00.000">\n')
    out.append('  <track producer="black_track"/>\n')
    out.extend(f'  <track producer="track{n}"/>\n' for n in range(len(ordered)))
    for n, (kind, _) in enumerate(ordered, 1):
        service = "mix" if kind == "audio" else "qtblend"
        extra = (
            {"always_active": "1", "accepts_blanks": "1", "sum": "1"}
            if kind == "audio"
            else {"compositing": "0", "distort": "0", "rotate_center": "0", "always_active": "1"}
        )
        props = {"a_track": "0", "b_track": str(n), "mlt_service": service,
                 "kdenlive_id": service, "internal_added": "237"} | extra  # fmt: skip
        out.append(
            f'  <transition id="internal{n}">\n' + _props(props, "   ") + "  </transition>\n"
        )
    for k, comp in enumerate(spec.compositions):
        props = {
            "a_track": str(len(spec.audio) + comp.a_track),
            "b_track": str(len(spec.audio) + comp.b_track),
            "mlt_service": comp.service,
            "kdenlive_id": comp.kdenlive_id,
            **dict(comp.params),
        }
        out.append(
            f'  <transition id="comp{k}" in="{_clock(comp.start)}" out="{_clock(comp.end)}">\n'
            + _props(props, "   ")
            + "  </transition>\n"
        )
    out.append(" </tractor>\n</mlt>\n")
    return "".join(out)


def _effect(effect: EffectSpec, clip: int, n: int) -> str:
    props = {
        "mlt_service": effect.service,
        "kdenlive_id": effect.kdenlive_id,
        **dict(effect.params),
    }
    return f'   <filter id="fx{clip}_{n}">\n' + _props(props, "    ") + "   </filter>\n"


def rough_cut() -> str:
    """Three shots back to back on V1 (and their sound on A1), in the wrong order."""
    v1 = [Placed("market.mp4", 0), Placed("harbour.mp4", 75), Placed("sunset.mp4", 175)]
    a1 = list(v1)
    return kdenlive_xml(ProjectSpec(video=[v1, []], audio=[a1, []]))


def titled() -> str:
    """The rough cut with a title ("Harbour Days") on V2 over the harbour shot."""
    v1 = [Placed("market.mp4", 0), Placed("harbour.mp4", 75), Placed("sunset.mp4", 175)]
    v2 = [Placed("Harbour title", 75, length=50, title="Harbour Days")]
    a1 = [Placed(p.clip, p.position) for p in v1]
    return kdenlive_xml(ProjectSpec(video=[v1, v2], audio=[a1, []]))


def empty_project() -> str:
    """An empty timeline with the three shots in the project bin."""
    return kdenlive_xml(ProjectSpec())


def showcase() -> str:
    """Every feature the Kdenlive checks read: effects with keyframes, a title, a
    dissolve, guides, a renamed, a locked and a muted track (tests/data/kdenlive)."""
    fade = EffectSpec(
        "fade_from_black",
        "brightness",
        (("alpha", "00:00:00.000=0;00:00:01.000=1"), ("level", "1"), ("start", "1")),
    )
    bright = EffectSpec("frei0r.brightness", "frei0r.brightness", (("Brightness", "0.7"),))
    v1 = [
        Placed("harbour.mp4", 0, effects=(fade,)),
        Placed("market.mp4", 100, in_point=10, length=50),
    ]
    v2 = [
        Placed("Opening title", 0, length=50, title="Harbour Days"),
        Placed("sunset.mp4", 140, effects=(bright,)),
    ]
    dissolve = CompositionSpec("dissolve", "luma", 1, 2, 140, 149, (("softness", "0"),))
    return kdenlive_xml(
        ProjectSpec(
            video=[v1, v2],
            audio=[[Placed(p.clip, p.position, p.in_point, p.length) for p in v1], []],
            guides=[(25, "Boats"), (140, "Sunset")],
            compositions=[dissolve],
            locked={"V2"},
            off={"A2"},
            names={"V2": "Titles"},
        )
    )


PROMO_FRAMES = 290
"""Length of the L3 promo: harbour 100 + market 75 + sunset 125 - 10 frames of dissolve."""


def promo() -> str:
    """The L3 delivery's end state (tasks/kdenlive/kdenlive-promo-delivery.yaml):
    harbour then market on V1, a title over the first 2 s and the sunset shot on V2,
    the sunset dissolving in over the last 10 frames of the market shot."""
    v1 = [Placed("harbour.mp4", 0), Placed("market.mp4", 100)]
    v2 = [
        Placed("Promo title", 0, length=50, title="Harbour Days"),
        Placed("sunset.mp4", 165),
    ]
    a1 = [Placed("harbour.mp4", 0), Placed("market.mp4", 100)]
    a2 = [Placed("sunset.mp4", 165)]
    dissolve = CompositionSpec("dissolve", "luma", 1, 2, 165, 174, (("softness", "0"),))
    return kdenlive_xml(ProjectSpec(video=[v1, v2], audio=[a1, a2], compositions=[dissolve]))


_ORACLE = (
    "import os, subprocess, sys; "
    "project, xml, video = sys.argv[1:4]; "
    "open(project, 'w', encoding='utf-8').write(xml); "
    "subprocess.run(['melt', '-quiet', project, 'out=%d', '-consumer', 'avformat:' + video, "
    "'vcodec=libx264', 'acodec=aac', 'width=640', 'height=360', 'real_time=-1'], check=True)"
)


def oracle_reference(task: str, start_title: str, project: str, video: str, frames: int) -> str:
    """A state-level oracle reference: write the finished project, render it with melt."""
    steps = [
        {"wait_for": {"window": f"^{start_title} / .*Kdenlive$", "timeout": 60}},
        {
            "oracle": {
                "run": [
                    "python3", "-c", _ORACLE % (frames - 1),
                    f"~/Videos/{project}", PROJECT_BUILDERS[project](), f"~/Videos/{video}",
                ],
                "timeout": 300,
            }
        },
        {"wait_for": {"file": f"~/Videos/{video}", "timeout": 30}},
        "done",
    ]  # fmt: skip
    head = (
        f"# Reference for {task}, written by scripts/make_media_assets.py:\n"
        "# a state-level oracle. The end-state project is MLT XML from the same template\n"
        "# as the start projects; melt (MLT's own renderer) renders it through the guest.\n"
    )
    body = {"kind": "oracle", "description": "Write the finished project and render it with melt.",
            "steps": steps}  # fmt: skip
    return head + yaml.safe_dump(body, sort_keys=False, width=100, allow_unicode=True)


ANNOUNCEMENT_FRAMES = 225
"""Length of the L3 announcement: harbour 100 + sunset 125."""


def announcement() -> str:
    """The end state of tasks/kdenlive/kdenlive-voiceover-delivery.yaml: harbour then
    sunset on V1, a fade from black over the first second, the shots' sound muted
    (A1), the voice-over on A2 from 1 s, and a guide where it starts."""
    fade = EffectSpec(
        "fade_from_black",
        "brightness",
        (("alpha", "00:00:00.000=0;00:00:01.000=1"), ("level", "1"), ("start", "1")),
    )
    v1 = [Placed("harbour.mp4", 0, effects=(fade,)), Placed("sunset.mp4", 100)]
    a1 = [Placed("harbour.mp4", 0), Placed("sunset.mp4", 100)]
    a2 = [Placed("voice.wav", 25)]
    return kdenlive_xml(
        ProjectSpec(video=[v1, []], audio=[a1, a2], guides=[(25, "Voice")], off={"A1"})
    )


PROJECT_BUILDERS: dict[str, Callable[[], str]] = {
    "promo.kdenlive": promo,
    "announcement.kdenlive": announcement,
}
"""End-state projects the oracle references write, by guest file name."""


PROJECTS: dict[str, Callable[[], str]] = {
    "rough-cut.kdenlive": rough_cut,
    "empty.kdenlive": empty_project,
    "titled.kdenlive": titled,
}

REFERENCES: dict[str, Callable[[], str]] = {
    "kdenlive-promo-delivery.yaml": lambda: oracle_reference(
        "kdenlive-promo-delivery", "empty", "promo.kdenlive", "promo.mp4", PROMO_FRAMES
    ),
    "kdenlive-voiceover-delivery.yaml": lambda: oracle_reference(
        "kdenlive-voiceover-delivery",
        "empty",
        "announcement.kdenlive",
        "announcement.mp4",
        ANNOUNCEMENT_FRAMES,
    ),
}
"""Generated reference solutions, written to tasks/kdenlive/references/."""
KDENLIVE_REFERENCES = KDENLIVE_ASSETS.parent / "references"


# --- driver -------------------------------------------------------------------------

PROBE_FIELDS = (
    "format=duration:stream=codec_type,codec_name,width,height,avg_frame_rate,"
    "sample_rate,channels,nb_frames"
)


def media_properties(path: Path) -> dict[str, object]:
    """What --check compares for a media file: ffprobe's streams and duration."""
    out = subprocess.run(
        [
            "ffprobe",
            "-v",
            "error",
            "-print_format",
            "json",
            "-show_entries",
            PROBE_FIELDS,
            str(path),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    data: dict[str, object] = json.loads(out.stdout)
    data.pop("programs", None)
    return data


def generate(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, make in MEDIA.items():
        make(folder / name)
    for name, build in PROJECTS.items():
        (folder / name).write_text(build(), encoding="utf-8")
    references = folder.parent / "references"
    references.mkdir(exist_ok=True)
    for name, build in REFERENCES.items():
        (references / name).write_text(build(), encoding="utf-8")


def check(folder: Path) -> list[str]:
    """Names of committed assets that differ from a fresh generation."""
    differs = []
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "assets"
        generate(fresh)
        for name in [*MEDIA, *PROJECTS]:
            committed = folder / name
            rel = committed.relative_to(ROOT) if committed.is_relative_to(ROOT) else committed
            if not committed.is_file():
                differs.append(f"missing: {rel}")
            elif name in PROJECTS:
                if committed.read_bytes() != (fresh / name).read_bytes():
                    differs.append(f"differs: {rel}")
            elif media_properties(committed) != media_properties(fresh / name):
                differs.append(f"differs: {rel}")
        for name in REFERENCES:
            committed = folder.parent / "references" / name
            fresh_ref = fresh.parent / "references" / name
            if not committed.is_file() or committed.read_bytes() != fresh_ref.read_bytes():
                shown = committed.relative_to(ROOT) if committed.is_relative_to(ROOT) else committed
                differs.append(f"differs: {shown}")
    return differs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    parser.add_argument("--out", type=Path, default=KDENLIVE_ASSETS, help="asset folder")
    args = parser.parse_args()
    for tool in ("ffmpeg", "ffprobe", "espeak-ng"):
        if shutil.which(tool) is None:
            print(f"{tool} is not installed (scripts/setup.sh installs it)")
            return 2
    if args.check:
        differs = check(args.out)
        for line in differs:
            print(line)
        return 1 if differs else 0
    generate(args.out)
    for name in [*MEDIA, *PROJECTS]:
        print(f"wrote {args.out / name} ({(args.out / name).stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
