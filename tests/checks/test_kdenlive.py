"""Kdenlive project checks on projects saved by the real Kdenlive, and media checks on
real renders (melt) read by the real ffprobe; each check has a pass and a near miss.

tests/data/kdenlive/*.kdenlive were saved by Kdenlive 22.12 (tests/data/kdenlive/
capture.py re-makes them): `inserted` is a clip inserted with `v` after a profile
switch; `mix` a same-track mix made with `u`; `showcase` holds effects with
keyframes, a title, a dissolve, guides and renamed/locked/muted tracks.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.checks.base import CheckResult, CheckState, FileState, Probe, ProbeResult
from app.checks.mlt import ProjectError, keyframes, parse_project, to_frames
from app.checks.registry import get_check, run_check
from app.desktops.local.desktop import LocalDesktop
from app.probes import gather_probe
from app.probes.media import FFPROBE_ARGS

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "kdenlive"
ASSETS = ROOT / "tasks" / "kdenlive" / "assets"
P = "~/Videos/edit.kdenlive"


def media_assets_script() -> Any:
    """scripts/make_media_assets.py as a module (scripts/ is not a package)."""
    spec = importlib.util.spec_from_file_location(
        "make_media_assets", ROOT / "scripts" / "make_media_assets.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("make_media_assets", module)  # dataclasses look it up
    spec.loader.exec_module(module)
    return module


def project_state(name: str) -> CheckState:
    return CheckState(files={P: FileState.found(P, (DATA / name).read_bytes())}, assets={})


def check(check_name: str, state: CheckState, **params: Any) -> CheckResult:
    spec = get_check(check_name)
    return run_check(spec, state, spec.parse_params({"path": P, **params}))


SHOWCASE = project_state("showcase.kdenlive")
INSERTED = project_state("inserted.kdenlive")
MIX = project_state("mix.kdenlive")


# --- parsing ---------------------------------------------------------------------------


def test_times_and_keyframes() -> None:
    assert to_frames("00:00:03.960", 25) == 99
    assert to_frames("00:01:00.000", 25) == 1500
    assert to_frames("00:00:01:05", 25) == 30
    assert to_frames("42", 25) == 42
    assert keyframes("00:00:00.000=0;00:00:01.000=1", 25) == [(0, "0"), (25, "1")]
    assert keyframes("0=0.7", 25) == [(0, "0.7")]
    assert keyframes("0.5", 25) == [(0, "0.5")]
    with pytest.raises(ProjectError):
        to_frames("soon", 25)


def test_parses_a_project_saved_by_kdenlive() -> None:
    project = parse_project((DATA / "showcase.kdenlive").read_bytes())
    assert (project.width, project.height, project.fps) == (640, 360, 25.0)
    assert [t.label for t in project.tracks] == ["V2", "V1", "A1", "A2"]
    v1 = project.track("V1")
    assert v1 is not None
    assert [(c.source, c.position, c.in_point, c.length) for c in v1.clips] == [
        ("harbour.mp4", 0, 0, 100),
        ("market.mp4", 100, 10, 50),
    ]
    titles = project.track("Titles")
    assert titles is not None and titles.label == "V2" and titles.locked
    assert titles.clips[0].kind == "title" and titles.clips[0].text == "Harbour Days"
    a2 = project.track("A2")
    assert a2 is not None and a2.muted and not a2.locked
    assert project.length == 265
    assert [g.position for g in project.guides] == [25, 75, 140]


def test_kdenlive_23_chains_read_like_22_12_producers() -> None:
    # Kdenlive 23.04+ writes media clips as <chain> (APP_FORMATS.md §3): rename the
    # media producers of a real 22.12 file and expect the same timeline.
    from lxml import etree

    original = (DATA / "showcase.kdenlive").read_bytes()
    root = etree.fromstring(original)
    renamed = 0
    for element in root:
        props = {p.get("name"): p.text for p in element.iterchildren("property")}
        if element.tag == "producer" and str(props.get("mlt_service", "")).startswith("avformat"):
            element.tag = "chain"
            renamed += 1
    assert renamed > 0
    chains = parse_project(etree.tostring(root))
    assert chains == parse_project(original)


def test_hostile_and_foreign_files_are_refused_with_a_reason() -> None:
    entity = (
        b'<?xml version="1.0"?><!DOCTYPE mlt [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        b'<mlt><profile width="1" height="1" frame_rate_num="25"/>'
        b'<tractor id="t"><property name="kdenlive:track_name">&x;</property></tractor></mlt>'
    )
    project = parse_project(entity)  # parses, but the entity is never expanded
    assert all("root:" not in t.name for t in project.tracks)
    with pytest.raises(ProjectError, match="not well-formed"):
        parse_project(b"<mlt><profile")
    with pytest.raises(ProjectError, match="not <mlt>"):
        parse_project(b"<svg/>")
    state = CheckState(files={P: FileState.found(P, b"\x89PNG\r\n")}, assets={})
    result = check("kdenlive_profile", state, width=640)
    assert not result.passed and "not a readable Kdenlive project" in result.evidence
    missing = CheckState(files={P: FileState.missing(P)}, assets={})
    assert "does not exist" in check("kdenlive_length", missing, frames=1).evidence


# --- checks: a pass and a near miss each ------------------------------------------------


def test_profile() -> None:
    assert check("kdenlive_profile", INSERTED, width=640, height=360, fps=25).passed
    miss = check("kdenlive_profile", INSERTED, width=640, height=360, fps=30)
    assert not miss.passed and "640×360 at 25 fps" in miss.evidence
    assert not check("kdenlive_profile", INSERTED, width=639).passed


def test_track_counts_and_states() -> None:
    assert check("kdenlive_tracks", SHOWCASE, video=2, audio=2).passed
    assert not check("kdenlive_tracks", SHOWCASE, video=3).passed
    assert check("kdenlive_tracks", SHOWCASE, min_video=2, min_audio=1).passed
    fewer = check("kdenlive_tracks", SHOWCASE, min_audio=3)
    assert not fewer.passed and "expected 3 or more audio" in fewer.evidence
    assert check("kdenlive_track", SHOWCASE, track="V2", name="Titles", locked=True).passed
    assert check("kdenlive_track", SHOWCASE, track="A2", muted=True).passed
    assert not check("kdenlive_track", SHOWCASE, track="A1", muted=True).passed
    assert not check("kdenlive_track", INSERTED, track="V2", locked=True).passed
    wrong_kind = check("kdenlive_track", SHOWCASE, track="V1", muted=True)
    assert not wrong_kind.passed and "video track" in wrong_kind.evidence
    assert "no track 'V3'" in check("kdenlive_track", SHOWCASE, track="V3", locked=True).evidence


def test_clips_in_order_with_in_points_and_lengths() -> None:
    clips = [
        {"source": "harbour.mp4", "position": 0, "length": 100},
        {"source": "market*", "position": 100, "in": 10, "length": 50},
    ]
    assert check("kdenlive_clips", SHOWCASE, track="V1", clips=clips).passed
    # One frame short, no tolerance: fails with half credit and says which clip.
    short = [clips[0], {**clips[1], "length": 51}]
    miss = check("kdenlive_clips", SHOWCASE, track="V1", clips=short)
    assert not miss.passed and miss.score == 0.5 and "clip 2: length 50 is not 51" in miss.evidence
    assert check("kdenlive_clips", SHOWCASE, track="V1", clips=short, tolerance=1).passed
    swapped = [clips[1], clips[0]]
    assert not check("kdenlive_clips", SHOWCASE, track="V1", clips=swapped).passed
    # `v` in Kdenlive stores one frame less than the clip: tolerance covers it.
    whole = [{"source": "harbour.mp4", "position": 0, "length": 100}]
    assert not check("kdenlive_clips", INSERTED, track="V1", clips=whole).passed
    assert check("kdenlive_clips", INSERTED, track="V1", clips=whole, tolerance=1).passed
    title = [{"kind": "title", "text": "harbour days", "position": 0, "min_length": 50}]
    assert check("kdenlive_clips", SHOWCASE, track="V2", clips=title, exact=False).passed
    assert not check(
        "kdenlive_clips", SHOWCASE, track="V2", clips=[{**title[0], "text": "Harbor"}], exact=False
    ).passed


def test_clips_on_any_track_when_none_is_named() -> None:
    """Without `track`, the track that holds the clips passes, whichever it is (the
    title is on V2, the footage on V1); otherwise the best track's result is said."""
    footage = [{"source": "harbour.mp4", "position": 0, "length": 100},
               {"source": "market*", "position": 100, "in": 10, "length": 50}]  # fmt: skip
    title = [{"kind": "title", "text": "harbour days", "position": 0, "min_length": 50}]
    assert check("kdenlive_clips", SHOWCASE, clips=footage).passed
    assert check("kdenlive_clips", SHOWCASE, clips=title, exact=False).passed
    assert not check("kdenlive_clips", SHOWCASE, track="V1", clips=title, exact=False).passed
    short = [footage[0], {**footage[1], "length": 51}]
    miss = check("kdenlive_clips", SHOWCASE, clips=short)
    assert not miss.passed and miss.score == 0.5 and "track V1" in miss.evidence


