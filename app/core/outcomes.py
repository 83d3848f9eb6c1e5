"""A check's outcome in an episode: the one shape it has from scoring to the screen.

Scoring (`app.episode.scoring`) makes one `CheckOutcome` per leaf of a check tree; the
runner hands those values to the store (`record_score`, `record_phase_checks`), which
reads the same type back (`Store.checks`) for the CLI, the TUI, reports and `verify`.
It lives on the ground floor because the store may import nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CheckOutcome:
    """One leaf of a check tree, scored."""

    path: str
    """The leaf's place in the task file: `evaluate.all[1]`, `phases[0].checks`."""
    name: str
    """The check's registry name (`image_size`)."""
    params: dict[str, Any]
    """The parameters the task gave the check, as JSON values."""
    weight: float
    required: bool
    passed: bool
    score: float
    """Partial credit in [0, 1]."""
    evidence: str
    """Why it passed or failed, readable (`~/Desktop/out.png is 1024×768, ...`)."""
    phase: int | None = None
    """The phase whose optional checks this belongs to; None for the final score."""
