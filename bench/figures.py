"""One figure a bench measured, beside the limit or peer it is judged against, and the
line that hands a bench's figures to `bench/run_all.py`.

A bench prints its own report for a person; with `--figures` it also prints one line,
`FIGURES <json>`, that `run_all` reads back, so the table there is made of the same
numbers the bench printed, measured in the same run.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

MARK = "FIGURES "


@dataclass(frozen=True)
class Figure:
    """`value` in `unit`, beside `against` (a limit or a peer measured in the same run,
    or a goal) when there is one."""

    measure: str
    value: float
    unit: str
    against: float | None = None
    against_label: str = ""
    """What `against` is: "limit: key → change", "goal", "vncdotool"…"""
    lower_is_better: bool = True

    @property
    def ratio(self) -> float | None:
        """value ÷ against (how many times the limit, the goal, the peer)."""
        if self.against is None or self.against == 0:
            return None
        return self.value / self.against


def emit(figures: list[Figure]) -> None:
    """Print the line `run_all` reads."""
    print(MARK + json.dumps([asdict(f) for f in figures]), flush=True)


def parse(output: str) -> list[Figure]:
    """The figures of a bench's output (the last `FIGURES` line); none when it has none."""
    for line in reversed(output.splitlines()):
        if line.startswith(MARK):
            return [Figure(**item) for item in json.loads(line[len(MARK) :])]
    return []
