"""The episode's vocabulary: statuses, end reasons, error kinds, message roles, kinds and
sources, phase kinds and statuses, user modes.

The single source of these words. The protocol engine, the agents and users, the TUI
and the store name them with the Literal types below (so mypy refuses a misspelt
one), and the store's SQL CHECK constraints are built from the tuples of their values
(so the database refuses one too). tests/store/test_schema.py checks that every CHECK list
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
DesktopErrorKind = Literal["desktop", "vnc", "guest"]
"""The desktop side failed: the desktop itself, its VNC connection or its guest channel.
Before the agent's first step this means the desktop never came up on its host."""
InfrastructureErrorKind = Literal[
    DesktopErrorKind,
    "endpoint",
    "agent_unavailable",
    "user_unavailable",
    "time_limit",
    "interrupted",
]
"""Not the agent's fault, and a retry on a fresh desktop may succeed: the desktop side,
a model endpoint that stayed unavailable (the agent's, the LLM user's, or one called
directly), the batch's time limit, a runner that died."""
AgentErrorKind = Literal["agent", "action"]
"""The agent's own doing: it could not run or answered with what cannot be acted on."""
ErrorKind = Literal[
    InfrastructureErrorKind,
    AgentErrorKind,
    "task",
    "user",
    "endpoint_refused",
    "check",
    "image",
    "store",
    "other",
    "aborted",
    "internal",
]
"""What failed in an episode that ended in an error: the infrastructure, the agent, or
something a retry would meet again and that says nothing of the agent: the task file,
the LLM user, a refused endpoint request, a check, a VM image, the store, another
DeskLoop error (a refused setting), an abort by a person or a signal, or a bug
(`internal`: an exception DeskLoop did not raise on purpose)."""
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
StepActor = Literal["agent", "person"]
"""Who took a step: the episode's agent, or the person taking over from the live view
(their clicks, drags, scrolls and keys, recorded between the agent's steps)."""

MessageOrigin = Literal["script", "edited", "free"]
"""How a person's message relates to the script (person mode): the due phase's
scripted message sent as offered, an edit of it, or the person's own words (also
every person message no script offered a draft for)."""

TrialStatus = Literal["running", "done", "interrupted"]
"""A try of a study's trial: running its episode, done (the episode ended, whatever
its outcome), or interrupted (a crash, a dead desktop, a closed terminal: the next
session tries the trial again as a new try)."""
QuestionnairePoint = Literal["pre_study", "post_trial", "post_condition", "post_study"]
"""When a study asks its questionnaires."""
EpisodeRequest = Literal["pause", "resume", "abort"]
"""What another process may ask of a running episode (app.store.requests)."""

EPISODE_STATUSES: Final[tuple[EpisodeStatus, ...]] = get_args(EpisodeStatus)
END_REASONS: Final[tuple[EndReason, ...]] = get_args(EndReason)
ERROR_KINDS: Final[tuple[ErrorKind, ...]] = get_args(ErrorKind)
INFRASTRUCTURE_ERROR_KINDS: Final[tuple[InfrastructureErrorKind, ...]] = get_args(
    InfrastructureErrorKind
)
DESKTOP_ERROR_KINDS: Final[tuple[DesktopErrorKind, ...]] = get_args(DesktopErrorKind)
AGENT_ERROR_KINDS: Final[tuple[AgentErrorKind, ...]] = get_args(AgentErrorKind)
USER_MODES: Final[tuple[UserMode, ...]] = get_args(UserMode)
ROLES: Final[tuple[Role, ...]] = get_args(Role)
PHASE_KINDS: Final[tuple[PhaseKind, ...]] = get_args(PhaseKind)
USER_KINDS: Final[tuple[UserKind, ...]] = get_args(UserKind)
AGENT_KINDS: Final[tuple[AgentKind, ...]] = get_args(AgentKind)
SOURCES: Final[tuple[Source, ...]] = get_args(Source)
PHASE_STATUSES: Final[tuple[PhaseStatus, ...]] = get_args(PhaseStatus)
MESSAGE_ORIGINS: Final[tuple[MessageOrigin, ...]] = get_args(MessageOrigin)
STEP_ACTORS: Final[tuple[StepActor, ...]] = get_args(StepActor)
TRIAL_STATUSES: Final[tuple[TrialStatus, ...]] = get_args(TrialStatus)
QUESTIONNAIRE_POINTS: Final[tuple[QuestionnairePoint, ...]] = get_args(QuestionnairePoint)
EPISODE_REQUESTS: Final[tuple[EpisodeRequest, ...]] = get_args(EpisodeRequest)
