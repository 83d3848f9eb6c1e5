"""The proof ledger: one file per proven task, bound to what the proof ran on.

`deskloop tasks verify --record` writes `<task folder>/proofs/<task id>.json` when a
task's three verification episodes come out as they must (reference 1, null 0,
untouched 0). The file names the *proof key*: a hash of the task's YAML, of its start
state (setup steps and the bytes of the assets and web pages they load, `setup_key`)
and of its reference file. Editing any of those makes the proof stale, and the library
check (`deskloop tasks proofs`, and the test suite) says so until the task is proven
again.

The evaluator's version (a hash of the checks' source) is recorded but not part of the
key: a change to one check would otherwise unprove the whole library. `tasks proofs`
shows which proofs were made by an older evaluator, so a researcher can re-prove them.

Why a ledger: proving a task means three episodes on real desktops (a minute or more
for a GUI reference). The test suite cannot re-run all of them within CI's limit, so it
re-runs a fixed sample and checks that every other task's proof is current.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from app.core.errors import TaskError
from app.core.files import write_atomic
from app.tasks.loader import resolve_asset, setup_key
from app.tasks.model import Task

PROOF_FORMAT = 1
PROOFS_DIR = "proofs"
APPS = ("gimp", "blender", "kdenlive", "web")
LEVELS = ("L1", "L2", "L3")
KINDS = ("standard", "interactive")

ProofState = Literal["proven", "stale", "missing", "invalid"]


def proof_path(task: Task) -> Path:
    """Where the proof of `task` lives: beside the task, in `proofs/<id>.json`."""
    return task.folder / PROOFS_DIR / f"{task.id}.json"


def reference_sha256(task: Task) -> str:
    """The hash of the task's reference file ('' when the task has none).

    Raises:
        TaskError: the reference file cannot be read or lies outside the task folder.
    """
    if task.reference is None:
        return ""
    try:
        path = resolve_asset(task.folder, task.reference, "reference")
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except (ValueError, OSError) as exc:
        raise TaskError(f"{task.source}: reference: {exc}") from exc


def proof_key(task: Task) -> str:
    """What a proof is bound to: the task file, its start state and its reference."""
    parts = [f"deskloop-proof-{PROOF_FORMAT}", task.sha256, setup_key(task), reference_sha256(task)]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def task_kind(task: Task) -> str:
    return "interactive" if task.interactive else "standard"


def write_proof(
    task: Task,
    *,
    reference_kind: str,
    evaluator: str,
    backend: str,
    runs: dict[str, dict[str, Any]],
) -> Path:
    """Record a successful proof of `task`; returns the file written."""
    path = proof_path(task)
    record = {
        "format": PROOF_FORMAT,
        "task": task.id,
        "app": task.app,
        "level": task.level,
        "kind": task_kind(task),
        "key": proof_key(task),
        "reference_kind": reference_kind,
        "evaluator": evaluator,
        "backend": backend,
        "runs": runs,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, (json.dumps(record, indent=2, sort_keys=True) + "\n").encode("utf-8"))
    return path


@dataclass(frozen=True)
class ProofStatus:
    task: Task
    state: ProofState
    detail: str
    """Why it is not proven (or the evaluator version behind the proof)."""
    evaluator: str = ""


def read_proof(task: Task) -> ProofStatus:
    """The state of `task`'s proof: proven (current), stale, missing or invalid."""
    path = proof_path(task)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return ProofStatus(task, "missing", f"{path}: no proof; run deskloop tasks verify --record")
    except (OSError, ValueError) as exc:
        return ProofStatus(task, "invalid", f"{path}: unreadable proof: {exc}")
    if not isinstance(record, dict) or record.get("format") != PROOF_FORMAT:
        return ProofStatus(task, "invalid", f"{path}: format: expected {PROOF_FORMAT}")
    runs = record.get("runs")
    if record.get("task") != task.id or not isinstance(runs, dict):
        return ProofStatus(task, "invalid", f"{path}: task or runs: not a proof of {task.id}")
    expected = {"reference": True, "null": False, "untouched": False}
    for mode, passed in expected.items():
        run = runs.get(mode)
        if not isinstance(run, dict) or run.get("passed") is not passed:
            return ProofStatus(task, "invalid", f"{path}: runs.{mode}: missing or wrong outcome")
    if record.get("key") != proof_key(task):
        return ProofStatus(
            task,
            "stale",
            f"{path}: the task, its assets or its reference changed since it was proven; "
            "run deskloop tasks verify --record again",
            str(record.get("evaluator", "")),
        )
    return ProofStatus(
        task, "proven", str(record.get("evaluator", "")), str(record.get("evaluator", ""))
    )


def cell_counts(statuses: Iterable[ProofStatus]) -> Counter[tuple[str, str, str]]:
    """Proven tasks per (app, level, kind); every cell of the grid is present."""
    counts: Counter[tuple[str, str, str]] = Counter(
        {(a, lv, k): 0 for a in APPS for lv in LEVELS for k in KINDS}
    )
    for status in statuses:
        if status.state == "proven":
            counts[(status.task.app, status.task.level, task_kind(status.task))] += 1
    return counts
