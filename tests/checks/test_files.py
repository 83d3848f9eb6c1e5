"""The file checks (app/checks/files.py): file_exists, file_not_exists,
file_modified_after_start, and the file states they read."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from app.checks import (
    CheckState,
    FileState,
    get_check,
    run_check,
)
from app.checks.base import Probe, ProbeResult
from app.checks.files import FileExistsParams
from app.core.errors import FileTooLarge, GuestError
from app.episode.scoring import score_task
from app.tasks.loader import load_task
from tests.checks.helpers import OUT, check, state_with

# --- file_exists --------------------------------------------------------------------


def test_file_exists_passes_for_a_found_file_even_when_empty() -> None:
    result = check("file_exists", state_with({OUT: b""}), path=OUT)
    assert result.passed and result.score == 1.0
    assert result.evidence == f"{OUT} exists (0 bytes)"


def test_file_exists_fails_for_a_missing_file() -> None:
    result = check("file_exists", state_with({OUT: FileState.missing(OUT)}), path=OUT)
    assert not result.passed and result.score == 0.0
    assert result.evidence == f"{OUT} does not exist"


def test_file_exists_passes_for_a_file_too_large_to_fetch() -> None:
    state = state_with({OUT: FileState.too_large(OUT, "64 MiB")})
    result = check("file_exists", state, path=OUT)
    assert result.passed
    assert "larger than 64 MiB" in result.evidence


class BigFileGuest:
    """A guest whose files exist and cannot be read: too large, or refused."""

    home = "/home/user"

    def __init__(self, error: GuestError) -> None:
        self.error = error

    async def exists(self, path: str) -> bool:
        return True

    async def read_file(self, path: str, max_bytes: int = 64 * 1024 * 1024) -> bytes:
        raise self.error


SIZE_TASK = """\
id: big-file
app: gimp
level: L1
title: Export a picture
instruction: Export the picture to ~/Desktop/out.png.
budget: {steps: 5, seconds: 60}
evaluate:
  all:
    - {check: file_exists, path: ~/Desktop/out.png}
    - {check: image_size, path: ~/Desktop/out.png, width: 512, height: 512}
"""


async def test_a_file_too_large_to_read_is_typed_and_fails_with_its_size(
    tmp_path: Path,
) -> None:
    (tmp_path / "big-file.yaml").write_text(SIZE_TASK)
    task = load_task(tmp_path / "big-file.yaml")
    limit = 64 * 1024 * 1024
    # The guest's words say nothing of "larger than": scoring goes by the error's type.
    too_large = FileTooLarge(
        "out.png is 70000000 bytes, over the limit", size=70_000_000, limit=limit
    )
    score = await score_task(task, BigFileGuest(too_large))  # type: ignore[arg-type]
    exists, size = score.checks
    assert exists.passed and "70000000 bytes, larger than 64 MiB" in exists.evidence
    assert not size.passed and not score.passed
    assert size.evidence == f"{OUT} could not be read (70000000 bytes, larger than 64 MiB)"
    # Any other guest error leaves the file's existence unknown.
    refused = await score_task(task, BigFileGuest(GuestError("permission denied")))  # type: ignore[arg-type]
    assert [c.passed for c in refused.checks] == [False, False]
    assert "unreadable: permission denied" in refused.checks[1].evidence


@pytest.mark.parametrize(
    "state",
    [
        state_with({OUT: FileState.unreadable(OUT, "permission denied")}),
        state_with({}),  # scoring did not gather the file at all
    ],
)
def test_file_exists_fails_when_existence_is_unknown(state: CheckState) -> None:
    result = check("file_exists", state, path=OUT)
    assert not result.passed
    assert result.evidence.startswith(f"could not tell whether {OUT} exists")


def test_file_state_requires_exactly_one_of_data_and_error() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        FileState(path=OUT, data=b"x", error="not found")
    with pytest.raises(ValueError, match="exactly one"):
        FileState(path=OUT, data=None, error=None)
    # The words alone do not make a missing file: checks decide on the problem.
    with pytest.raises(ValueError, match="needs its problem"):
        FileState(path=OUT, data=None, error="not found")


@pytest.mark.parametrize("path", ["out.png", "Desktop/out.png", "~", "~/", "/", ""])
def test_guest_paths_must_be_absolute_or_home_relative(path: str) -> None:
    with pytest.raises(ValidationError, match="guest path"):
        FileExistsParams.model_validate({"path": path})


# --- file_not_exists and file_modified_after_start ------------------------------------


def test_file_not_exists_passes_only_when_the_guest_says_missing() -> None:
    assert check("file_not_exists", state_with({OUT: FileState.missing(OUT)}), path=OUT).passed
    present = check("file_not_exists", state_with({OUT: b"abc"}), path=OUT)
    assert not present.passed and present.evidence == f"{OUT} exists (3 bytes)"
    unknown = check("file_not_exists", state_with({}), path=OUT)
    assert not unknown.passed and unknown.evidence.startswith("could not tell")


def stat_state(
    mtime: float | None, started_at: float | None, error: str | None = None
) -> CheckState:
    probe = Probe("stat", OUT)
    result = (
        ProbeResult.not_found()
        if error == "missing"
        else ProbeResult.failure(error)
        if error
        else ProbeResult({"size": 3, "mtime": mtime, "type": "regular file"})
    )
    return CheckState(files={}, assets={}, probes={probe: result}, started_at=started_at)


def test_file_modified_after_start_compares_mtime_with_the_episode_start() -> None:
    spec = get_check("file_modified_after_start")
    params = spec.parse_params({"path": OUT})
    assert spec.probes(params) == [Probe("stat", OUT)]
    after = run_check(spec, stat_state(1000.5, 1000.0), params)
    assert after.passed and after.evidence == f"{OUT} was modified 0.5 s after the episode started"
    before = run_check(spec, stat_state(999.0, 1000.0), params)  # written by setup
    assert not before.passed and "1.0 s before" in before.evidence


@pytest.mark.parametrize(
    ("state", "message"),
    [
        (stat_state(1001.0, None), "start time is unknown"),
        (stat_state(None, 1000.0, error="missing"), "does not exist"),
        (stat_state(None, 1000.0, error="stat failed: EIO"), "could not stat"),
        # Only the probe's flag says missing, not its words.
        (stat_state(None, 1000.0, error="not found"), "could not stat"),
        (CheckState(files={}, assets={}, started_at=1000.0), "not gathered"),
        (stat_state(None, 1000.0), "no modification time"),
    ],
)
def test_file_modified_after_start_fails_when_it_cannot_tell(
    state: CheckState, message: str
) -> None:
    result = check("file_modified_after_start", state, path=OUT)
    assert not result.passed and message in result.evidence
