"""A person in the loop as the protocol's `User`: answers, reviews and, in person mode,
the phases' messages come from a UI.

The runner awaits `reply()` (or the `User` protocol's `answer()` / `review()`); the UI
(the TUI's chat pane, or any other front end) sees what is awaited through `waiting`,
with the due phase's scripted message as `draft`, and replies with `send`, `accept`,
`provide_answer` or `give_feedback`. What the person sent is classified against the
draft (`origin`): the script's text as offered, edited, or their own. Pure asyncio:
call everything on the runner's loop.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Literal

from app.core.vocabulary import MessageOrigin, Source, UserMode

Waiting = Literal["answer", "review", "phase"]
"""What the runner waits for: an answer to an ASK, a review of a DONE, or (person
mode) the message of a phase a GUI action made due."""


def origin_of(text: str, draft: str | None, from_draft: bool) -> MessageOrigin:
    """How `text` relates to the script's `draft`: sent as offered ('script'), changed
    from it ('edited': the person started from the draft, `from_draft`), or their own
    ('free': no draft, or the person cleared it and wrote anew)."""
    if draft is None:
        return "free"
    if text.strip() == draft.strip():
        return "script"
    return "edited" if from_draft else "free"


class PhaseDue(ValueError):
    """An accept refused: a scripted phase is due at the DONE and must be sent first."""


@dataclass(frozen=True)
class PersonReply:
    """What the person sent: text (None accepts a DONE) and how it came about."""

    text: str | None
    origin: MessageOrigin | None
    """None for an accept, which carries no words."""
    scripted: str | None
    """The draft the person was offered (the due phase's scripted message), if any."""


class PersonUser:
    """The `User` a person plays. One request is outstanding at a time."""

    mode: UserMode = "person"
    reviews_done = True

    def __init__(self) -> None:
        self._reply: asyncio.Future[PersonReply] | None = None
        self.waiting: Waiting | None = None
        """What the runner waits for now, or None."""
        self.question: str | None = None
        """The agent's question while `waiting == 'answer'`."""
        self.draft: str | None = None
        """The due phase's scripted message offered to the person, or None."""
        self.fixed_answer: str | None = None
        """An answer the person is not asked for: every ASK gets it, as the task's
        words (a study whose agent may not ask); None: the person answers."""

    async def answer(self, question: str) -> tuple[str, Source]:
        reply = await self.reply("answer", question=question)
        assert reply.text is not None
        return reply.text, "person"

    async def review(self) -> str | None:
        return (await self.reply("review")).text

    async def reply(
        self, what: Waiting, *, question: str | None = None, draft: str | None = None
    ) -> PersonReply:
        """Wait for the person's reply to `what`, offering `draft` to start from."""
        if self._reply is not None and not self._reply.done():
            raise RuntimeError(f"the person is already asked for an {self.waiting}")
        reply: asyncio.Future[PersonReply] = asyncio.get_running_loop().create_future()
        self._reply, self.waiting, self.question, self.draft = reply, what, question, draft
        try:
            return await reply
        finally:
            if self._reply is reply:
                self._reply, self.waiting, self.question, self.draft = None, None, None, None

    def _give(self, what: tuple[Waiting, ...], value: PersonReply) -> None:
        if self.waiting not in what or self._reply is None or self._reply.done():
            now = f"waiting for an {self.waiting}" if self.waiting else "not waiting for anything"
            raise ValueError(f"cannot give an {what[0]}: the episode is {now}")
        self._reply.set_result(value)

    def send(self, text: str, *, from_draft: bool = False) -> PersonReply:
        """The person's text for whatever is awaited (an answer, feedback, a due
        phase's message); `from_draft`: they started from the offered draft.

        Raises:
            ValueError: empty text, or nothing is awaited.
        """
        if not text.strip():
            raise ValueError("a message needs text")
        reply = PersonReply(text, origin_of(text, self.draft, from_draft), self.draft)
        self._give(("answer", "review", "phase"), reply)
        return reply

    def provide_answer(self, text: str, *, from_draft: bool = False) -> None:
        """Answer the agent's pending ASK.

        Raises:
            ValueError: empty text, or no ASK is waiting for an answer.
        """
        if not text.strip():
            raise ValueError("an answer needs text")
        self._give(
            ("answer",), PersonReply(text, origin_of(text, self.draft, from_draft), self.draft)
        )

    def accept(self) -> None:
        """Accept the result after the agent's DONE: the episode ends and is scored.

        Refused while a scripted phase is due at this DONE (`draft`): the protocol
        delivers a phase whose trigger holds at a DONE, and the episode goes on with it
        (DESIGN.md); accepting would end it with that phase never delivered.

        Raises:
            ValueError: no DONE is waiting for a review, or a phase is due (`PhaseDue`).
        """
        if self.waiting == "review" and self.draft is not None:
            raise PhaseDue(
                "a scripted phase is due: send its message (as offered, edited, or in "
                "your own words) and the episode goes on with it; it is not accepted"
            )
        self._give(("review",), PersonReply(None, None, self.draft))

    def give_feedback(self, text: str, *, from_draft: bool = False) -> None:
        """Reject the DONE with feedback; it becomes the active instruction.

        Raises:
            ValueError: empty text, or no DONE is waiting for a review.
        """
        if not text.strip():
            raise ValueError("feedback needs text")
        self._give(
            ("review",), PersonReply(text, origin_of(text, self.draft, from_draft), self.draft)
        )
