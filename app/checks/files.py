"""Checks on plain files, and the helper other checks use to get a file's bytes."""

from __future__ import annotations

from app.checks.base import (
    CheckParams,
    CheckResult,
    CheckState,
    GuestPath,
    Probe,
    failed,
    passed,
)
from app.checks.registry import register


def file_bytes(state: CheckState, path: str) -> bytes | CheckResult:
    """The bytes of guest file `path`, or the failed result that says why there are none."""
    file = state.file(path)
    if file.data is not None:
        return file.data
    if file.exists is False:
        return failed(f"{path} does not exist")
    return failed(f"{path} could not be read ({file.error})")


class FileExistsParams(CheckParams):
    path: GuestPath
    """The guest file that must exist, e.g. '~/Desktop/out.png'."""


@register("file_exists", FileExistsParams, files=("path",))
def file_exists(state: CheckState, params: FileExistsParams) -> CheckResult:
    """Passes when the guest file exists (an empty file counts)."""
    file = state.file(params.path)
    if file.data is not None:
        return passed(f"{params.path} exists ({len(file.data)} bytes)")
    if file.exists is True:
        return passed(f"{params.path} exists ({file.error}, not read)")
    if file.exists is False:
        return failed(f"{params.path} does not exist")
    # Unknown is not "exists": the check fails rather than guess.
    return failed(f"could not tell whether {params.path} exists ({file.error})")


class FileNotExistsParams(CheckParams):
    path: GuestPath
    """The guest file that must not exist, e.g. '~/Desktop/draft.png'."""


@register("file_not_exists", FileNotExistsParams, files=("path",))
def file_not_exists(state: CheckState, params: FileNotExistsParams) -> CheckResult:
    """Passes when the guest file does not exist (e.g. a temporary file was removed)."""
    file = state.file(params.path)
    if file.exists is False:
        return passed(f"{params.path} does not exist")
    if file.exists is True:
        size = f"{len(file.data)} bytes" if file.data is not None else str(file.error)
        return failed(f"{params.path} exists ({size})")
    return failed(f"could not tell whether {params.path} exists ({file.error})")


class FileModifiedParams(CheckParams):
    path: GuestPath
    """The guest file that must have been written during the episode."""


@register("file_modified_after_start", FileModifiedParams, probes=(("stat", "path"),))
def file_modified_after_start(state: CheckState, params: FileModifiedParams) -> CheckResult:
    """Passes when the file's modification time is later than the moment the agent got
    control (so a file the setup uploaded, left untouched, fails)."""
    if state.started_at is None:
        return failed(f"cannot compare {params.path}: the episode's start time is unknown")
    stat = state.probe(Probe("stat", params.path))
    if stat.error is not None:
        if stat.missing:
            return failed(f"{params.path} does not exist")
        return failed(f"could not stat {params.path}: {stat.error}")
    mtime = stat.data.get("mtime") if isinstance(stat.data, dict) else None
    if not isinstance(mtime, int | float):
        return failed(f"stat of {params.path} gave no modification time ({stat.data!r})")
    delta = float(mtime) - state.started_at
    if delta > 0:
        return passed(f"{params.path} was modified {delta:.1f} s after the episode started")
    return failed(f"{params.path} was last modified {-delta:.1f} s before the episode started")
