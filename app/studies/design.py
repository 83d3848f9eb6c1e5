"""A study's plan: for each participant code, the order of conditions and tasks.

Within participants, condition orders come from a Williams design (Williams, 1949): a
Latin square in which each condition stands once in each position and each condition
follows each other condition equally often (first-order carry-over balanced). For an
even number of conditions one square of n rows does it; for an odd number the square
and its mirror (2n rows) do. Participant k takes row k mod rows, so a plan is balanced
when its participants fill whole squares; `balance` says how far a plan is from that.
Between participants, conditions are handed out in turn from an order shuffled by the
seed, so group sizes differ by one at most.

Task order within a block is shuffled per participant and block from the plan's seed
(`random.Random` seeded with text, which is stable across Python versions and
machines), so the same seed gives the same plan everywhere.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from itertools import pairwise

from app.studies.model import Study


def williams_rows(n: int) -> list[list[int]]:
    """The rows of a Williams design for `n` conditions (0..n-1): n rows for an even
    n, 2n for an odd one (the square, then each row reversed); one row for n = 1."""
    if n < 1:
        raise ValueError("a design needs at least one condition")
    # The first row zig-zags: 0, 1, n-1, 2, n-2, ...; each next row adds 1 (mod n).
    first = [0]
    low, high = 1, n - 1
    for k in range(1, n):
        if k % 2:
            first.append(low)
            low += 1
        else:
            first.append(high)
            high -= 1
    rows = [[(c + r) % n for c in first] for r in range(n)]
    if n % 2 and n > 1:
        rows += [list(reversed(row)) for row in rows]
    return rows


def participant_codes(count: int, start: int = 1) -> list[str]:
    """P01, P02, ...: codes, never names; two digits at least, more for a larger study."""
    width = max(2, len(str(start + count - 1)))
    return [f"P{n:0{width}d}" for n in range(start, start + count)]


@dataclass(frozen=True)
class Trial:
    """One trial of a participant's session."""

    position: int
    """0-based place in the session (the practice trial, when there is one, is 0)."""
    condition: str
    task: str
    block: int
    """0-based block of `Tasks.blocks`; -1 for the practice trial."""
    condition_position: int
    """0-based place of the condition in the participant's order (the carry-over
    analysis's position)."""

    @property
    def practice(self) -> bool:
        return self.block < 0


@dataclass(frozen=True)
class Assignment:
    """One participant's conditions in order and their trials."""

    code: str
    conditions: tuple[str, ...]
    trials: tuple[Trial, ...]
    row: int
    """The design's row the conditions came from (between: the hand-out's turn)."""


@dataclass(frozen=True)
class Plan:
    study: str
    seed: int
    assignments: tuple[Assignment, ...]


def draw_seed() -> int:
    """A fresh seed for a study without one (recorded with the plan)."""
    return random.SystemRandom().randrange(1 << 31)


def condition_orders(study: Study, count: int, seed: int, first_row: int = 0) -> list[list[int]]:
    """The condition order (indices into `study.conditions`) of participants
    `first_row` .. `first_row + count - 1`."""
    n = len(study.conditions)
    design = study.design
    if design.participants == "between":
        turns = list(range(n))
        random.Random(f"{seed}:conditions").shuffle(turns)
        return [[turns[k % n]] for k in range(first_row, first_row + count)]
    if design.counterbalance == "none":
        return [list(range(n)) for _ in range(count)]
    rows = williams_rows(n)
    return [rows[k % len(rows)] for k in range(first_row, first_row + count)]


def plan_study(study: Study, codes: list[str], seed: int, first_row: int = 0) -> Plan:
    """The assignments of `codes` (the `first_row`-th participant of the study onward:
    a plan grown later keeps going through the design's rows)."""
    orders = condition_orders(study, len(codes), seed, first_row)
    blocks = study.tasks.blocks
    assignments = []
    for k, (code, order) in enumerate(zip(codes, orders, strict=True)):
        trials: list[Trial] = []
        first_condition = study.conditions[order[0]].id
        if study.tasks.practice:
            trials.append(Trial(0, first_condition, study.tasks.practice, -1, 0))
        for place, index in enumerate(order):
            condition = study.conditions[index].id
            if study.design.participants == "between":
                chosen = list(range(len(blocks)))
            else:
                chosen = [place if len(blocks) > 1 else 0]
            for block in chosen:
                tasks = list(blocks[block])
                if study.design.task_order == "random":
                    random.Random(f"{seed}:{code}:{block}:{place}").shuffle(tasks)
                for task in tasks:
                    trials.append(Trial(len(trials), condition, task, block, place))
        row = first_row + k
        assignments.append(
            Assignment(code, tuple(study.conditions[i].id for i in order), tuple(trials), row)
        )
    return Plan(study.id, seed, tuple(assignments))


@dataclass(frozen=True)
class Balance:
    """How balanced a set of condition orders is."""

    positions: dict[tuple[str, int], int]
    """(condition, 0-based position) → participants with it there."""
    pairs: dict[tuple[str, str], int]
    """(condition, the condition right after it) → how often."""
    conditions: tuple[str, ...]

    @property
    def by_position(self) -> bool:
        """Each condition equally often in each position."""
        return len(set(self.positions.values())) <= 1

    @property
    def by_carry_over(self) -> bool:
        """Each ordered pair of different conditions equally often neighbours."""
        counts = [
            self.pairs.get((a, b), 0) for a in self.conditions for b in self.conditions if a != b
        ]
        return len(set(counts)) <= 1

    def table(self) -> list[list[str]]:
        """Rows for a text table: the condition, then its count at each position."""
        width = max((p for _, p in self.positions), default=-1) + 1
        header = ["condition", *(f"position {p + 1}" for p in range(width))]
        rows = [
            [c, *(str(self.positions.get((c, p), 0)) for p in range(width))]
            for c in self.conditions
        ]
        return [header, *rows]


def balance(orders: list[tuple[str, ...]], conditions: tuple[str, ...]) -> Balance:
    """The balance of these condition orders (withdrawn participants left out by the
    caller, so the gap shows)."""
    positions: Counter[tuple[str, int]] = Counter()
    pairs: Counter[tuple[str, str]] = Counter()
    for order in orders:
        for place, condition in enumerate(order):
            positions[(condition, place)] += 1
        for a, b in pairwise(order):
            pairs[(a, b)] += 1
    width = max((len(o) for o in orders), default=0)
    for condition in conditions:
        for place in range(width):
            positions.setdefault((condition, place), 0)
    return Balance(dict(positions), dict(pairs), conditions)
