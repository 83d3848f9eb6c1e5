"""Checkpoint and reliability figures over the attempts `app.metrics.summary` counts.

- **Per check** (leaf success): for each task, agent, user and leaf of the task's final
  check tree, the share of scored attempts in which that leaf passed. Only finished
  episodes recorded their checks: an agent's own error is an attempt with no checks,
  so it is in the success rate (as a failure) but in no check's rate; the n beside
  each rate says how many episodes it is over. A check that does not count toward pass/fail
  (a `judge` with `counts: false`) is listed too, marked as such.
- **Per phase**: for each task phase with its own `checks:`, agent and user, how many
  attempts reached it (it was delivered) and the share of those in which its checks
  passed (the tree's pass, recorded with the phase since migration 0010; for an
  episode recorded before, every required leaf of the phase passed, which is the same
  unless the tree has an `any` group, and then the phase is left out).
- **Repeats**: for each group, pass@k (unbiased estimator) and pass^k (all k drawn
  attempts succeed, as tau-bench reports), per unit (task × agent × user) with at
  least k attempts, averaged over those units, with a 95% t interval over them.
- **Paired**: for every two agents, the tasks (× user) both attempted; per task the
  difference of their success rates (first minus second, over each one's attempts),
  averaged, with a 95% t interval over the tasks.

Pure over records: `summary.summarize` reads the store and hands the attempts here.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from app.core.outcomes import CheckOutcome
from app.metrics.stats import Mean, Rate, mean_with_interval, pass_at_k, pass_hat_k
from app.store import EpisodeRecord, PhaseRecord

K_VALUES = (1, 2, 3, 5, 10)
"""The k of pass@k and pass^k that reports show (those some unit has k attempts for)."""

Key = tuple[str, str, str, str, str]
"""app, level, kind, agent, user: a group of `app.metrics.summary`."""


@dataclass(frozen=True)
class CheckRate:
    task_id: str
    agent: str
    user: str
    path: str
    name: str
    counts: bool
    """False for a check that is reported beside the others and never decides
    pass/fail (a `judge` with `counts: false`)."""
    rate: Rate


@dataclass(frozen=True)
class PhaseRate:
    task_id: str
    agent: str
    user: str
    phase: int
    attempts: int
    """Scored attempts of the task (each had the chance to reach the phase)."""
    rate: Rate
    """Attempts whose phase checks passed, of those that reached the phase."""

    @property
    def reached(self) -> int:
        return self.rate.n


@dataclass(frozen=True)
class RepeatRow:
    key: Key
    k: int
    units: int
    """task × agent × user units with at least k attempts."""
    pass_at: Mean
    pass_hat: Mean


@dataclass(frozen=True)
class PairedRow:
    first: str
    second: str
    first_rate: float
    """Mean over the shared tasks of the first agent's success rate."""
    second_rate: float
    difference: Mean
    """first − second, over the shared tasks, with its 95% t interval."""


def counts_toward_score(check: CheckOutcome) -> bool:
    """Whether a recorded check decides pass/fail: all do, except a judge the task
    did not make count (its params say `counts: false`)."""
    return check.params.get("counts", True) is not False if check.name == "judge" else True


def check_rates(
    attempts: Sequence[EpisodeRecord], checks: Mapping[int, Sequence[CheckOutcome]]
) -> list[CheckRate]:
    """Leaf success of each task's final checks over the attempts that recorded them,
    per agent and user."""
    tally: dict[tuple[str, str, str, str, str], list[int]] = {}
    judged: dict[tuple[str, str, str, str, str], bool] = {}
    for e in attempts:
        for c in checks.get(e.id, ()):
            if c.phase is not None:
                continue
            key = (e.task_id, e.agent, e.user_mode, c.path, c.name)
            counts = tally.setdefault(key, [0, 0])
            counts[0] += int(c.passed)
            counts[1] += 1
            judged[key] = counts_toward_score(c)
    return [
        CheckRate(*key, counts=judged[key], rate=Rate(k, n))
        for key, (k, n) in sorted(tally.items())
    ]


