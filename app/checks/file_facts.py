"""Checks on what files there are and what a text file says: a size bound, the files of
a folder matching a glob, and the text of a config file.

Sizes come from the `stat` probe (a rendered video may be far larger than scoring
fetches); a folder's listing from the `listdir` probe. The glob is matched here, in the
pure check, so what counts as a match is tested on plain data.
"""

from __future__ import annotations

import fnmatch
import re
from typing import Any

from pydantic import field_validator, model_validator

from app.checks.base import (
    CheckParams,
    CheckResult,
    CheckState,
    GuestPath,
    Probe,
    failed,
    needs_any,
    verdict,
)
from app.checks.files import file_bytes
from app.checks.registry import register


def _size_words(size: int) -> str:
    return f"{size} bytes" if size < 10_000 else f"{size} bytes ({size / 1_048_576:.2f} MiB)"


class FileSizeParams(CheckParams):
    path: GuestPath
    """The guest file whose size is bounded, e.g. '~/Desktop/render.mp4'."""
    min_bytes: int | None = None
    """The smallest size that passes, in bytes (inclusive), e.g. 10000."""
    max_bytes: int | None = None
    """The largest size that passes, in bytes (inclusive), e.g. 5242880 for 5 MiB."""

    _needs_a_bound = needs_any(
        "min_bytes", "max_bytes", message="give min_bytes, max_bytes or both"
    )

    @model_validator(mode="after")
    def _ordered(self) -> FileSizeParams:
        for name in ("min_bytes", "max_bytes"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name} must be at least 0, got {value}")
        if (
            self.min_bytes is not None
            and self.max_bytes is not None
            and self.min_bytes > self.max_bytes
        ):
            raise ValueError(f"min_bytes {self.min_bytes} is above max_bytes {self.max_bytes}")
        return self


@register("file_size", FileSizeParams, probes=(("stat", "path"),))
def file_size(state: CheckState, params: FileSizeParams) -> CheckResult:
    """Passes when the guest file's size lies within [min_bytes, max_bytes] (either bound
    may be left out): an export under a size limit, a render that is not empty."""
    stat = state.probe(Probe("stat", params.path))
    if stat.error is not None:
        if stat.missing:
            return failed(f"{params.path} does not exist")
        return failed(f"could not stat {params.path}: {stat.error}")
    size = stat.data.get("size") if isinstance(stat.data, dict) else None
    if not isinstance(size, int):
        return failed(f"stat of {params.path} gave no size ({stat.data!r})")
    low = params.min_bytes if params.min_bytes is not None else 0
    high = params.max_bytes
    bound = f"≥ {low}" if high is None else f"in [{low}, {high}]"
    ok = size >= low and (high is None or size <= high)
    return verdict(ok, f"{params.path} is {_size_words(size)}, expected {bound} bytes")


class FilesMatchingParams(CheckParams):
    folder: GuestPath
    """The guest folder whose entries are matched (not recursive), e.g. '~/Desktop/export'."""
    pattern: str
    """A shell glob matched against each file name in the folder, e.g. 'frame_*.png'
    (case-sensitive; `*`, `?` and `[...]` as in the shell)."""
    min_count: int = 1
    """The fewest matching files that pass."""
    max_count: int | None = None
    """The most matching files that pass (left out: no upper bound)."""
    min_bytes: int = 0
    """Only files of at least this many bytes count (1 leaves empty files out)."""

    @field_validator("pattern")
    @classmethod
    def _a_name_pattern(cls, value: str) -> str:
        if not value or "/" in value:
            raise ValueError(f"pattern matches names inside the folder, without '/': {value!r}")
        return value

    @model_validator(mode="after")
    def _counts(self) -> FilesMatchingParams:
        if self.min_count < 0 or self.min_bytes < 0:
            raise ValueError("min_count and min_bytes must be at least 0")
        if self.max_count is not None and self.max_count < self.min_count:
            raise ValueError(f"max_count {self.max_count} is below min_count {self.min_count}")
        return self


def _entries(data: Any) -> list[dict[str, Any]] | None:
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
        return None
    return [e for e in data["entries"] if isinstance(e, dict)]