def test_effects_with_keyframes() -> None:
    fade = {"alpha": [[0, 0], [25, 1]]}
    assert check("kdenlive_effect", SHOWCASE, effect="fade_from_black", params=fade).passed
    late = {"alpha": [[0, 0], [50, 1]]}
    assert not check("kdenlive_effect", SHOWCASE, effect="fade_from_black", params=late).passed
    bright = {"Brightness": 0.7}
    assert check(
        "kdenlive_effect", SHOWCASE, effect="frei0r.brightness", clip="sunset.mp4", params=bright
    ).passed
    assert not check(
        "kdenlive_effect", SHOWCASE, effect="frei0r.brightness", params={"Brightness": 0.6}
    ).passed
    wrong_clip = check("kdenlive_effect", SHOWCASE, effect="frei0r.brightness", clip="harbour*")
    assert not wrong_clip.passed and "effects found" in wrong_clip.evidence
    assert not check("kdenlive_effect", INSERTED, effect="fade_from_black").passed


def test_compositions() -> None:
    assert check(
        "kdenlive_composition", SHOWCASE, composition="dissolve|luma", a_track="V1",
        b_track="V2", start=140, end=149,
    ).passed  # fmt: skip
    assert not check("kdenlive_composition", SHOWCASE, composition="dissolve", min_length=11).passed
    assert not check("kdenlive_composition", SHOWCASE, composition="wipe").passed
    assert not check("kdenlive_composition", SHOWCASE, composition="dissolve", start=141).passed


