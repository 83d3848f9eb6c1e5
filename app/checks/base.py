"""The data a check works on and the result it returns.

Checks never touch a desktop: scoring gathers the final state once per episode
(the guest files every check of the task names, and the task-folder assets they
compare against) into a `CheckState`, and each check reads only from it. That is
what lets every check be tested on plain bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, model_validator

NOT_FOUND = "not found"
"""`FileState.error` when the file does not exist in the guest."""

TOO_LARGE_PREFIX = "larger than"
"""`FileState.error` starts with this when the file exists but was too big to fetch."""

UNREADABLE_PREFIX = "unreadable:"
"""`FileState.error` starts with this when the guest could not say or read the file."""


@dataclass(frozen=True)
class CheckResult:
    """What one check concluded: pass/fail, partial credit in [0, 1], and why."""

    passed: bool
    score: float
    evidence: str

    def __post_init__(self) -> None:
        # A score outside [0, 1] would silently skew every weighted mean above it.
        if not (math.isfinite(self.score) and 0.0 <= self.score <= 1.0):
            raise ValueError(f"check score must be in [0, 1], got {self.score!r}")


def passed(evidence: str) -> CheckResult:
    """A passing result with full credit."""
    return CheckResult(passed=True, score=1.0, evidence=evidence)


def failed(evidence: str, score: float = 0.0) -> CheckResult:
    """A failing result, with no credit unless the check grants partial credit."""
    return CheckResult(passed=False, score=score, evidence=evidence)


def verdict(ok: bool, evidence: str) -> CheckResult:
    """Pass or fail (no partial credit) on `ok`, with the same evidence either way."""
    return passed(evidence) if ok else failed(evidence)


@dataclass(frozen=True)
class FileState:
    """One guest file as scoring found it: its bytes, or why there are none.

    `error` is None exactly when `data` is not None. Build instances with the
    class methods so the error wording stays one vocabulary the checks understand.
    """

    path: str
    data: bytes | None
    error: str | None

    def __post_init__(self) -> None:
        if (self.data is None) == (self.error is None):
            raise ValueError(
                f"FileState for {self.path}: exactly one of data and error must be set"
            )

    @classmethod
    def found(cls, path: str, data: bytes) -> FileState:
        return cls(path=path, data=data, error=None)

    @classmethod
    def missing(cls, path: str) -> FileState:
        return cls(path=path, data=None, error=NOT_FOUND)

    @classmethod
    def too_large(cls, path: str, limit: str) -> FileState:
        """The file exists but is bigger than `limit` (e.g. '64 MiB'), so it was not read."""
        return cls(path=path, data=None, error=f"{TOO_LARGE_PREFIX} {limit}")

    @classmethod
    def unreadable(cls, path: str, reason: str) -> FileState:
        return cls(path=path, data=None, error=f"{UNREADABLE_PREFIX} {reason}")

    @property
    def exists(self) -> bool | None:
        """True or False when known; None when the guest could not tell."""
        if self.data is not None:
            return True
        assert self.error is not None
        if self.error == NOT_FOUND:
            return False
        if self.error.startswith(TOO_LARGE_PREFIX):
            return True
        return None


@dataclass(frozen=True)
class Probe:
    """State that scoring makes by running a tool in the guest, once per episode.

    `kind` names the prober (app/probes/: 'stat', 'blender_scene', 'ffprobe', ...);
    `path` is the guest file it inspects, as the task wrote it.
    """

    kind: str
    path: str


@dataclass(frozen=True)
class ProbeResult:
    """What a prober produced: JSON-like data, or why there is none."""

    data: Any
    error: str | None = None

    @classmethod
    def failure(cls, reason: str) -> ProbeResult:
        return cls(data=None, error=reason)


@dataclass
class CheckState:
    """Everything checks may look at after an episode.

    `files` is keyed by the guest path exactly as the task wrote it
    (e.g. '~/Desktop/out.png'); `assets` by the path relative to the task folder
    (e.g. 'assets/poster.png'); `probes` by the `Probe` a check declared.
    """

    files: dict[str, FileState]
    assets: dict[str, bytes]
    probes: dict[Probe, ProbeResult] = field(default_factory=dict)
    started_at: float | None = None
    """When the episode started (Unix time), for checks about modification times."""

    def file(self, path: str) -> FileState:
        """The gathered state of `path`; a file scoring did not gather reads as unreadable."""
        state = self.files.get(path)
        if state is None:
            return FileState.unreadable(path, "not gathered by scoring")
        return state

    def probe(self, probe: Probe) -> ProbeResult:
        """The gathered result of `probe`; one scoring did not gather is a failure."""
        result = self.probes.get(probe)
        if result is None:
            return ProbeResult.failure(f"{probe.kind} of {probe.path} not gathered by scoring")
        return result


def _check_guest_path(value: str) -> str:
    # Relative guest paths would depend on the guest's working directory, which
    # differs between backends; '~/' is expanded by the guest channel.
    if not (value.startswith("/") or value.startswith("~/")):
        raise ValueError(f"guest path must start with '/' or '~/', got {value!r}")
    if value.rstrip("/") in ("", "~"):
        raise ValueError(f"guest path must name a file, got {value!r}")
    return value


def _check_asset_path(value: str) -> str:
    # Assets live inside the task folder; anything that could leave it is refused.
    if not value or value.startswith(("/", "~")) or "\\" in value:
        raise ValueError(f"asset path must be relative to the task folder, got {value!r}")
    if ".." in value.split("/"):
        raise ValueError(f"asset path must stay inside the task folder, got {value!r}")
    return value


GuestPath = Annotated[str, AfterValidator(_check_guest_path)]
"""A file path in the desktop's guest: absolute, or starting with '~/'."""

AssetPath = Annotated[str, AfterValidator(_check_asset_path)]
"""A file path relative to the task folder, e.g. 'assets/poster.png'."""


class CheckParams(BaseModel):
    """Base of every check's parameters: unknown keys rejected, values immutable.

    Subclasses document each field with an attribute docstring; it becomes the
    field's description (shown in validation errors and the task docs).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


_Params = TypeVar("_Params", bound=CheckParams)


def needs_any(*fields: str, message: str) -> Any:
    """A model validator for a check whose parameters are each optional but which has
    nothing to check unless one is given: it refuses them all left out with `message`.

    Use it as a class attribute: `_needs_a_size = needs_any("width", "height", message=…)`.
    """

    def check(self: _Params) -> _Params:
        if all(getattr(self, name) is None for name in fields):
            raise ValueError(message)
        return self

    return model_validator(mode="after")(check)