@register("files_matching", FilesMatchingParams, probes=(("listdir", "folder"),))
def files_matching(state: CheckState, params: FilesMatchingParams) -> CheckResult:
    """Passes when the number of regular files in `folder` whose names match `pattern`
    (and have at least `min_bytes`) lies within [min_count, max_count]: a frame
    sequence, a set of exported variants."""
    listing = state.probe(Probe("listdir", params.folder))
    if listing.error is not None:
        if listing.missing:
            return failed(f"folder {params.folder} does not exist")
        return failed(f"could not list {params.folder}: {listing.error}")
    entries = _entries(listing.data)
    if entries is None:
        return failed(f"the listing of {params.folder} has no entries ({listing.data!r})")
    names = sorted(
        str(e.get("name"))
        for e in entries
        if e.get("type") == "file"
        and fnmatch.fnmatchcase(str(e.get("name")), params.pattern)
        and isinstance(e.get("size"), int)
        and e["size"] >= params.min_bytes
    )
    count = len(names)
    high = params.max_count
    wanted = f"≥ {params.min_count}" if high is None else f"in [{params.min_count}, {high}]"
    sized = f" of ≥ {params.min_bytes} bytes" if params.min_bytes else ""
    shown = ", ".join(names[:8]) + (", …" if count > 8 else "")
    ok = count >= params.min_count and (high is None or count <= high)
    return verdict(
        ok,
        f"{count} files{sized} match {params.pattern!r} in {params.folder}"
        f"{' (' + shown + ')' if names else ''}, expected {wanted}",
    )


def _compiles(values: tuple[str, ...]) -> tuple[str, ...]:
    for value in values:
        try:
            re.compile(value, re.MULTILINE)
        except re.error as exc:
            raise ValueError(f"regular expression {value!r} does not compile: {exc}") from exc
    return values


class TextFileParams(CheckParams):
    path: GuestPath
    """The guest text file, e.g. '~/.config/GIMP/2.10/gimprc'."""
    contains: tuple[str, ...] = ()
    """Strings that must each appear in the text, e.g. ['(max-recent-files 15)']."""
    absent: tuple[str, ...] = ()
    """Strings none of which may appear in the text."""
    matches: tuple[str, ...] = ()
    """Regular expressions that must each match somewhere (searched, multi-line: `^` and `$`
    match at each line), e.g. ['^\\(max-recent-files 15\\)$']."""
    ignore_case: bool = False
    """Compare `contains`, `absent` and `matches` without regard to case."""

    _compile = field_validator("matches")(_compiles)

    @model_validator(mode="after")
    def _something_to_check(self) -> TextFileParams:
        if not (self.contains or self.absent or self.matches):
            raise ValueError("give at least one string in contains, absent or matches")
        return self


@register("text_file", TextFileParams, files=("path",))
def text_file(state: CheckState, params: TextFileParams) -> CheckResult:
    """Passes when the guest text file (UTF-8; a config file such as GIMP's gimprc)
    contains every `contains` string, none of the `absent` ones and a match for every
    `matches` regex."""
    data = file_bytes(state, params.path)
    if isinstance(data, CheckResult):
        return data
    text = data.decode("utf-8", "replace")
    hay = text.casefold() if params.ignore_case else text
    flags = re.MULTILINE | (re.IGNORECASE if params.ignore_case else 0)

    def fold(value: str) -> str:
        return value.casefold() if params.ignore_case else value

    missing = [s for s in params.contains if fold(s) not in hay]
    present = [s for s in params.absent if fold(s) in hay]
    unmatched = [r for r in params.matches if re.search(r, text, flags) is None]
    problems = (
        [f"lacks {s!r}" for s in missing]
        + [f"contains {s!r}" for s in present]
        + [f"no match for /{r}/" for r in unmatched]
    )
    if problems:
        return failed(f"{params.path} ({len(text)} characters) " + "; ".join(problems))
    wanted = len(params.contains) + len(params.absent) + len(params.matches)
    return verdict(True, f"{params.path}: all {wanted} text conditions hold")