def test_same_track_mix_counts_as_a_composition_on_that_track() -> None:
    # Kdenlive's `u` mix: it extends both clips by the mix length and overlaps them.
    assert check(
        "kdenlive_composition", MIX, composition="dissolve|luma", a_track="V1", b_track="V1",
        start=55, min_length=10,
    ).passed  # fmt: skip
    assert not check("kdenlive_composition", MIX, composition="luma", b_track="V2").passed
    clips = [{"source": "market.mp4", "position": 0}, {"source": "harbour.mp4", "position": 55}]
    assert check("kdenlive_clips", MIX, track="V1", clips=clips).passed
    assert check("kdenlive_length", MIX, frames=155).passed


def test_guides() -> None:
    assert check(
        "kdenlive_guides", SHOWCASE, guides=[{"position": 75, "comment": "harbour"}]
    ).passed
    near = check("kdenlive_guides", SHOWCASE, guides=[{"position": 76}, {"position": 25}])
    assert not near.passed and near.score == 0.5
    assert check("kdenlive_guides", SHOWCASE, guides=[{"position": 76}], tolerance=1).passed
    assert not check("kdenlive_guides", INSERTED, guides=[{"position": 0}]).passed


def test_length() -> None:
    assert check("kdenlive_length", SHOWCASE, frames=265).passed
    assert not check("kdenlive_length", SHOWCASE, frames=266).passed
    assert check("kdenlive_length", INSERTED, seconds=4, tolerance=1).passed


# --- media: real renders, real ffprobe ----------------------------------------------------


