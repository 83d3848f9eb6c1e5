"""The conversation of an episode: who said what, of which kind, and why it ended.

The protocol engine writes these, the agents and users read them, and the store keeps
them; they live on the ground floor so none of those needs another to name them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

UserKind = Literal["instruction", "clarification", "interruption", "feedback", "answer"]
AgentKind = Literal["question", "done", "fail"]
Source = Literal["task", "phase", "simulated", "person", "agent"]


class EndReason(StrEnum):
    DONE = "done"
    FAIL = "fail"
    STEP_BUDGET = "step_budget"
    TIME_BUDGET = "time_budget"
    ERROR = "error"
    ABORTED = "aborted"


@dataclass(frozen=True)
class Message:
    role: Literal["user", "agent"]
    kind: UserKind | AgentKind
    text: str
    step: int
    source: Source
    phase_index: int | None = None
