"""Checks on plain files, and the helper other checks use to get a file's bytes."""

from __future__ import annotations

from app.checks.base import CheckParams, CheckResult, CheckState, GuestPath, failed, passed
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
