"""What a model judge was asked and what it answered: one shape from scoring, where
`app.episode.judge` asks, to the `judge` check (app.checks.judge), which reads the
verdict, and to the store, which records every one (migration 0010_judgements).

On the ground floor because the checks and the store may import nothing else.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class JudgedImage:
    """One image the judge was shown."""

    what: str
    """`final frame`, or the guest path of a named file, as the task wrote it."""
    sha256: str
    """Of the bytes sent."""
    size: int
    """Bytes."""
    media_type: str


@dataclass(frozen=True)
class Verdict:
    """The judge's answer, parsed: pass, a score in [0, 1] and its reasons."""

    passed: bool
    score: float
    reasons: str

    def __post_init__(self) -> None:
        if not (math.isfinite(self.score) and 0.0 <= self.score <= 1.0):
            raise ValueError(f"a verdict's score must be in [0, 1], got {self.score!r}")


@dataclass(frozen=True)
class Judgement:
    """One judge check's question and answer, as recorded."""

    path: str
    """The judge leaf's place in the task file (`evaluate.all[2]`)."""
    phase: int | None
    """The phase whose checks it belongs to; None for the final score."""
    counts: bool
    """Whether the task made this verdict decide pass/fail and credit."""
    model: str
    base_url: str
    temperature: float
    seed: int | None
    prompt: list[dict[str, Any]]
    """The messages sent, each image replaced by `{"type": "image", "sha256", "what"}`."""
    images: tuple[JudgedImage, ...]
    request_key: str
    """sha256 of what decides the answer (model, sampling, the prompt with its image
    hashes): the cache's key."""
    answer: str | None
    """The model's raw answer; None when none came."""
    verdict: Verdict | None
    """None when there is no usable answer (`error` says why)."""
    cached: bool
    """The answer came from the cache, not from the endpoint."""
    error: str | None = None


def judgement_to_raw(judgement: Judgement) -> dict[str, Any]:
    """A judgement as JSON-ready data (a rescore keeps its judgements so)."""
    return asdict(judgement)


def judgement_from_raw(raw: dict[str, Any]) -> Judgement:
    """The judgement `judgement_to_raw` wrote."""
    verdict = raw.get("verdict")
    return Judgement(
        **{
            **raw,
            "images": tuple(JudgedImage(**image) for image in raw.get("images", ())),
            "verdict": None if verdict is None else Verdict(**verdict),
        }
    )
