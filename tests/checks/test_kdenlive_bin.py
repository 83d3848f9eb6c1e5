"""kdenlive_bin, kdenlive_groups and kdenlive_proxy on projects saved by the real
Kdenlive (tests/data/kdenlive/capture.py made each): showcase (a title and three clips
in the bin), mix (sunset.mp4 in the bin but not on the timeline), inserted (one A/V clip:
an AVSplit group Kdenlive made itself) and grouped (proxies on, three A/V clips grouped
by the user with ctrl+g)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from app.checks import CheckResult, CheckState, FileState, get_check, run_check
from app.checks.kdenlive_bin import read_bin
from app.checks.mlt import parse_project

DATA = Path(__file__).resolve().parents[1] / "data" / "kdenlive"
PATH = "~/Videos/project.kdenlive"


def run(name: str, project: str | bytes, **params: Any) -> CheckResult:
    data = project if isinstance(project, bytes) else (DATA / f"{project}.kdenlive").read_bytes()
    spec = get_check(name)
    state = CheckState(files={PATH: FileState.found(PATH, data)}, assets={})
    return run_check(spec, state, spec.parse_params({"path": PATH, **params}))


def test_bin_lists_clips_by_file_and_shown_name() -> None:
    ok = run("kdenlive_bin", "showcase", present=["harbour.mp4", "Opening title"], min_count=4)
    assert ok.passed, ok.evidence
    assert "4 clips: Opening title, harbour.mp4, market.mp4, sunset.mp4" in ok.evidence
    gone = run("kdenlive_bin", "showcase", absent=["sunset.mp4"])
    assert not gone.passed and "'sunset.mp4' is still there" in gone.evidence
    missing = run("kdenlive_bin", "inserted", present=["market.mp4"], max_count=1)
    assert not missing.passed and "no 'market.mp4'" in missing.evidence
    assert run("kdenlive_bin", "inserted", absent=["market.mp4"], max_count=1).passed


def test_a_clip_only_in_the_bin_is_in_the_bin_not_on_the_timeline() -> None:
    data = (DATA / "mix.kdenlive").read_bytes()
    on_timeline = {c.name for t in parse_project(data).tracks for c in t.clips}
    assert "sunset.mp4" not in on_timeline
    assert run("kdenlive_bin", "mix", present=["sunset.mp4"]).passed


def test_groups_made_by_the_user_count_and_kdenlives_own_do_not() -> None:
    user = run("kdenlive_groups", "grouped")
    assert user.passed, user.evidence
    assert "1 Normal groups of ≥ 2 clips" in user.evidence and "Normal of 6" in user.evidence
    # One inserted A/V clip: Kdenlive ties its halves in an AVSplit group; no user group.
    auto = run("kdenlive_groups", "inserted")
    assert not auto.passed and "AVSplit of 2" in auto.evidence
    assert run("kdenlive_groups", "inserted", group_type="AVSplit").passed
    assert not run("kdenlive_groups", "grouped", min_clips=7).passed
    assert not run("kdenlive_groups", "grouped", max_groups=0, min_groups=0).passed
    assert not run("kdenlive_groups", "showcase", group_type="any").passed


def test_proxy_settings_as_kdenlive_saves_them() -> None:
    on = run("kdenlive_proxy", "grouped", enabled=True, generate=True, min_size=800)
    assert on.passed, on.evidence
    off = run("kdenlive_proxy", "showcase", enabled=True)
    assert not off.passed and "enabled False, expected True ✗" in off.evidence
    assert run("kdenlive_proxy", "showcase", enabled=False, min_size=1000).passed
    assert not run("kdenlive_proxy", "grouped", images=True).passed


def test_unreadable_projects_fail_with_the_reason() -> None:
    assert "not well-formed XML" in run("kdenlive_bin", b"<mlt", present=["x"]).evidence
    no_bin = b'<mlt><profile width="1" height="1" frame_rate_num="25"/></mlt>'
    assert "no main_bin" in run("kdenlive_proxy", no_bin, enabled=True).evidence
    with pytest.raises(ValidationError, match="give present, absent, min_count or max_count"):
        get_check("kdenlive_bin").parse_params({"path": PATH})
    with pytest.raises(ValidationError, match="give enabled, generate, min_size or images"):
        get_check("kdenlive_proxy").parse_params({"path": PATH})


def test_the_reader_sees_every_real_project() -> None:
    for name in ("showcase", "mix", "inserted", "grouped"):
        state = read_bin((DATA / f"{name}.kdenlive").read_bytes())
        assert state.clips and state.settings["proxyminsize"].isdigit()
