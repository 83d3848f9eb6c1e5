"""`deskloop tasks audit`: the library's health, one row per task.

For each task, on fresh desktops, every episode recorded in the store:

- the reference solution, `repeats` times (default 3): each must pass with score 1
  and raise no integrity flag (an honest reference works through the GUI);
- the null agent and the untouched start state must score 0 (as `tasks verify`);
- the task's cheater, where it has one (`references/cheaters/<task id>.yaml` beside
  the task, in the scripted-agent format): its episode must be flagged, whatever it
  scores;
- the first reference episode's final-state archive, scored twice by the current
  evaluator: both rescores must give the original score and the same evidence, check
  by check.

A task fails its audit when any of these does; an episode that ends in an error
fails its row with the reason.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.agents.spec import ScriptedSpec
from app.core.errors import DeskLoopError
from app.episode.archive import rescore
from app.episode.launch import build_agent, launch
from app.proving.verify import RunVerdict, verify_run
from app.store import Store
from app.tasks.model import Task

CHEATERS = Path("references") / "cheaters"


def cheater_path(task: Task) -> Path | None:
    """The task's cheater script, when it has one."""
    path = task.folder / CHEATERS / f"{task.id}.yaml"
    return path if path.is_file() else None


@dataclass(frozen=True)
class Check:
    """One row cell of an audit: what was tried, whether it held, and why."""

    name: str
    ok: bool
    reason: str
    episode_id: int | None = None
    ran: bool = True
    """False where there was nothing to run (a task without a cheater): no failure, and
    the table says `none`, not `ok`."""


@dataclass
class TaskAudit:
    task: Task
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)


def _from_run(name: str, run: RunVerdict) -> Check:
    return Check(name, run.ok, run.reason, run.episode_id)


async def _reference(
    task: Task, store: Store, backend: str, n: int, say: Callable[[str], None]
) -> Check:
    run = await verify_run(task, "reference", store, backend, say)
    if not run.ok or run.episode_id is None:
        return _from_run(f"reference {n}", run)
    flags, _ = await store.off_loop(store.flags, run.episode_id)
    if flags:
        why = "; ".join(f.summary for f in flags)
        return Check(f"reference {n}", False, f"passed but flagged: {why}", run.episode_id)
    return _from_run(f"reference {n}", run)


async def _cheater(task: Task, store: Store, backend: str, say: Callable[[str], None]) -> Check:
    path = cheater_path(task)
    if path is None:
        return Check("cheater", True, "no cheater for this task", ran=False)
    try:
        agent = build_agent(ScriptedSpec(str(path)), task)
    except DeskLoopError as exc:
        return Check("cheater", False, str(exc))
    result = await launch(task, store, backend=backend, agent=agent, progress=say).run()
    if result.status != "finished":
        return Check("cheater", False, f"episode ended in error: {result.error}", result.episode_id)
    flags, checked = await store.off_loop(store.flags, result.episode_id)
    if not flags:
        looked = "; ".join(checked or []) or "nothing"
        return Check("cheater", False, f"not flagged (looked at: {looked})", result.episode_id)
    return Check(
        "cheater", True, "flagged: " + "; ".join(f.summary for f in flags), result.episode_id
    )


async def _rescored_twice(task: Task, store: Store, episode_id: int | None) -> Check:
    if episode_id is None:
        return Check("rescore", False, "no reference episode to re-score")
    original = await store.off_loop(store.checks, episode_id)
    final = [(c.path, c.passed, c.score, c.evidence) for c in original if c.phase is None]
    try:
        first = await rescore(store, episode_id, task)
        second = await rescore(store, episode_id, task)
    except DeskLoopError as exc:
        return Check("rescore", False, str(exc), episode_id)
    runs = [
        [(c.path, c.passed, c.score, c.evidence) for c in r.result.checks] for r in (first, second)
    ]
    for n, run in enumerate(runs, 1):
        if run != final:
            differ = next(
                (
                    f"{a[0]}: {a[3]!r} then {b[3]!r}"
                    for a, b in zip(final, run, strict=False)
                    if a != b
                ),
                f"{len(final)} checks then {len(run)}",
            )
            return Check(
                "rescore", False, f"rescore {n} differs from the original: {differ}", episode_id
            )
    return Check(
        "rescore", True, f"same score and evidence twice ({len(final)} checks)", episode_id
    )


async def audit_tasks(
    tasks: Sequence[Task],
    store: Store,
    backend: str = "local",
    repeats: int = 3,
    progress: Callable[[str], None] | None = None,
) -> list[TaskAudit]:
    """Audit each task in turn (one desktop at a time: the host is shared)."""
    audits = []
    for n, task in enumerate(tasks, 1):
        audit = TaskAudit(task)

        def say(text: str, where: str = f"[{n}/{len(tasks)}] {task.id}") -> None:
            if progress is not None:
                progress(f"{where}: {text}")

        started = time.monotonic()
        for r in range(1, repeats + 1):
            audit.checks.append(await _reference(task, store, backend, r, say))
        first = next((c.episode_id for c in audit.checks if c.episode_id is not None), None)
        for mode in ("null", "untouched"):
            run = await verify_run(task, mode, store, backend, say)
            audit.checks.append(_from_run(mode, run))
        audit.checks.append(await _cheater(task, store, backend, say))
        audit.checks.append(await _rescored_twice(task, store, first))
        say(f"{'ok' if audit.ok else 'FAILED'} ({time.monotonic() - started:.0f} s)")
        audits.append(audit)
    return audits


def audit_table(audits: Sequence[TaskAudit]) -> tuple[list[str], list[list[str]]]:
    """The audit as a table: the column names (the task, each check, the verdict) and a
    row per task; a cell is `ok #episode` or `FAIL #episode`, or `none` where there was
    nothing to run (no cheater)."""

    def cell(c: Check) -> str:
        if not c.ran:
            return "none"
        return ("ok" if c.ok else "FAIL") + (f" #{c.episode_id}" if c.episode_id else "")

    names = [c.name for c in audits[0].checks] if audits else []
    rows = []
    for a in audits:
        cells = {c.name: cell(c) for c in a.checks}
        rows.append([a.task.id, *(cells.get(n, "-") for n in names), "ok" if a.ok else "FAILED"])
    return ["task", *names, "audit"], rows


def audit_json(audit: TaskAudit) -> dict[str, Any]:
    return {
        "task": audit.task.id,
        "path": str(audit.task.source),
        "ok": audit.ok,
        "checks": [
            {
                "name": c.name,
                "ok": c.ok,
                "ran": c.ran,
                "reason": c.reason,
                "episode": c.episode_id,
            }
            for c in audit.checks
        ],
    }
