"""The conversation of an episode: who said what, of which kind, from where.

The protocol engine writes these, the agents and users read them, and the store keeps
them; they live on the ground floor so none of those needs another to name them. The
words themselves (roles, kinds, sources) are `app.core.vocabulary`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from app.core.vocabulary import MessageKind, MessageOrigin, Role, Source


@dataclass(frozen=True)
class Message:
    role: Role
    kind: MessageKind
    text: str
    step: int
    source: Source
    phase_index: int | None = None
    origin: MessageOrigin | None = None
    """A person's message only: the script's text as offered, edited, or free."""
    scripted: str | None = None
    """The script's message the person was offered as a draft (person mode), if any."""
    wait_seconds: float | None = None
    """How long the episode waited for the person before this message (person mode);
    that time is not counted against the time budget."""
    number: int | None = field(default=None, compare=False)
    """Its place in the episode's conversation (0: the first instruction), given by the
    protocol engine that made it; None for a message made elsewhere (a test's, a record
    read back). Records key on it: two messages may say the same thing at the same
    step (a person injecting a line twice) and are still two, which is also why it
    takes no part in equality, where a message is what was said."""


def describe_origin(origin: str, scripted: str | None, wait_seconds: float | None = None) -> str:
    """In words, how a person's message relates to the script (person mode), for the
    replay and `deskloop episodes show`."""
    if origin == "script":
        text = "sent as the script offered it"
    elif origin == "edited":
        text = f"edited from the script's: {scripted}"
    else:
        text = "the person's own words" + (f" (the script offered: {scripted})" if scripted else "")
    if wait_seconds is not None:
        text += f"; after {wait_seconds:.1f} s"
    return text


def message_step(step: int, role: str) -> str:
    """Where a message belongs in the step log's numbering: the label every view of a
    conversation gives it (the model's requests, `deskloop episodes show`, the TUI).
    A message's `step` counts the agent turns completed when it arrived, while the step
    log numbers turns from 0: the agent's ASK/DONE/FAIL of step-log row N has step
    N + 1 ('step N'), and a user message with step N + 1 arrived after that row
    ('after step N'); step 0 is the start."""
    if step == 0:
        return "start"
    return f"step {step - 1}" if role == "agent" else f"after step {step - 1}"
