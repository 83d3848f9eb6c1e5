"""Score a task on a desktop's final state: gather files, run checks, walk the tree.

Scoring reads every file the task's checks name once through the guest channel,
reads the assets from the task folder, and hands plain bytes to the pure check
functions (app.checks). A missing or unreadable file is a failed check with the
reason; nothing here raises because one check could not run.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from typing import Any

from app.checks.base import CheckResult, CheckState, FileState, Probe, ProbeResult
from app.checks.registry import run_check
from app.checks.tree import CheckLeaf, EvalNode, evaluate, leaves
from app.core.errors import FileTooLarge, GuestError
from app.core.judgements import Judgement
from app.core.outcomes import CheckOutcome
from app.desktops.base import Guest
from app.episode.judge import JudgeContext, ask_judges
from app.probes import gather_probe
from app.tasks.loader import resolve_asset
from app.tasks.model import Task

MAX_FILE_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class ScoreResult:
    passed: bool
    score: float
    checks: list[CheckOutcome]
    judgements: list[Judgement] = field(default_factory=list)
    """What the model judge was asked and answered, for the store (app.episode.judge)."""


async def _gather_file(guest: Guest, path: str) -> FileState:
    try:
        if not await guest.exists(path):
            return FileState.missing(path)
        return FileState.found(path, await guest.read_file(path, MAX_FILE_BYTES))
    except FileTooLarge as exc:
        return FileState.too_large(path, f"{exc.limit // (1024 * 1024)} MiB", exc.size)
    except GuestError as exc:
        return FileState.unreadable(path, str(exc))


async def gather_state(
    task: Task,
    guest: Guest,
    started_at: float | None = None,
    tree: EvalNode | None = None,
    answer: Any = None,
) -> CheckState:
    """Everything the checks of `tree` (default: the task's evaluate tree) need, each
    file and probe gathered once; `answer` is what the agent returned with DONE."""
    files: dict[str, FileState] = {}
    assets: dict[str, bytes] = {}
    probes: dict[Probe, ProbeResult] = {}
    for leaf in leaves(task.eval_tree if tree is None else tree):
        for probe in leaf.spec.probes(leaf.params):
            if probe not in probes:
                probes[probe] = await gather_probe(guest, probe, answer)
        for path in leaf.spec.files(leaf.params):
            if path not in files:
                files[path] = await _gather_file(guest, path)
        for rel in leaf.spec.assets(leaf.params):
            if rel not in assets:
                try:
                    asset = resolve_asset(task.folder, rel, f"{leaf.path}")
                    assets[rel] = await asyncio.to_thread(asset.read_bytes)
                except (ValueError, OSError):
                    # Left out: the check reports the missing asset as its failure.
                    continue
    return CheckState(
        files=files,
        assets=assets,
        probes=probes,
        started_at=started_at,
        answer=answer,
        answer_schema=task.answer_schema,
    )


def score_state(
    task: Task, state: CheckState, tree: EvalNode | None = None, phase: int | None = None
) -> ScoreResult:
    """Run every check of `tree` (default: the task's evaluate tree) on gathered state
    (pure). `phase` marks the outcomes of a phase's optional checks."""
    node = task.eval_tree if tree is None else tree
    results: dict[str, CheckResult] = {}
    tree_leaves: list[CheckLeaf] = list(leaves(node))
    for leaf in tree_leaves:
        results[leaf.path] = run_check(leaf.spec, state, leaf.params)
    outcome = evaluate(node, results)
    rows = [
        CheckOutcome(
            path=leaf.path,
            name=leaf.spec.name,
            params=leaf.params.model_dump(mode="json"),
            weight=leaf.weight,
            # A judge that does not count is recorded as not required: it is not.
            required=leaf.required and leaf.params.decides,
            passed=results[leaf.path].passed,
            score=results[leaf.path].score,
            evidence=results[leaf.path].evidence,
            phase=phase,
        )
        for leaf in tree_leaves
    ]
    return ScoreResult(passed=outcome.passed, score=outcome.score, checks=rows)


async def score_task(
    task: Task,
    guest: Guest,
    started_at: float | None = None,
    judge: JudgeContext | None = None,
    answer: Any = None,
) -> ScoreResult:
    """Score the final state; `answer` is the agent's returned value (DONE's answer)."""
    state = await gather_state(task, guest, started_at, answer=answer)
    judgements = await ask_judges(task.eval_tree, state, judge)
    # Decoding and SSIM of large images take seconds: keep them off the event loop.
    result = await asyncio.to_thread(score_state, task, state)
    return replace(result, judgements=judgements)


async def score_phase(
    task: Task,
    index: int,
    guest: Guest,
    started_at: float | None = None,
    judge: JudgeContext | None = None,
) -> ScoreResult | None:
    """Score phase `index`'s optional checks on the state right now; None if it has none."""
    tree = task.phase_tree(index)
    if tree is None:
        return None
    state = await gather_state(task, guest, started_at, tree)
    judgements = await ask_judges(tree, state, judge, index)
    result = await asyncio.to_thread(score_state, task, state, tree, index)
    return replace(result, judgements=judgements)
