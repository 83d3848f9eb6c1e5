"""Prove an authored task: its reference replays, doing nothing fails, and each
sub-goal is needed.

`deskloop author verify ID` runs, each on a fresh desktop and recorded in the store:

- the reference `repeats` times (3 by default): each must pass with score 1;
- the null agent and the untouched start state (`app.proving.verify`): both score 0;
- one skip replay per sub-goal: the reference with that sub-goal's actions and guards
  left out (its ``done`` and ``expect`` kept, so the phases still arrive). Each must
  fail at least one check. Its later guards are lenient (a guard that times out is
  passed over), so the replay reaches the end and the checks judge the final state.

A skip replay that passes means the checks cannot tell the sub-goal happened; the report
names the checks that still passed on every skip replay so the researcher can tighten
them.

The sub-goals are read off the reference itself: each ``done`` (with the ``expect``
after it) ends one, as `app.authoring.compile` writes them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.agents.reference_script import ExpectStep, Script, read_script, script_entries
from app.agents.scripted import ScriptedAgent
from app.core.actions import Done
from app.episode.launch import launch
from app.proving.verify import (
    Mode,
    RunVerdict,
    TaskVerdict,
    judge,
    record_proof,
    reference_kind,
    verify_run,
)
from app.store import Store
from app.tasks.loader import resolve_asset
from app.tasks.model import Task

DEFAULT_REPEATS = 3


def subgoal_spans(script: Script) -> list[range]:
    """Each sub-goal's own steps (indices into ``script.steps``): what comes before
    its ``done``, after the previous sub-goal's ``done`` and ``expect``."""
    spans: list[range] = []
    start = 0
    steps = script.steps
    i = 0
    while i < len(steps):
        if isinstance(steps[i], Done):
            spans.append(range(start, i))
            i += 1
            while i < len(steps) and isinstance(steps[i], ExpectStep):
                i += 1
            start = i
            continue
        i += 1
    return spans


def skip_script(script: Script, subgoal: int) -> Script:
    """`script` without sub-goal `subgoal`'s steps (its ``done`` and ``expect`` kept)."""
    dropped = set(subgoal_spans(script)[subgoal])
    kept = [step for i, step in enumerate(script.steps) if i not in dropped]
    return script.model_copy(update={"steps": kept})


@dataclass(frozen=True)
class SkipVerdict:
    subgoal: int
    """0-based: the sub-goal before the first boundary is 0."""
    ok: bool
    reason: str
    episode_id: int | None
    still_passing: tuple[str, ...] = ()
    """Checks that passed although the sub-goal was skipped."""


@dataclass
class Proof:
    task: Task
    runs: list[RunVerdict] = field(default_factory=list)
    skips: list[SkipVerdict] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.runs) and all(r.ok for r in self.runs) and all(s.ok for s in self.skips)

    @property
    def weak_checks(self) -> list[str]:
        """Checks that passed on every skip replay: whichever sub-goal was left out,
        they could not tell (a check that failed on a skip told that sub-goal, so it
        is not named, though it passes on the others)."""
        if not self.skips:
            return []
        every = set(self.skips[0].still_passing)
        for skip in self.skips[1:]:
            every &= set(skip.still_passing)
        return [check for check in self.skips[0].still_passing if check in every]

    def record(self, backend: str) -> Path:
        """Write the ledger entry `tasks proofs` reads (`app.tasks.proofs`), for a proof
        that holds; returns its path.

        Raises:
            ValueError: the proof does not hold.
        """
        if not self.ok:
            raise ValueError(f"{self.task.id} is not proven: no ledger entry is written")
        return record_proof(
            TaskVerdict(self.task, reference_kind(self.task), list(self.runs)), backend
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "task": self.task.id,
            "ok": self.ok,
            "runs": [
                {
                    "mode": r.mode,
                    "ok": r.ok,
                    "episode": r.episode_id,
                    "score": r.score,
                    "reason": r.reason,
                }
                for r in self.runs
            ],
            "skips": [
                {
                    "subgoal": s.subgoal,
                    "ok": s.ok,
                    "episode": s.episode_id,
                    "reason": s.reason,
                    "still_passing": list(s.still_passing),
                }
                for s in self.skips
            ],
            "weak_checks": self.weak_checks,
        }


async def prove_task(
    task: Task,
    store: Store,
    backend: str = "local",
    *,
    repeats: int = DEFAULT_REPEATS,
    progress: Callable[[str], None] | None = None,
) -> Proof:
    """Run every proof of `task` (see the module doc), one desktop at a time."""
    proof = Proof(task)

    def say(where: str) -> Callable[[str], None]:
        return lambda text: progress(f"{task.id} {where}: {text}") if progress else None

    def done(where: str, ok: bool, reason: str) -> None:
        if progress is not None:
            progress(f"{task.id} {where}: {'ok' if ok else 'FAILED'} — {reason}")

    for n in range(1, repeats + 1):
        run = await verify_run(task, "reference", store, backend, say(f"reference {n}/{repeats}"))
        proof.runs.append(run)
        done(f"reference {n}/{repeats}", run.ok, run.reason)
    modes: tuple[Mode, ...] = ("null", "untouched")
    for mode in modes:
        run = await verify_run(task, mode, store, backend, say(mode))
        proof.runs.append(run)
        done(mode, run.ok, run.reason)
    if task.reference is None:
        return proof
    path = resolve_asset(task.folder, task.reference, "reference")
    script = read_script(path)
    for k in range(len(subgoal_spans(script))):
        skip = await _skip_replay(task, store, backend, script, path, k, say(f"skip {k + 1}"))
        proof.skips.append(skip)
        done(f"skip sub-goal {k + 1}", skip.ok, skip.reason)
    return proof


async def _skip_replay(
    task: Task,
    store: Store,
    backend: str,
    script: Script,
    path: Path,
    subgoal: int,
    progress: Callable[[str], None],
) -> SkipVerdict:
    entries = script_entries(
        skip_script(script, subgoal), f"{path} (sub-goal {subgoal + 1} skipped)", path.parent
    )
    agent = ScriptedAgent(entries, name=f"skip:{subgoal + 1}", lenient_guards=True)
    result = await launch(task, store, backend=backend, agent=agent, progress=progress).run()
    if result.status != "finished":
        return SkipVerdict(
            subgoal, False, f"episode ended in error: {result.error}", result.episode_id
        )
    passing = tuple(f"{c.path} ({c.name})" for c in result.checks if c.passed)
    failing = [c for c in result.checks if not c.passed]
    if failing and not result.passed:
        names = ", ".join(f"{c.path} ({c.name})" for c in failing[:3])
        return SkipVerdict(
            subgoal, True, f"failed as it must ({names})", result.episode_id, passing
        )
    ok, reason = judge("null", result)  # the skip must fail like doing nothing would
    del ok
    return SkipVerdict(
        subgoal,
        False,
        f"passed without sub-goal {subgoal + 1}: the checks cannot tell it happened ({reason})",
        result.episode_id,
        passing,
    )


def proof_rows(proof: Proof) -> list[tuple[str, bool, str, str]]:
    """The proof as table rows, as `author verify` and the Author screen list it:
    (what ran, ok, episode, reason)."""
    rows: list[tuple[str, bool, str, str]] = [
        (run.mode, run.ok, "" if run.episode_id is None else str(run.episode_id), run.reason)
        for run in proof.runs
    ]
    rows += [
        (
            f"skip {skip.subgoal + 1}",
            skip.ok,
            "" if skip.episode_id is None else str(skip.episode_id),
            skip.reason,
        )
        for skip in proof.skips
    ]
    return rows
