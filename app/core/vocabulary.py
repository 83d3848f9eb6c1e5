"""The episode's vocabulary: statuses, end reasons, message roles, kinds and sources,
phase kinds and statuses, user modes.

The single source of these words. The protocol engine, the agents and users, the TUI
and the store name them with the Literal types below (so mypy refuses a misspelt
one), and the store's SQL CHECK constraints are built from the tuples of their values
(so the database refuses one too). tests/test_store.py checks that every CHECK list
in a database equals the tuple here: a word added here needs a migration that
rebuilds the CHECK constraints of existing databases.

Nested Literals flatten (`UserKind` is "instruction" followed by the phase kinds),
so each list is written once.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

EpisodeStatus = Literal["running", "finished", "error"]
EndReason = Literal["done", "fail", "step_budget", "time_budget", "error", "aborted"]
"""Why an episode ended: the agent's DONE or FAIL, a spent budget, an error, or an
abort by the person in the loop."""
UserMode = Literal["simulated", "person"]
"""Who plays the user: a simulated user (scripted or a model) or a person."""

Role = Literal["user", "agent"]
PhaseKind = Literal["clarification", "interruption", "feedback", "answer"]
"""What a phase's message is to the agent; every user message kind but the
task's instruction."""
UserKind = Literal["instruction", PhaseKind]
AgentKind = Literal["question", "done", "fail"]
"""The agent's own words: ASK, DONE and FAIL."""
MessageKind = UserKind | AgentKind
Source = Literal["task", "phase", "simulated", "person", "agent"]
"""Where a message came from: the task's instruction, a phase, the simulated user,
the person, or the agent itself (its ASK / DONE / FAIL)."""
PhaseStatus = Literal["pending", "delivered", "never_delivered"]

EPISODE_STATUSES: Final[tuple[EpisodeStatus, ...]] = get_args(EpisodeStatus)
END_REASONS: Final[tuple[EndReason, ...]] = get_args(EndReason)
USER_MODES: Final[tuple[UserMode, ...]] = get_args(UserMode)
ROLES: Final[tuple[Role, ...]] = get_args(Role)
PHASE_KINDS: Final[tuple[PhaseKind, ...]] = get_args(PhaseKind)
USER_KINDS: Final[tuple[UserKind, ...]] = get_args(UserKind)
AGENT_KINDS: Final[tuple[AgentKind, ...]] = get_args(AgentKind)
SOURCES: Final[tuple[Source, ...]] = get_args(Source)
PHASE_STATUSES: Final[tuple[PhaseStatus, ...]] = get_args(PhaseStatus)
