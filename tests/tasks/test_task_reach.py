"""Phases that can never fire within the step budget are warned of by `tasks validate`
(app/tasks/reach.py): printed with file, line and field, without failing."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from app.cli import main
from app.core.triggers import parse_trigger
from app.tasks.loader import load_task
from app.tasks.reach import fewest_turns, phase_warnings

TASK = """\
id: demo-task
app: gimp
level: L1
title: Demo
instruction: Flip it.
phases:
  - message: First.
    trigger: {first}
  - message: Second.
    trigger: agent_done
budget: {{steps: 10}}
evaluate:
  all:
    - {{check: file_exists, path: ~/Desktop/out.png}}
"""


@pytest.mark.parametrize(
    ("raw", "turns"),
    [
        ("agent_done", 1),
        ("agent_ask", 1),
        ({"step_count": 7}, 7),
        ({"all": ["agent_done", {"step_count": 7}]}, 8),
        ({"any": ["agent_done", {"step_count": 7}]}, 1),
        ({"any": [{"all": ["agent_ask", {"step_count": 3}]}, {"step_count": 9}]}, 4),
        ({"all": [{"step_count": 2}, {"step_count": 5}]}, 5),
    ],
)
def test_the_fewest_turns_a_trigger_needs(raw: object, turns: int) -> None:
    assert fewest_turns(parse_trigger(raw)) == turns


def write(tmp_path: Path, first: str) -> Path:
    path = tmp_path / "demo-task.yaml"
    path.write_text(textwrap.dedent(TASK.format(first=first)))
    return path


def test_a_phase_within_the_budget_is_not_warned_of(tmp_path: Path) -> None:
    # 9 actions, then the second phase's DONE: exactly the 10 turns of the budget.
    assert phase_warnings(load_task(write(tmp_path, "{step_count: 9}"))) == []


def test_a_phase_past_the_budget_and_the_phases_after_it_are_warned_of(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "{all: [agent_done, {step_count: 10}]}")
    assert main(["tasks", "validate", str(path)]) == 0  # a warning never fails
    out = capsys.readouterr().out
    assert f"ok       {path}" in out
    assert (
        f"  warning: {path}:8: phases[0].trigger: can never fire within budget.steps (10): "
        "it needs at least 11 agent turns"
    ) in out
    assert (
        f"  warning: {path}:10: phases[1].trigger: can never fire: an earlier phase cannot "
        "fire within budget.steps (10)"
    ) in out
    assert "1 valid (1 with warnings), 0 invalid" in out


def test_a_later_phase_counts_the_turns_of_the_ones_before_it(tmp_path: Path) -> None:
    # 10 actions fire the first phase on the last turn; the second's DONE needs an 11th.
    (warning,) = phase_warnings(load_task(write(tmp_path, "{step_count: 10}")))
    assert warning.startswith("phases[1].trigger: can never fire within budget.steps (10)")
    assert "after the 10 the phases before it need" in warning


def test_the_shipped_tasks_have_no_phase_that_cannot_fire() -> None:
    from app.tasks.loader import load_tasks

    tasks, errors = load_tasks(Path(__file__).parents[2] / "tasks")
    assert not errors and tasks
    assert {t.id: phase_warnings(t) for t in tasks if phase_warnings(t)} == {}
