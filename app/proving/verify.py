"""Prove tasks: the reference solution scores 1, doing nothing scores 0.

For each task, three episodes on fresh desktops, all recorded in the store:

- `reference`: the task's reference solution (a GUI demonstration, or for some L3
  tasks an oracle) must finish with the task passed and a score of 1;
- `null`: the null agent (DONE at once) must finish with the task failed and a score
  of 0, so no check passes by accident on the start state;
- `untouched`: reset and setup, then nothing: a placeholder agent ends the episode
  with FAIL before any action (FAIL never delivers a phase), and the start state is
  scored. It must fail with a score of 0 too. It differs from `null` for interactive
  tasks, where a DONE can deliver phases.

An episode that ends in error never counts as the expected 0: it is a failure of the
verification, with the episode's reason.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from app.agents.base import Agent, AgentContext, Observation
from app.agents.reference_script import read_script
from app.core.actions import Action, Fail
from app.core.errors import AgentError, DeskLoopError
from app.episode.events import EpisodeResult
from app.episode.launch import build_agent, launch
from app.episode.scoring import evaluator_version
from app.store import Store
from app.tasks.loader import resolve_asset
from app.tasks.model import Task
from app.tasks.proofs import write_proof

Mode = Literal["reference", "null", "untouched"]
MODES: tuple[Mode, ...] = ("reference", "null", "untouched")
SCORE_EPSILON = 1e-9


class UntouchedAgent:
    """Ends the episode before any action, so the start state is what gets scored."""

    name = "untouched"

    async def start(self, context: AgentContext) -> None:
        return None

    async def decide(self, observation: Observation) -> Action:
        return Fail("untouched start state: nothing is done after setup")

    def step_info(self) -> dict[str, Any] | None:
        return None

    async def close(self) -> None:
        return None


@dataclass(frozen=True)
class RunVerdict:
    mode: Mode
    ok: bool
    reason: str
    """Why it is not ok, or a short summary when it is."""
    episode_id: int | None
    score: float | None
    seconds: float
    passed: bool | None = None
    steps: int = 0


@dataclass
class TaskVerdict:
    task: Task
    reference_kind: str
    """'demonstration' or 'oracle' (from the reference file), 'none' when missing."""
    runs: list[RunVerdict] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.runs) and all(run.ok for run in self.runs)


def reference_kind(task: Task) -> str:
    """The `kind` declared by the task's reference file ('demonstration' by default),
    'unreadable' when the file is missing or not a valid script."""
    if task.reference is None:
        return "none"
    try:
        return read_script(resolve_asset(task.folder, task.reference, "reference")).kind
    except (ValueError, AgentError):
        return "unreadable"


def judge(mode: Mode, result: EpisodeResult) -> tuple[bool, str]:
    """Whether an episode's outcome is what `mode` must give, and why not."""
    if result.status != "finished":
        return False, f"episode ended in error: {result.error}"
    score = result.score if result.score is not None else 0.0
    if mode == "reference":
        if result.passed and score >= 1.0 - SCORE_EPSILON:
            return True, f"passed, score {score:.2f}"
        failing = [c for c in result.checks if not c.passed]
        why = "; ".join(f"{c.path}: {c.evidence}" for c in failing[:3])
        return False, (
            f"expected a pass with score 1, got {'pass' if result.passed else 'fail'} "
            f"with score {score:.2f} (end: {result.end_reason})" + (f" — {why}" if why else "")
        )
    if not result.passed and score <= SCORE_EPSILON:
        return True, f"failed, score {score:.2f}"
    passing = [c for c in result.checks if c.passed]
    why = "; ".join(f"{c.path}: {c.evidence}" for c in passing[:3])
    return False, (
        f"expected a fail with score 0, got {'pass' if result.passed else 'fail'} with score "
        f"{score:.2f}" + (f" — passing on the start state: {why}" if why else "")
    )


def _agent(mode: Mode, task: Task) -> Agent:
    if mode == "untouched":
        return UntouchedAgent()
    return build_agent(mode, task)


async def verify_run(
    task: Task,
    mode: Mode,
    store: Store,
    backend: str,
    progress: Callable[[str], None] | None = None,
) -> RunVerdict:
    """One verification episode of `task` on a fresh desktop, recorded in `store`."""
    started = time.monotonic()
    try:
        agent = _agent(mode, task)
    except DeskLoopError as exc:
        return RunVerdict(mode, False, str(exc), None, None, 0.0)
    # A fresh desktop of the task's image, closed when the episode ends.
    result = await launch(task, store, backend=backend, agent=agent, progress=progress).run()
    ok, reason = judge(mode, result)
    seconds = time.monotonic() - started
    return RunVerdict(
        mode, ok, reason, result.episode_id, result.score, seconds, result.passed, result.steps
    )


async def verify_tasks(
    tasks: Sequence[Task],
    store: Store,
    backend: str = "local",
    modes: Sequence[Mode] = MODES,
    progress: Callable[[str], None] | None = None,
    record: bool = False,
) -> list[TaskVerdict]:
    """Verify each task in turn (one desktop at a time: the host is shared).

    With `record`, each task whose three runs all come out as they must gets its proof
    written to the ledger (`app.tasks.proofs`) as soon as it is proven, so a long run
    that is cut off keeps what it proved.
    """
    verdicts: list[TaskVerdict] = []
    for n, task in enumerate(tasks, 1):
        verdict = TaskVerdict(task, reference_kind(task))
        for mode in modes:
            where = f"[{n}/{len(tasks)}] {task.id} {mode}"

            def say(text: str, where: str = where) -> None:
                if progress is not None:
                    progress(f"{where}: {text}")

            run = await verify_run(task, mode, store, backend, say)
            verdict.runs.append(run)
            if progress is not None:
                mark = "ok" if run.ok else "FAILED"
                progress(f"{where}: {mark} — {run.reason} ({run.seconds:.1f} s)")
        verdicts.append(verdict)
        if record and verdict.ok and {r.mode for r in verdict.runs} == set(MODES):
            path = record_proof(verdict, backend)
            if progress is not None:
                progress(f"[{n}/{len(tasks)}] {task.id}: proof recorded in {path}")
    return verdicts


def record_proof(verdict: TaskVerdict, backend: str) -> Path:
    """Write the ledger entry of a proven task; returns its path."""
    runs: dict[str, dict[str, Any]] = {
        run.mode: {
            "passed": run.passed,
            "score": run.score,
            "steps": run.steps,
            "seconds": round(run.seconds, 1),
        }
        for run in verdict.runs
    }
    return write_proof(
        verdict.task,
        reference_kind=verdict.reference_kind,
        evaluator=evaluator_version(),
        backend=backend,
        runs=runs,
    )


def verdict_json(verdict: TaskVerdict) -> dict[str, Any]:
    task = verdict.task
    return {
        "task": task.id,
        "path": str(task.source),
        "app": task.app,
        "level": task.level,
        "interactive": task.interactive,
        "reference_kind": verdict.reference_kind,
        "ok": verdict.ok,
        "runs": {
            run.mode: {
                "ok": run.ok,
                "episode": run.episode_id,
                "score": run.score,
                "seconds": round(run.seconds, 2),
                "reason": run.reason,
            }
            for run in verdict.runs
        },
    }
