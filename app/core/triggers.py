"""Phase triggers: when the pending phase's message is delivered.

A trigger is a condition checked at each agent event. There are three kinds of
event: a GUI action, a DONE and an ASK (FAIL never advances a phase, so triggers
are not checked at it).

- ``agent_done`` holds at a DONE event; ``agent_ask`` at an ASK event;
- ``{step_count: N}`` holds at any event once N GUI actions were taken since the
  current instruction became active;
- ``{any: [...]}`` holds when one child holds, ``{all: [...]}`` when every child
  holds at the same event.

A composition that can never hold (``all: [agent_done, agent_ask]``) is rejected
when the task loads: `possible_events` computes at which events a trigger can hold.

A `Trigger` is parsed once, from the task file, and that one value is what the task
model holds and the protocol, the runner, the store and the UI share. The raw form
(`trigger_to_raw`) exists only at the edges: the YAML read, the JSON the store writes
and reads back, and what `deskloop episodes show` prints. Triggers are the vocabulary
of the whole episode, so they live on the ground floor, where the store may import them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Event(StrEnum):
    ACTION = "action"
    DONE = "done"
    ASK = "ask"


ALL_EVENTS = frozenset(Event)


@dataclass(frozen=True)
class AgentDone:
    pass


@dataclass(frozen=True)
class AgentAsk:
    pass


@dataclass(frozen=True)
class StepCount:
    n: int


@dataclass(frozen=True)
class AnyOf:
    children: tuple[Trigger, ...]


@dataclass(frozen=True)
class AllOf:
    children: tuple[Trigger, ...]


Trigger = AgentDone | AgentAsk | StepCount | AnyOf | AllOf


class TriggerError(ValueError):
    """A malformed trigger; `path` is relative to the trigger ('any[1].step_count')."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message


def _join(base: str, key: str) -> str:
    if key.startswith("["):
        return base + key
    return f"{base}.{key}" if base else key


def parse_trigger(raw: Any) -> Trigger:
    """Parse the YAML (or stored JSON) form of a trigger (see module docstring)."""
    return _parse(raw, "")


def _parse(raw: Any, path: str) -> Trigger:
    if raw == "agent_done":
        return AgentDone()
    if raw == "agent_ask":
        return AgentAsk()
    if isinstance(raw, str):
        raise TriggerError(
            path,
            f"unknown trigger {raw!r}; expected agent_done, agent_ask, "
            "{step_count: N}, {any: [...]} or {all: [...]}",
        )
    if not isinstance(raw, dict) or len(raw) != 1:
        raise TriggerError(
            path,
            "a trigger is agent_done, agent_ask, or a mapping with exactly one of "
            f"step_count / any / all; got {raw!r}",
        )
    key, value = next(iter(raw.items()))
    if key == "step_count":
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise TriggerError(
                _join(path, "step_count"), f"expected a whole number ≥ 1, got {value!r}"
            )
        return StepCount(value)
    if key in ("any", "all"):
        if not isinstance(value, list) or not value:
            raise TriggerError(_join(path, key), "expected a non-empty list of triggers")
        children = tuple(_parse(item, _join(path, f"{key}[{i}]")) for i, item in enumerate(value))
        return AnyOf(children) if key == "any" else AllOf(children)
    if key in ("agent_done", "agent_ask"):
        raise TriggerError(path, f"write {key} as a plain string, not a mapping")
    raise TriggerError(path, f"unknown trigger key {key!r}; expected step_count, any or all")


def trigger_to_raw(trigger: Trigger) -> Any:
    """The YAML/JSON form, inverse of `parse_trigger`."""
    match trigger:
        case AgentDone():
            return "agent_done"
        case AgentAsk():
            return "agent_ask"
        case StepCount(n):
            return {"step_count": n}
        case AnyOf(children):
            return {"any": [trigger_to_raw(c) for c in children]}
        case AllOf(children):
            return {"all": [trigger_to_raw(c) for c in children]}
    raise AssertionError(trigger)


def possible_events(trigger: Trigger) -> frozenset[Event]:
    """The kinds of event at which the trigger can hold (empty = never)."""
    match trigger:
        case AgentDone():
            return frozenset({Event.DONE})
        case AgentAsk():
            return frozenset({Event.ASK})
        case StepCount():
            return ALL_EVENTS
        case AnyOf(children):
            return frozenset().union(*(possible_events(c) for c in children))
        case AllOf(children):
            result = ALL_EVENTS
            for child in children:
                result = result & possible_events(child)
            return result
    raise AssertionError(trigger)


def holds(trigger: Trigger, event: Event, actions_since_active: int) -> bool:
    """Whether the trigger holds at this event, given the GUI actions taken since
    the current instruction became active (the action of an ACTION event included)."""
    match trigger:
        case AgentDone():
            return event is Event.DONE
        case AgentAsk():
            return event is Event.ASK
        case StepCount(n):
            return actions_since_active >= n
        case AnyOf(children):
            return any(holds(c, event, actions_since_active) for c in children)
        case AllOf(children):
            return all(holds(c, event, actions_since_active) for c in children)
    raise AssertionError(trigger)


def describe_trigger(trigger: Trigger) -> str:
    """Human-readable: 'after 10 actions', 'when the agent says DONE', ..."""
    match trigger:
        case AgentDone():
            return "when the agent says DONE"
        case AgentAsk():
            return "when the agent asks"
        case StepCount(n):
            return f"after {n} GUI action{'s' if n != 1 else ''}"
        case AnyOf(children):
            return "(" + " or ".join(describe_trigger(c) for c in children) + ")"
        case AllOf(children):
            return "(" + " and ".join(describe_trigger(c) for c in children) + ")"
    raise AssertionError(trigger)
