"""Study plans: Williams designs balance positions and carry-over for any number of
conditions, task orders come from the seed, and between-participant groups are even."""

from __future__ import annotations

from collections import Counter
from itertools import pairwise
from pathlib import Path

import pytest

from app.studies.design import balance, participant_codes, plan_study, williams_rows
from app.studies.loader import load_study
from app.studies.model import Study
from tests.studies.helpers import write_study


@pytest.mark.parametrize("n", range(1, 9))
def test_a_williams_design_balances_positions_and_neighbours(n: int) -> None:
    rows = williams_rows(n)
    assert len(rows) == (2 * n if n % 2 and n > 1 else n)
    for row in rows:
        assert sorted(row) == list(range(n))
    # Each condition equally often in each position.
    for place in range(n):
        assert Counter(row[place] for row in rows) == {c: len(rows) // n for c in range(n)}
    # Each ordered pair of different conditions equally often neighbours.
    pairs = Counter(pair for row in rows for pair in pairwise(row))
    if n > 1:
        assert set(pairs) == {(a, b) for a in range(n) for b in range(n) if a != b}
        assert len(set(pairs.values())) == 1


def _study(tmp_path: Path, conditions: int, **design: object) -> Study:
    path = write_study(
        tmp_path,
        conditions=[{"id": f"c{k}", "agent": "reference"} for k in range(conditions)],
        tasks={
            "practice": "warm-up",
            "blocks": [[f"t{b}{i}" for i in range(3)] for b in range(conditions)],
        },
        design=design,
    )
    return load_study(path)


def test_three_conditions_six_participants_are_balanced(tmp_path: Path) -> None:
    study = _study(tmp_path, 3, seed=7)
    plan = plan_study(study, participant_codes(6), seed=7)
    orders = [a.conditions for a in plan.assignments]
    table = balance(orders, ("c0", "c1", "c2"))
    assert table.by_position and table.by_carry_over
    assert set(table.positions.values()) == {2}
    for assignment in plan.assignments:
        practice, *trials = assignment.trials
        assert practice.practice and practice.task == "warm-up"
        assert practice.condition == assignment.conditions[0]
        # The k-th condition runs block k, each of its tasks once.
        for place, condition in enumerate(assignment.conditions):
            ran = [t for t in trials if t.condition_position == place]
            assert {t.condition for t in ran} == {condition}
            assert sorted(t.task for t in ran) == [f"t{place}{i}" for i in range(3)]
        assert [t.position for t in assignment.trials] == list(range(10))


def test_five_participants_of_a_three_condition_design_are_not(tmp_path: Path) -> None:
    study = _study(tmp_path, 3)
    plan = plan_study(study, participant_codes(5), seed=1)
    table = balance([a.conditions for a in plan.assignments], ("c0", "c1", "c2"))
    assert not table.by_position
    assert table.table()[0] == ["condition", "position 1", "position 2", "position 3"]


def test_the_seed_decides_the_task_order(tmp_path: Path) -> None:
    study = _study(tmp_path, 2)
    codes = participant_codes(12)
    first = plan_study(study, codes, seed=11)
    assert first == plan_study(study, codes, seed=11)
    other = plan_study(study, codes, seed=12)
    assert [a.trials for a in first.assignments] != [a.trials for a in other.assignments]
    fixed = plan_study(_study(tmp_path, 2, task_order="fixed"), codes, seed=11)
    for assignment in fixed.assignments:
        tasks = [t.task for t in assignment.trials if not t.practice]
        assert tasks[:3] == ["t00", "t01", "t02"]


def test_a_plan_grown_later_goes_on_through_the_rows(tmp_path: Path) -> None:
    study = _study(tmp_path, 4)
    whole = plan_study(study, participant_codes(8), seed=3)
    later = plan_study(study, participant_codes(4, start=5), seed=3, first_row=4)
    assert whole.assignments[4:] == later.assignments


def test_between_participants_groups_differ_by_one_at_most(tmp_path: Path) -> None:
    study = _study(tmp_path, 3, participants="between")
    plan = plan_study(study, participant_codes(7), seed=5)
    groups = Counter(a.conditions for a in plan.assignments)
    assert sorted(groups.values()) == [2, 2, 3]
    for assignment in plan.assignments:
        (condition,) = assignment.conditions
        # The one condition runs every block, in order.
        assert [t.block for t in assignment.trials] == [-1, 0, 0, 0, 1, 1, 1, 2, 2, 2]
        assert {t.condition for t in assignment.trials} == {condition}


def test_participant_codes_never_name_anyone() -> None:
    assert participant_codes(3) == ["P01", "P02", "P03"]
    assert participant_codes(2, start=99) == ["P099", "P100"]
