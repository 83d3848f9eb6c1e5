"""Check outcomes for tests that record scores without scoring a desktop."""

from __future__ import annotations

from typing import Any

from app.core.outcomes import CheckOutcome


def outcome(
    path: str,
    name: str = "file_exists",
    *,
    passed: bool,
    score: float,
    params: dict[str, Any] | None = None,
    weight: float = 1.0,
    required: bool = True,
    evidence: str = "",
    phase: int | None = None,
) -> CheckOutcome:
    """A check outcome as scoring makes one, with the schema's defaults for the rest."""
    return CheckOutcome(
        path=path,
        name=name,
        params=params or {},
        weight=weight,
        required=required,
        passed=passed,
        score=score,
        evidence=evidence,
        phase=phase,
    )
