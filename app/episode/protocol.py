"""The interaction protocol: phases, triggers, budgets and the conversation.

Pure logic with no I/O and no clock: the runner tells the engine what the agent
did and how many seconds have passed, and the engine answers what happens next
(a phase is delivered, the user must answer, the episode ends). DESIGN.md's
"interaction protocol" section is the specification; in short:

- GUI action: counted; then the pending phase fires if its trigger holds.
- DONE: if the pending phase's trigger holds, that phase is delivered and the
  episode goes on; otherwise the episode ends.
- ASK: if the pending phase's trigger holds, its message is the answer; otherwise
  the user must answer (`answer`). ASK never ends the episode and is not a GUI action.
- FAIL: ends the episode; never advances a phase.
- Every agent turn counts against the step budget; the time budget is checked at
  every turn (the runner also bounds the agent's thinking time).

A message's `step` is the number of agent turns completed when it arrived, so the
agent sees it from step index `step` on.

Person mode (`person_phases`): a person is the user, so a phase whose trigger holds
is not delivered by the script. It becomes *due* (`Outcome.phase_due`): the runner
offers its scripted message to the person as a draft and delivers what they send
(`answer`, `review` or `send_due`), recorded with how it relates to the script.
At a DONE the person may also accept, which ends the episode with the phase never
delivered.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.core.actions import Action, Ask, Done, Fail, answer_text, is_gui_action
from app.core.conversation import Message
from app.core.triggers import Event, Trigger, describe_trigger, holds
from app.core.vocabulary import (
    AgentKind,
    EndReason,
    MessageOrigin,
    PhaseKind,
    Source,
    UserKind,
)


@dataclass(frozen=True)
class PhaseSpec:
    message: str
    trigger: Trigger
    """The task's own parsed value (app.tasks.model.Phase.trigger), not a copy."""
    kind: PhaseKind | None = None


@dataclass(frozen=True)
class Outcome:
    """What the runner must do after an agent turn."""

    messages: tuple[Message, ...] = ()
    """New conversation entries, in order (the agent's own words first)."""
    delivered_phase: int | None = None
    needs_answer: bool = False
    """An ASK no phase answered: the user (simulated or person) must call `answer`."""
    needs_review: bool = False
    """A DONE no phase answered, with `review_done` on: the user must `review` it."""
    ended: EndReason | None = None
    phase_due: int | None = None
    """Person mode: the phase whose trigger holds, waiting for the person's message
    (after a GUI action alone; with `needs_answer` / `needs_review` its message is
    the draft of the answer or the feedback)."""


@dataclass(frozen=True)
class Reply:
    """How a person's message came about (person mode), for its record."""

    origin: MessageOrigin | None = None
    scripted: str | None = None
    wait_seconds: float | None = None