@pytest.fixture(scope="module")
def render(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The showcase project rendered by melt at 320×180 (frames 0-49: 2 s)."""
    folder = tmp_path_factory.mktemp("render")
    showcase = media_assets_script().showcase
    for name in ("harbour.mp4", "market.mp4", "sunset.mp4"):
        (folder / name).write_bytes((ASSETS / name).read_bytes())
    (folder / "p.kdenlive").write_text(showcase(), encoding="utf-8")
    out = folder / "out.mp4"
    subprocess.run(
        ["melt", "-quiet", str(folder / "p.kdenlive"), "out=49", "-consumer", f"avformat:{out}",
         "vcodec=libx264", "acodec=aac", "width=320", "height=180", "real_time=-1"],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    return out


def ffprobe_state(path: Path) -> CheckState:
    out = subprocess.run([*FFPROBE_ARGS, "--", str(path)], capture_output=True, check=True)
    probe = Probe("ffprobe", "~/Videos/out.mp4")
    return CheckState(files={}, assets={}, probes={probe: ProbeResult(json.loads(out.stdout))})


def media(state: CheckState, **params: Any) -> CheckResult:
    spec = get_check("media_info")
    return run_check(spec, state, spec.parse_params({"path": "~/Videos/out.mp4", **params}))


def test_media_info_on_a_melt_render(render: Path) -> None:
    state = ffprobe_state(render)
    good = media(state, duration=2.0, width=320, height=180, fps=25, video_codec="h264",
                 audio_codec="aac", audio=True)  # fmt: skip
    assert good.passed, good.evidence
    assert not media(state, width=320, height=181).passed
    assert not media(state, duration=2.2).passed
    assert media(state, duration=2.2, duration_tolerance=0.25).passed
    assert media(state, min_duration=1.9, video_codec="h264").passed
    short = media(state, min_duration=2.5)
    assert not short.passed and "is under 2.5 s" in short.evidence
    assert not media(state, audio=False).passed
    assert not media(state, video_codec="hevc").passed


def test_media_info_on_a_silent_clip_and_failures(tmp_path: Path) -> None:
    silent = tmp_path / "silent.mp4"
    subprocess.run(
        ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "color=c=red:s=64x48:r=30:d=1",
         "-c:v", "libx264", "-pix_fmt", "yuv420p", str(silent)],
        check=True,
    )  # fmt: skip
    state = ffprobe_state(silent)
    assert media(state, audio=False, fps=30, width=64).passed
    no_audio = media(state, audio=True)
    assert not no_audio.passed and "no audio stream" in no_audio.evidence
    probe = Probe("ffprobe", "~/Videos/out.mp4")
    gone = CheckState(files={}, assets={}, probes={probe: ProbeResult.not_found()})
    assert "does not exist" in media(gone, audio=True).evidence


@pytest.mark.desktop
async def test_ffprobe_prober_in_a_real_guest(render: Path) -> None:
    async with LocalDesktop() as desktop:
        await desktop.reset()
        await desktop.guest.write_file("~/Videos/out.mp4", render.read_bytes())
        await desktop.guest.write_file("~/Videos/bad.mp4", b"not a video")
        found = await gather_probe(desktop.guest, Probe("ffprobe", "~/Videos/out.mp4"))
        assert found.error is None
        video = [s for s in found.data["streams"] if s["codec_type"] == "video"]
        assert video[0]["width"] == 320
        missing = await gather_probe(desktop.guest, Probe("ffprobe", "~/Videos/none.mp4"))
        assert missing.error == "not found"
        bad = await gather_probe(desktop.guest, Probe("ffprobe", "~/Videos/bad.mp4"))
        assert bad.error is not None and "ffprobe could not read it" in bad.error


def test_media_assets_match_their_generator() -> None:
    out = subprocess.run(
        [sys.executable, "scripts/make_media_assets.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_asset_check_detects_a_changed_project(tmp_path: Path) -> None:
    changed = tmp_path / "assets"
    subprocess.run(
        [sys.executable, "scripts/make_media_assets.py", "--out", str(changed)],
        cwd=ROOT, check=True, capture_output=True,
    )  # fmt: skip
    project = changed / "rough-cut.kdenlive"
    project.write_text(project.read_text().replace("market.mp4", "sunset.mp4"))
    out = subprocess.run(
        [sys.executable, "scripts/make_media_assets.py", "--check", "--out", str(changed)],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert out.returncode == 1 and "differs:" in out.stdout and "rough-cut" in out.stdout
