"""Which of a task's phases can fire within its step budget.

A phase that can never fire is not an error (the task still runs and is scored), but it
is almost always a mistake: `{step_count: 150}` in a task of 100 steps, or any phase
after such a one (phases fire in order). `tasks validate` prints these as warnings.

Every agent turn counts against `budget.steps`: a GUI action, an ASK and a DONE alike.
A phase's trigger is checked from the turn after the previous phase was delivered, and
`step_count` counts the GUI actions since then, so the fewest turns a phase needs add
up along the phases.
"""

from __future__ import annotations

from app.core.triggers import (
    AgentAsk,
    AgentDone,
    AllOf,
    AnyOf,
    Event,
    StepCount,
    Trigger,
    possible_events,
)
from app.tasks.model import Task


def _actions_needed(trigger: Trigger, event: Event) -> int | None:
    """The fewest GUI actions since the instruction became active for `trigger` to
    hold at an `event`; None when it cannot hold at that kind of event."""
    match trigger:
        case AgentDone():
            return 0 if event is Event.DONE else None
        case AgentAsk():
            return 0 if event is Event.ASK else None
        case StepCount(n):
            return n
        case AnyOf(children):
            options = [a for c in children if (a := _actions_needed(c, event)) is not None]
            return min(options) if options else None
        case AllOf(children):
            needs = [_actions_needed(c, event) for c in children]
            return None if None in needs else max(n for n in needs if n is not None)
    raise AssertionError(trigger)


def fewest_turns(trigger: Trigger) -> int | None:
    """The fewest agent turns, from the one after the instruction became active, until
    `trigger` holds (None: never, which the model already refuses)."""
    best: int | None = None
    for event in possible_events(trigger):
        actions = _actions_needed(trigger, event)
        if actions is None:
            continue
        # At an action event the action itself is one of the N; a DONE or an ASK is a
        # turn of its own after the actions.
        turns = max(actions, 1) if event is Event.ACTION else actions + 1
        best = turns if best is None else min(best, turns)
    return best


def phase_warnings(task: Task) -> list[str]:
    """One `phases[i].trigger: ...` line for each phase that can never fire within the
    task's step budget."""
    warnings: list[str] = []
    budget = task.budget.steps
    used = 0
    for i, phase in enumerate(task.phases):
        field = f"phases[{i}].trigger"
        if used > budget:
            warnings.append(
                f"{field}: can never fire: an earlier phase cannot fire within "
                f"budget.steps ({budget}), and phases fire in order"
            )
            continue
        turns = fewest_turns(phase.trigger)
        if turns is None:
            continue
        used += turns
        if used > budget:
            before = f" after the {used - turns} the phases before it need" if i else ""
            warnings.append(
                f"{field}: can never fire within budget.steps ({budget}): it needs at "
                f"least {turns} agent turns{before}"
            )
    return warnings