def phase_passed(phase: PhaseRecord, checks: Sequence[CheckOutcome]) -> bool | None:
    """Whether a delivered phase's checks passed; None if it cannot be told."""
    if phase.passed is not None:
        return phase.passed
    mine = [c for c in checks if c.phase == phase.idx]
    if not mine or any(".any[" in c.path for c in mine):
        return None
    return all(c.passed for c in mine if c.required)


def phase_rates(
    attempts: Sequence[EpisodeRecord],
    phases: Mapping[int, Sequence[PhaseRecord]],
    checks: Mapping[int, Sequence[CheckOutcome]],
) -> list[PhaseRate]:
    """Per task phase with checks, agent and user: attempts, reached, and passed of
    reached."""
    scored: dict[tuple[str, str, str], int] = {}
    tally: dict[tuple[str, str, str, int], list[int]] = {}
    with_checks: set[tuple[str, str, str, int]] = set()
    for e in attempts:
        if e.status != "finished":
            continue  # an agent's own error: nothing of its phases was scored
        unit = (e.task_id, e.agent, e.user_mode)
        scored[unit] = scored.get(unit, 0) + 1
        mine = checks.get(e.id, ())
        for c in mine:
            if c.phase is not None:
                with_checks.add((*unit, c.phase))
        for p in phases.get(e.id, ()):
            if p.status != "delivered":
                continue
            verdict = phase_passed(p, mine)
            if verdict is None:
                continue
            counts = tally.setdefault((*unit, p.idx), [0, 0])
            counts[0] += int(verdict)
            counts[1] += 1
    return [
        PhaseRate(*key, attempts=scored[key[:3]], rate=Rate(*tally.get(key, [0, 0])))
        for key in sorted(with_checks)
    ]


def _units(
    attempts: Iterable[EpisodeRecord],
) -> dict[tuple[str, str, str], list[EpisodeRecord]]:
    units: dict[tuple[str, str, str], list[EpisodeRecord]] = {}
    for e in attempts:
        units.setdefault((e.task_id, e.agent, e.user_mode), []).append(e)
    return units


def _succeeded(e: EpisodeRecord) -> bool:
    return bool(e.passed) and e.status == "finished"


def repeat_rows(
    attempts: Sequence[EpisodeRecord], key: Callable[[EpisodeRecord], Key]
) -> list[RepeatRow]:
    """pass@k and pass^k per group for each k of `K_VALUES` some unit reaches."""
    groups: dict[Key, list[EpisodeRecord]] = {}
    for e in attempts:
        groups.setdefault(key(e), []).append(e)
    rows = []
    for group_key, members in groups.items():
        counts = [
            (len(tries), sum(1 for t in tries if _succeeded(t)))
            for tries in _units(members).values()
        ]
        for k in K_VALUES:
            eligible = [(n, c) for n, c in counts if n >= k]
            if not eligible:
                break
            rows.append(
                RepeatRow(
                    group_key,
                    k,
                    len(eligible),
                    mean_with_interval([pass_at_k(n, c, k) for n, c in eligible], (0.0, 1.0)),
                    mean_with_interval([pass_hat_k(n, c, k) for n, c in eligible], (0.0, 1.0)),
                )
            )
    return rows


def paired_rows(attempts: Sequence[EpisodeRecord]) -> list[PairedRow]:
    """Every two agents over the tasks (× user) both attempted."""
    rates: dict[str, dict[tuple[str, str], float]] = {}
    for (task, agent, user), tries in _units(attempts).items():
        rates.setdefault(agent, {})[(task, user)] = sum(map(_succeeded, tries)) / len(tries)
    rows = []
    for first, second in itertools.combinations(sorted(rates), 2):
        shared = sorted(rates[first].keys() & rates[second].keys())
        if not shared:
            continue
        a = [rates[first][t] for t in shared]
        b = [rates[second][t] for t in shared]
        rows.append(
            PairedRow(
                first,
                second,
                sum(a) / len(a),
                sum(b) / len(b),
                mean_with_interval([x - y for x, y in zip(a, b, strict=True)], (-1.0, 1.0)),
            )
        )
    return rows
