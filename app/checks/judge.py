"""The `judge` check: an OpenAI-compatible vision model's verdict on an open-ended
deliverable, against a rubric.

Pure like every check: scoring (`app.episode.judge`) asks the model, with the rubric,
the final frame and the named files, before the checks run, and hands the answer over
in `CheckState.judgements`; this check only reads it. A judge decides nothing unless
the task says so (`counts: true`): otherwise the tree leaves it out of pass/fail and
of the partial credit (app.checks.tree), and it is reported beside the state checks.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from app.checks.base import CheckParams, CheckResult, CheckState, GuestPath, failed
from app.checks.registry import register


class JudgeParams(CheckParams):
    rubric: Annotated[str, Field(min_length=1)]
    """What the deliverable must show, as the judge reads it: the criteria, one a line
    is clearest (e.g. 'The poster's title is legible at a glance')."""
    frame: bool = True
    """Show the judge the desktop's final frame (at a phase, the frame at its delivery)."""
    files: tuple[GuestPath, ...] = ()
    """Image files in the guest (PNG, JPEG, GIF or WebP) to show the judge, in order."""
    counts: bool = False
    """Whether the verdict decides pass/fail and partial credit like any check. By
    default it does not: it is recorded and reported beside the state checks, and a
    tree needs at least one other check that decides."""

    @model_validator(mode="after")
    def _shows_something(self) -> JudgeParams:
        if not self.frame and not self.files:
            raise ValueError("a judge needs something to look at: frame: true or files")
        return self

    @property
    def decides(self) -> bool:
        return self.counts


def judge_key(params: JudgeParams) -> str:
    """What `CheckState.judgements` is keyed by: the check's parameters (two leaves
    with the same parameters ask the same question)."""
    return params.model_dump_json()


@register("judge", JudgeParams, files=("files",))
def judge(state: CheckState, params: JudgeParams) -> CheckResult:
    """Asks an OpenAI-compatible vision model whether the deliverable meets `rubric`,
    showing it the final frame and/or the named image files; passes when the model
    says it passes, with its score and its reasons as the evidence. The endpoint is
    the run's `--judge-model` / `--judge-base-url`. Every prompt, image hash, model,
    temperature, seed and verdict is recorded with the episode, and answers are cached
    by that request, so a rerun gets the same verdict; the frame and files shown are
    kept in the final-state archive, so `score --rescore` asks again about the same
    images (from the cache when the question is unchanged). Only with `counts: true` does
    the verdict count toward the task's pass/fail and credit; otherwise it is reported
    beside the state checks. A missing file or an unusable answer fails the check with
    the reason; a judge that counts on an endpoint that stays unavailable ends the
    episode as an infrastructure error instead."""
    judgement = state.judgements.get(judge_key(params))
    if judgement is None:
        return failed("the judge was not asked: no judge endpoint was configured (--judge-model)")
    if judgement.verdict is None:
        return failed(f"judge {judgement.model}: {judgement.error or 'no verdict'}")
    verdict = judgement.verdict
    cached = ", cached answer" if judgement.cached else ""
    return CheckResult(
        passed=verdict.passed,
        score=verdict.score,
        evidence=f"judge {judgement.model}{cached}: {'pass' if verdict.passed else 'fail'} "
        f"{verdict.score:.2f}: {verdict.reasons}",
    )
