"""A task's triggers and check trees are parsed once, when the task loads, and those
values are what the protocol, the runner, scoring and the store use; the raw forms
exist only at the edges (the YAML read, the JSON the store writes). A check's outcome
keeps one shape from scoring to the store and back.

Parsing is counted on the real functions: every app module that holds
`parse_trigger` or `parse_tree` gets a wrapper that counts the call and runs them.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

import app.episode.scoring
from app.agents.null import NullAgent
from app.checks.tree import EvalNode, parse_tree
from app.core.triggers import parse_trigger
from app.episode.runner import EpisodeRunner
from app.store import Store
from app.tasks.loader import load_task
from app.tasks.model import Task
from app.users.simulated import SimulatedUser
from tests.still_desktop import StillDesktop

TASK = """\
id: parsed-once
app: gimp
level: L2
title: Say DONE three times
instruction: Say DONE.
budget: {steps: 6, seconds: 60}
phases:
  - message: Say it again.
    trigger: {any: [agent_done, {step_count: 3}]}
    checks:
      all:
        - {check: file_exists, path: ~/a.png}
        - {check: file_not_exists, path: ~/b.png, required: false}
  - message: Once more.
    trigger: {all: [agent_done, {any: [agent_ask, agent_done]}]}
    kind: clarification
evaluate: {check: file_exists, path: ~/proof.txt}
"""


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times each parser has been called since the fixture was set up."""
    counts: Counter[str] = Counter()

    def counting(real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            counts[real.__name__] += 1
            return real(*args, **kwargs)

        return call

    for real in (parse_trigger, parse_tree):
        spy = counting(real)
        for name, module in list(sys.modules.items()):
            if name.startswith("app.") and getattr(module, real.__name__, None) is real:
                monkeypatch.setattr(module, real.__name__, spy)
    return counts


@pytest.fixture
def task_file(tmp_path: Path) -> Path:
    path = tmp_path / "parsed-once.yaml"
    path.write_text(TASK)
    return path


def test_a_load_parses_each_trigger_and_each_tree_once(
    task_file: Path, parses: Counter[str]
) -> None:
    task = load_task(task_file)
    # Two triggers; the evaluate tree and the first phase's tree.
    assert parses == {"parse_trigger": 2, "parse_tree": 2}
    tree = task.phase_tree(0)
    assert tree is task.phases[0].checks and tree is not None
    assert task.eval_tree is task.evaluate


async def test_an_episode_uses_the_values_the_task_holds(
    task_file: Path, tmp_path: Path, parses: Counter[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    task = load_task(task_file)
    loaded = Counter(parses)
    scored: list[EvalNode | None] = []
    real_score_state = app.episode.scoring.score_state

    def score_state(task: Task, state: Any, tree: EvalNode | None = None, phase: Any = None) -> Any:
        scored.append(tree)
        return real_score_state(task, state, tree, phase)

    monkeypatch.setattr(app.episode.scoring, "score_state", score_state)
    db = tmp_path / "db.sqlite"
    with Store(db) as store:
        runner = EpisodeRunner(
            task, StillDesktop(), NullAgent(), SimulatedUser(), store, backend="local"
        )
        result = await runner.run()
        # Nothing was parsed again while the episode ran and was scored.
        assert parses == loaded
        assert (result.status, result.end_reason, result.steps) == ("finished", "done", 3)
        assert runner.protocol is not None
        for spec, phase in zip(runner.protocol.phases, task.phases, strict=True):
            assert spec.trigger is phase.trigger
        # Phase 0's own tree at its delivery, then the task's evaluate tree (None: the
        # task's own) at the end.
        assert scored == [task.phase_tree(0), None]
        assert scored[0] is task.phases[0].checks

        # The final score's outcomes the runner returned are the ones the store reads back.
        recorded = store.checks(result.episode_id)
        assert [c for c in recorded if c.phase is None] == result.checks
        assert [(c.phase, c.path) for c in recorded] == [
            (0, "phases[0].checks.all[0]"),
            (0, "phases[0].checks.all[1]"),
            (None, "evaluate"),
        ]
        # The store reads each trigger back as the value the task holds.
        phases = store.phases(result.episode_id)
        assert [p.trigger for p in phases] == [p.trigger for p in task.phases]
        assert [p.kind for p in phases] == [None, "clarification"]

    # Each phase's trigger JSON is what the task file says.
    conn = sqlite3.connect(db)
    try:
        stored = [
            json.loads(text)
            for (text,) in conn.execute("SELECT trigger FROM phases ORDER BY idx").fetchall()
        ]
    finally:
        conn.close()
    assert stored == [phase["trigger"] for phase in yaml.safe_load(TASK)["phases"]]


def test_a_phase_dumps_its_trigger_in_the_task_files_form(task_file: Path) -> None:
    task = load_task(task_file)
    raw = yaml.safe_load(TASK)["phases"]
    assert [p.model_dump(mode="json", include={"trigger"}) for p in task.phases] == [
        {"trigger": phase["trigger"]} for phase in raw
    ]