@dataclass
class Protocol:
    instruction: str
    phases: list[PhaseSpec]
    max_steps: int
    max_seconds: float
    conversation: list[Message] = field(default_factory=list)
    """Every message so far, in order; each one's `number` is its place here."""
    steps: int = 0
    person_steps: int = 0
    """Of `steps`, those the person took over from the live view: they take a step
    number but fire no trigger and use none of the agent's step budget."""
    actions_since_active: int = 0
    next_phase: int = 0
    delivered: list[int] = field(default_factory=list)
    ended: EndReason | None = None
    awaiting_answer: bool = False
    review_done: bool = False
    """When set (a person in the loop), a DONE that no phase answers waits for the
    user's review: accepting ends the episode, feedback continues it."""
    awaiting_review: bool = False
    person_phases: bool = False
    """Person mode: a phase whose trigger holds waits for the person (see the module)."""
    phase_due: int | None = None
    awaiting_phase: bool = False
    """Person mode: a GUI action made a phase due; `send_due` delivers it."""
    last_answer: Any = None
    """The answer (text or JSON) of the latest agent output if it was a DONE; None after
    any other output. See `returned`."""

    def __post_init__(self) -> None:
        if self.max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        self.conversation.append(
            Message(
                role="user",
                kind="instruction",
                text=self.instruction,
                step=0,
                source="task",
                number=len(self.conversation),
            )
        )

    # -- state the agent and UI see -------------------------------------------------

    @property
    def active_message(self) -> Message:
        """The latest user message: the active instruction."""
        return next(m for m in reversed(self.conversation) if m.role == "user")

    @property
    def pending_phase(self) -> int | None:
        return self.next_phase if self.next_phase < len(self.phases) else None

    @property
    def due_message(self) -> str | None:
        """The scripted message of the phase due in person mode (the person's draft)."""
        return None if self.phase_due is None else self.phases[self.phase_due].message

    @property
    def returned(self) -> Any:
        """The value the agent returned: the answer of the DONE that ended the episode
        (directly, or once a person accepted it). None while the episode runs, when it
        ended otherwise (a budget, FAIL, an error), or when that DONE carried none."""
        return self.last_answer if self.ended == "done" else None

    def pending_description(self) -> str:
        index = self.pending_phase
        if index is None:
            return "no phases left"
        return f"phase {index + 1}: {describe_trigger(self.phases[index].trigger)}"

    # -- events ---------------------------------------------------------------------

    def on_agent(self, action: Action, elapsed: float) -> Outcome:
        """Process one agent output (a GUI action already executed, DONE, ASK, FAIL).

        Raises:
            RuntimeError: the episode already ended, or an ASK is still unanswered.
        """
        if self.ended is not None:
            raise RuntimeError(f"episode already ended ({self.ended})")
        if self.awaiting_answer:
            raise RuntimeError("the previous ASK has not been answered")
        if self.awaiting_review:
            raise RuntimeError("the previous DONE has not been reviewed")
        if self.awaiting_phase:
            raise RuntimeError("the due phase has not been delivered")
        self.steps += 1
        self.last_answer = action.answer if isinstance(action, Done) else None
        new: list[Message] = []
        delivered: int | None = None
        needs_answer = False
        needs_review = False
        ended: EndReason | None = None

        if is_gui_action(action):
            self.actions_since_active += 1
            delivered = self._maybe_deliver(Event.ACTION, "interruption", new)
            self.awaiting_phase = self.phase_due is not None
        elif isinstance(action, Done):
            said = "DONE" if action.answer is None else f"DONE: {answer_text(action.answer)}"
            new.append(self._agent_message("done", said))
            delivered = self._maybe_deliver(Event.DONE, "feedback", new)
            if delivered is None:
                if self.review_done or self.phase_due is not None:
                    needs_review = True
                    self.awaiting_review = True
                else:
                    ended = "done"
        elif isinstance(action, Ask):
            new.append(self._agent_message("question", action.question))
            delivered = self._maybe_deliver(Event.ASK, "answer", new)
            if delivered is None:
                needs_answer = True
                self.awaiting_answer = True
        elif isinstance(action, Fail):
            new.append(self._agent_message("fail", action.reason))
            ended = "fail"

        if ended is None and not (needs_answer or needs_review or self.awaiting_phase):
            ended = self._budget_end(elapsed)
        if ended is not None:
            self.ended = ended
        return Outcome(tuple(new), delivered, needs_answer, needs_review, ended, self.phase_due)

    def on_person(self) -> int:
        """The person acted on the desktop themselves (take-over); returns the step's index.

        It is a step of the record, not of the agent: no trigger counts it and the step
        budget is the agent's alone.

        Raises:
            RuntimeError: the episode already ended.
        """
        if self.ended is not None:
            raise RuntimeError(f"episode already ended ({self.ended})")
        index = self.steps
        self.steps += 1
        self.person_steps += 1
        return index

    def on_rejected(self, elapsed: float) -> Outcome:
        """An agent turn whose action could not be executed (recorded with its reason).

        It uses a step of the budget but is not a GUI action, so it never fires a
        trigger: the agent may retry within the budget.
        """
        if self.ended is not None:
            raise RuntimeError(f"episode already ended ({self.ended})")
        self.steps += 1
        ended = self._budget_end(elapsed)
        if ended is not None:
            self.ended = ended
        return Outcome((), None, False, False, ended)

    def answer(
        self, text: str, source: Source, elapsed: float, reply: Reply | None = None
    ) -> Outcome:
        """The user's answer to an ASK that no phase answered (in person mode, also
        to one a due phase would have answered: the person's text delivers it)."""
        if not self.awaiting_answer:
            raise RuntimeError("no question is waiting for an answer")
        self.awaiting_answer = False
        return self._reply("answer", text, source, elapsed, reply)

    def review(
        self, feedback: str | None, source: Source, elapsed: float, reply: Reply | None = None
    ) -> Outcome:
        """The user's verdict on a DONE awaiting review: None accepts (the episode
        ends; a due phase stays undelivered), text is feedback that becomes the active
        instruction (in person mode with a phase due: that phase, in the person's words)."""
        if not self.awaiting_review:
            raise RuntimeError("no DONE is waiting for a review")
        self.awaiting_review = False
        if feedback is None:
            self.phase_due = None
            self.ended = "done"
            return Outcome((), None, False, False, "done")
        return self._reply("feedback", feedback, source, elapsed, reply)

    def send_due(
        self, text: str, source: Source, elapsed: float, reply: Reply | None = None
    ) -> Outcome:
        """Person mode: the person's message for the phase a GUI action made due."""
        if not self.awaiting_phase:
            raise RuntimeError("no phase is waiting for the person's message")
        self.awaiting_phase = False
        return self._reply("interruption", text, source, elapsed, reply)

    def _reply(
        self,
        default_kind: UserKind,
        text: str,
        source: Source,
        elapsed: float,
        reply: Reply | None,
    ) -> Outcome:
        """A user's message in reply to a wait: delivers the due phase, if one is."""
        reply = reply or Reply()
        index, self.phase_due = self.phase_due, None
        if index is not None:
            self._deliver(index)
            kind = self.phases[index].kind or default_kind
        else:
            kind = default_kind
        message = self._user_message(kind, text, source, index, reply)
        ended = self._budget_end(elapsed)
        if ended is not None:
            self.ended = ended
        return Outcome((message,), index, False, False, ended)

    def inject(self, text: str, kind: UserKind, source: Source = "person") -> Message:
        """A message the person sends at any moment; it becomes the active instruction.

        It does not reset the step count of `step_count` triggers: those count from the
        episode start or the previous phase delivery.
        """
        if self.ended is not None:
            raise RuntimeError(f"episode already ended ({self.ended})")
        if kind == "answer" and self.awaiting_answer:
            self.awaiting_answer = False
        if kind == "feedback" and self.awaiting_review:
            self.awaiting_review = False
        # A person's own words: no script offered them.
        reply = Reply("free") if source == "person" else None
        return self._user_message(kind, text, source, reply=reply)

    def check_time(self, elapsed: float) -> EndReason | None:
        """End the episode if the time budget is spent (between turns)."""
        if self.ended is None and elapsed >= self.max_seconds:
            self.ended = "time_budget"
        return self.ended

    def end(self, reason: EndReason) -> None:
        """Force an end (error, abort) unless already ended."""
        if self.ended is None:
            self.ended = reason

    def undelivered_phases(self) -> list[int]:
        return list(range(self.next_phase, len(self.phases)))

    # -- internals ------------------------------------------------------------------

    def _budget_end(self, elapsed: float) -> EndReason | None:
        if self.steps - self.person_steps >= self.max_steps:
            return "step_budget"
        if elapsed >= self.max_seconds:
            return "time_budget"
        return None

    def _maybe_deliver(
        self, event: Event, default_kind: UserKind, out: list[Message]
    ) -> int | None:
        index = self.pending_phase
        if index is None:
            return None
        phase = self.phases[index]
        if not holds(phase.trigger, event, self.actions_since_active):
            return None
        if self.person_phases:
            self.phase_due = index  # the person sends it (or their own words)
            return None
        self._deliver(index)
        out.append(self._user_message(phase.kind or default_kind, phase.message, "phase", index))
        return index

    def _deliver(self, index: int) -> None:
        self.next_phase += 1
        self.delivered.append(index)
        self.actions_since_active = 0

    def _agent_message(self, kind: AgentKind, text: str) -> Message:
        message = Message(
            role="agent",
            kind=kind,
            text=text,
            step=self.steps,
            source="agent",
            number=len(self.conversation),
        )
        self.conversation.append(message)
        return message

    def _user_message(
        self,
        kind: UserKind,
        text: str,
        source: Source,
        phase_index: int | None = None,
        reply: Reply | None = None,
    ) -> Message:
        reply = reply or Reply()
        message = Message(
            role="user",
            kind=kind,
            text=text,
            step=self.steps,
            source=source,
            phase_index=phase_index,
            origin=reply.origin,
            scripted=reply.scripted,
            wait_seconds=reply.wait_seconds,
            number=len(self.conversation),
        )
        self.conversation.append(message)
        return message
