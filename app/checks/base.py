"""The data a check works on and the result it returns.

Checks never touch a desktop: scoring gathers the final state once per episode
(the guest files every check of the task names, and the task-folder assets they
compare against) into a `CheckState`, and each check reads only from it. That is
what lets every check be tested on plain bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, model_validator

from app.core.judgements import Judgement

NOT_FOUND = "not found"
"""The words of a file or probe target that does not exist in the guest."""

FileProblem = Literal["missing", "too_large", "unreadable"]
"""Why a `FileState` has no bytes: the file does not exist, it exists but was too big
to fetch, or the guest could not say or read it."""


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

    `error` is None exactly when `data` is not None, and then `problem` says why, as a
    word checks decide on; `error` is its wording, for the evidence. Build instances
    with the class methods.
    """

    path: str
    data: bytes | None
    error: str | None
    problem: FileProblem | None = None
    size: int | None = None
    """The size in bytes of a file too large to fetch, when the guest said it."""

    def __post_init__(self) -> None:
        if (self.data is None) == (self.error is None):
            raise ValueError(
                f"FileState for {self.path}: exactly one of data and error must be set"
            )
        if (self.error is None) != (self.problem is None):
            raise ValueError(f"FileState for {self.path}: an error needs its problem")

    @classmethod
    def found(cls, path: str, data: bytes) -> FileState:
        return cls(path=path, data=data, error=None)

    @classmethod
    def missing(cls, path: str) -> FileState:
        return cls(path=path, data=None, error=NOT_FOUND, problem="missing")

    @classmethod
    def too_large(cls, path: str, limit: str, size: int | None = None) -> FileState:
        """The file exists but is bigger than `limit` (e.g. '64 MiB'), so it was not read;
        `size` is its size in bytes when known."""
        error = f"{size} bytes, larger than {limit}" if size is not None else f"larger than {limit}"
        return cls(path=path, data=None, error=error, problem="too_large", size=size)

    @classmethod
    def unreadable(cls, path: str, reason: str) -> FileState:
        return cls(path=path, data=None, error=f"unreadable: {reason}", problem="unreadable")

    @property
    def exists(self) -> bool | None:
        """True or False when known; None when the guest could not tell."""
        if self.data is not None or self.problem == "too_large":
            return True
        if self.problem == "missing":
            return False
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
    missing: bool = False
    """The probe's target does not exist in the guest (checks decide on this, not on
    the words of `error`)."""

    @classmethod
    def failure(cls, reason: str) -> ProbeResult:
        return cls(data=None, error=reason)

    @classmethod
    def not_found(cls) -> ProbeResult:
        """The probe's target does not exist in the guest."""
        return cls(data=None, error=NOT_FOUND, missing=True)


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
    judgements: dict[str, Judgement] = field(default_factory=dict)
    """What the model judge answered, keyed by `app.checks.judge.judge_key` of the
    judge check's parameters (scoring asks before the checks run)."""
    answer: Any = None
    """The answer (text or JSON) the agent returned with the DONE that ended the
    episode; None when it returned none."""
    answer_schema: dict[str, Any] | None = None
    """The task's declared JSON schema for that answer, if any."""

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

    @property
    def decides(self) -> bool:
        """Whether the check's result counts toward its tree's pass/fail and credit.
        Every check's does, except a model judge's the task did not make count."""
        return True


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
