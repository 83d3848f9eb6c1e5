"""The task library as a whole: every task proven, each app's tasks covering the levels
and triggers, and the sample CI re-runs (tests/tasks/test_library_sample.py).

Each task's proof (`deskloop tasks verify --record`, tests/tasks/test_proofs.py) must be
current: editing a task, an asset it loads or its reference without proving it again
fails here. The desktop tests re-run the proofs of tests/library_sample.py; this file
checks that the sample stays representative of the library.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from app.core.triggers import trigger_to_raw
from app.tasks.loader import load_task, task_files
from app.tasks.model import OpenPageStep
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


def _app_files(app: str) -> list[Path]:
    return sorted((TASKS / app).glob("*.yaml"))


def _used_triggers(paths: list[Path]) -> set[str]:
    used: set[str] = set()
    for path in paths:
        for phase in yaml.safe_load(path.read_text()).get("phases") or []:
            _triggers(phase["trigger"], used)
    return used


def test_blender_tasks_cover_the_levels_and_interaction() -> None:
    paths = _app_files("blender")
    tasks = [load_task(p) for p in paths]
    assert len(tasks) >= 10
    assert {t.app for t in tasks} == {"blender"}
    assert {t.level for t in tasks} == {"L1", "L2", "L3"}
    assert len([t for t in tasks if t.phases]) >= 3
    used = _used_triggers(paths)
    assert used >= {"agent_done", "agent_ask", "step_count", "any", "all"}, used
    for path in paths:
        raw = yaml.safe_load(path.read_text())
        ref = yaml.safe_load((path.parent / raw["reference"]).read_text())
        # L3 workflows may be proven by an oracle; L1 and L2 by a GUI demonstration.
        expected = {"demonstration", "oracle"} if raw["level"] == "L3" else {"demonstration"}
        assert ref["kind"] in expected, path.name


def test_kdenlive_tasks_cover_every_level_and_trigger() -> None:
    tasks = [load_task(p) for p in _app_files("kdenlive")]
    assert {t.level for t in tasks} >= {"L1", "L2", "L3"}
    interactive = [t for t in tasks if t.phases]
    assert len(interactive) >= 3
    triggers = " ".join(str(trigger_to_raw(p.trigger)) for t in interactive for p in t.phases)
    for word in ("agent_done", "agent_ask", "step_count", "any", "all"):
        assert word in triggers, f"no interactive Kdenlive task uses {word}"


def test_web_tasks_cover_every_level_three_sites_and_interaction() -> None:
    tasks = [load_task(p) for p in _app_files("web")]
    assert {t.level for t in tasks} >= {"L1", "L2", "L3"}
    sites = {s.open_page.site for t in tasks for s in t.setup if isinstance(s, OpenPageStep)}
    assert len(sites) >= 3, sites
    interactive = [t for t in tasks if t.phases]
    assert len(interactive) >= 3
    triggers = " ".join(str(trigger_to_raw(p.trigger)) for t in interactive for p in t.phases)
    assert "agent_done" in triggers
