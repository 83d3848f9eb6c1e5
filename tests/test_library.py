"""The task library as a whole: every task proven, and the sample CI re-runs.

Each task's proof (`deskloop tasks verify --record`, tests/test_proofs.py) must be
current: editing a task, an asset it loads or its reference without proving it again
fails here. The desktop tests re-run the proofs of tests/library_sample.py; this file
checks that the sample stays representative of the library.
"""

from __future__ import annotations

from typing import Any

import yaml

from app.tasks.loader import load_task, task_files
from app.tasks.proofs import cell_counts, read_proof, task_kind
from tests.library_sample import SAMPLE, TASKS


def _checks(node: Any, found: set[str]) -> set[str]:
    """Every check kind in a task's YAML (evaluator and phase checks)."""
    if isinstance(node, dict):
        if isinstance(node.get("check"), str):
            found.add(node["check"])
        for value in node.values():
            _checks(value, found)
    elif isinstance(node, list):
        for value in node:
            _checks(value, found)
    return found


def _triggers(trigger: Any, found: set[str]) -> set[str]:
    """Every trigger kind in a phase's trigger, composed ones (any, all) included."""
    if isinstance(trigger, str):  # agent_done, agent_ask
        found.add(trigger)
        return found
    ((kind, value),) = trigger.items()
    found.add(kind)
    if kind in ("any", "all"):
        for part in value:
            _triggers(part, found)
    return found


def _library() -> dict[str, dict[str, Any]]:
    return {path.stem: yaml.safe_load(path.read_text()) for path in task_files(TASKS)}


def test_every_task_has_a_current_proof() -> None:
    unproven = []
    for path in task_files(TASKS):
        status = read_proof(load_task(path))
        if status.state != "proven":
            unproven.append(f"{status.task.id}: {status.state}: {status.detail}")
    assert not unproven, "\n".join(unproven)


def test_the_sample_holds_every_cell_check_and_trigger_of_the_library() -> None:
    library = _library()
    sampled = {task_id for ids in SAMPLE.values() for task_id in ids}
    assert sampled <= set(library), sampled - set(library)
    for app, ids in SAMPLE.items():
        assert all(library[i]["app"] == app for i in ids), app

    def cells(ids: set[str]) -> set[tuple[str, str, str]]:
        out: set[tuple[str, str, str]] = set()
        for i in ids:
            task = load_task(TASKS / library[i]["app"] / f"{i}.yaml")
            out.add((task.app, task.level, task_kind(task)))
        return out

    def checks(ids: set[str]) -> set[str]:
        found: set[str] = set()
        for i in ids:
            _checks(library[i], found)
        return found

    def triggers(ids: set[str]) -> set[str]:
        found: set[str] = set()
        for i in ids:
            for phase in library[i].get("phases") or []:
                _triggers(phase["trigger"], found)
        return found

    everything = set(library)
    assert cells(everything) - cells(sampled) == set()
    assert checks(everything) - checks(sampled) == set()
    assert triggers(everything) - triggers(sampled) == set()


def test_the_library_meets_its_bar() -> None:
    """At least 150 proven tasks, every app × level × kind cell holding 3."""
    statuses = [read_proof(load_task(path)) for path in task_files(TASKS)]
    counts = cell_counts(statuses)
    short = {cell: n for cell, n in counts.items() if n < 3}
    assert not short, short
    assert sum(counts.values()) >= 150, sum(counts.values())
