"""file_size, files_matching and text_file: on plain data, and their probes on a real
local desktop's files."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from app.checks import CheckResult, CheckState, FileState, get_check, run_check
from app.checks.base import Probe, ProbeResult
from app.desktops.local.desktop import LocalDesktop
from app.probes import gather_probe

OUT = "~/Desktop/render.mp4"
FOLDER = "~/Desktop/frames"
RC = "~/.config/GIMP/2.10/gimprc"
GIMPRC = b"""# GIMP gimprc
#
# This is your personal gimprc file.  Any variable defined in this file takes
# precedence over the value defined in the system-wide gimprc.

(default-image
    (width 1920)
    (height 1080))
(max-recent-files 15)
(show-tips no)

# end of gimprc
"""


def check(name: str, state: CheckState, /, **params: Any) -> CheckResult:
    spec = get_check(name)
    return run_check(spec, state, spec.parse_params(params))


def probed(kind: str, path: str, result: ProbeResult) -> CheckState:
    return CheckState(files={}, assets={}, probes={Probe(kind, path): result})


def listing(*entries: tuple[str, str, int]) -> ProbeResult:
    return ProbeResult({"entries": [{"name": n, "type": t, "size": s} for n, t, s in entries]})


# --- file_size ------------------------------------------------------------------------


def test_file_size_within_bounds_passes_and_outside_fails() -> None:
    state = probed(
        "stat", OUT, ProbeResult({"size": 2_000_000, "mtime": 1.0, "type": "regular file"})
    )
    ok = check("file_size", state, path=OUT, min_bytes=1000, max_bytes=5 * 1024 * 1024)
    assert ok.passed and "2000000 bytes (1.91 MiB)" in ok.evidence
    big = check("file_size", state, path=OUT, max_bytes=1_999_999)
    assert not big.passed and "expected in [0, 1999999]" in big.evidence
    small = check("file_size", state, path=OUT, min_bytes=2_000_001)
    assert not small.passed and "≥ 2000001" in small.evidence
    exact = check("file_size", state, path=OUT, min_bytes=2_000_000, max_bytes=2_000_000)
    assert exact.passed


def test_file_size_missing_and_unstatable_files_fail_with_reason() -> None:
    missing = check(
        "file_size", probed("stat", OUT, ProbeResult.not_found()), path=OUT, min_bytes=1
    )
    assert not missing.passed and "does not exist" in missing.evidence
    broken = probed("stat", OUT, ProbeResult.failure("stat failed: EIO"))
    result = check("file_size", broken, path=OUT, min_bytes=1)
    assert not result.passed and "EIO" in result.evidence


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({}, "give min_bytes, max_bytes or both"),
        ({"min_bytes": 10, "max_bytes": 5}, "above max_bytes"),
        ({"min_bytes": -1}, "at least 0"),
    ],
)
def test_file_size_refuses_bad_bounds(params: dict[str, Any], words: str) -> None:
    with pytest.raises(ValidationError, match=words):
        get_check("file_size").parse_params({"path": OUT, **params})


# --- files_matching ---------------------------------------------------------------------


def test_files_matching_counts_regular_files_whose_names_match() -> None:
    state = probed(
        "listdir",
        FOLDER,
        listing(
            ("frame_0001.png", "file", 900),
            ("frame_0002.png", "file", 900),
            ("frame_0003.png", "file", 0),
            ("frame_0004.PNG", "file", 900),  # case-sensitive, as the shell's glob
            ("frame_dir.png", "dir", 4096),
            ("notes.txt", "file", 10),
        ),
    )
    three = check("files_matching", state, folder=FOLDER, pattern="frame_*.png", min_count=3)
    assert three.passed and "3 files match" in three.evidence
    nonempty = check(
        "files_matching", state, folder=FOLDER, pattern="frame_*.png", min_count=3, min_bytes=1
    )
    assert not nonempty.passed and "2 files of ≥ 1 bytes" in nonempty.evidence
    capped = check("files_matching", state, folder=FOLDER, pattern="*.png", max_count=2)
    assert not capped.passed and "expected in [1, 2]" in capped.evidence
    none = check("files_matching", state, folder=FOLDER, pattern="*.jpg")
    assert not none.passed and "0 files match" in none.evidence


def test_files_matching_missing_folder_fails_and_bad_params_are_refused() -> None:
    gone = check(
        "files_matching",
        probed("listdir", FOLDER, ProbeResult.not_found()),
        folder=FOLDER,
        pattern="*",
    )
    assert not gone.passed and "does not exist" in gone.evidence
    with pytest.raises(ValidationError, match="without '/'"):
        get_check("files_matching").parse_params({"folder": FOLDER, "pattern": "a/*.png"})
    with pytest.raises(ValidationError, match="below min_count"):
        get_check("files_matching").parse_params(
            {"folder": FOLDER, "pattern": "*", "min_count": 3, "max_count": 2}
        )


# --- text_file --------------------------------------------------------------------------


def test_text_file_contains_absent_and_matches() -> None:
    state = CheckState(files={RC: FileState.found(RC, GIMPRC)}, assets={})
    ok = check(
        "text_file",
        state,
        path=RC,
        contains=["(max-recent-files 15)"],
        absent=["(max-recent-files 10)"],
        matches=[r"^\(show-tips no\)$"],
    )
    assert ok.passed, ok.evidence
    wrong = check(
        "text_file", state, path=RC, contains=["(max-recent-files 20)"], absent=["show-tips"]
    )
    assert not wrong.passed
    assert "lacks '(max-recent-files 20)'" in wrong.evidence
    assert "contains 'show-tips'" in wrong.evidence
    folded = check("text_file", state, path=RC, contains=["SHOW-TIPS NO"], ignore_case=True)
    assert folded.passed
    unmatched = check("text_file", state, path=RC, matches=[r"^\(max-recent-files 1\)$"])
    assert not unmatched.passed and "no match" in unmatched.evidence


def test_text_file_missing_file_and_bad_params() -> None:
    state = CheckState(files={RC: FileState.missing(RC)}, assets={})
    assert "does not exist" in check("text_file", state, path=RC, contains=["x"]).evidence
    with pytest.raises(ValidationError, match="at least one string"):
        get_check("text_file").parse_params({"path": RC})
    with pytest.raises(ValidationError, match="does not compile"):
        get_check("text_file").parse_params({"path": RC, "matches": ["(unclosed"]})


@pytest.mark.desktop  # runs the real GIMP in batch mode (no display needed)
def test_text_file_on_a_gimprc_gimp_wrote(tmp_path: Path) -> None:
    # gimp-gimprc-set saves the setting into gimprc, as GIMP writes the file.
    subprocess.run(
        ["gimp", "-i", "-b", '(gimp-gimprc-set "max-recent-files" "15")', "-b", "(gimp-quit 0)"],
        env={**os.environ, "HOME": str(tmp_path)},
        cwd=tmp_path,
        check=True,
        capture_output=True,
        timeout=180,
    )
    data = (tmp_path / ".config/GIMP/2.10/gimprc").read_bytes()
    state = CheckState(files={RC: FileState.found(RC, data)}, assets={})
    written = r'^\(max-recent-files "?15"?\)$'
    assert check("text_file", state, path=RC, matches=[written]).passed
    assert not check("text_file", state, path=RC, matches=[written.replace("15", "10")]).passed
    assert check("text_file", state, path=RC, contains=["# GIMP gimprc"]).passed


# --- the probes, on a real desktop's files -------------------------------------------------


@pytest.mark.desktop
async def test_listdir_and_stat_probes_feed_the_checks() -> None:
    async with LocalDesktop() as desktop:
        await desktop.reset()
        guest = desktop.guest
        for index in range(3):
            await guest.write_file(f"{FOLDER}/frame_{index:04d}.png", b"x" * (100 + index))
        await guest.write_file(f"{FOLDER}/odd name with spaces.txt", b"")
        await guest.run(["mkdir", "-p", f"{FOLDER}/sub"])
        found = await gather_probe(guest, Probe("listdir", FOLDER))
        assert found.error is None
        kinds = {e["name"]: (e["type"], e["size"]) for e in found.data["entries"]}
        assert kinds["frame_0002.png"] == ("file", 102)
        assert kinds["odd name with spaces.txt"] == ("file", 0)
        assert kinds["sub"][0] == "dir"
        state = probed("listdir", FOLDER, found)
        assert check(
            "files_matching", state, folder=FOLDER, pattern="frame_*.png", min_count=3
        ).passed
        assert not check(
            "files_matching", state, folder=FOLDER, pattern="*.txt", min_bytes=1
        ).passed
        missing = await gather_probe(guest, Probe("listdir", "~/Desktop/none"))
        assert missing.missing
        size = await gather_probe(guest, Probe("stat", f"{FOLDER}/frame_0001.png"))
        sized = probed("stat", f"{FOLDER}/frame_0001.png", size)
        assert check(
            "file_size", sized, path=f"{FOLDER}/frame_0001.png", min_bytes=101, max_bytes=101
        ).passed
