"""A person in the loop as the protocol's `User`: answers and reviews come from a UI.

The runner awaits `answer()` / `review()`; the UI (the TUI's chat pane, or any other
front end) sees what is awaited through `waiting` and replies with `provide_answer`,
`accept` or `give_feedback`. Pure asyncio: call everything on the runner's loop.
"""

from __future__ import annotations

import asyncio
from typing import Literal

from app.core.vocabulary import Source, UserMode

Waiting = Literal["answer", "review"]


class PersonUser:
    """The `User` a person plays. One request is outstanding at a time."""

    mode: UserMode = "person"
    reviews_done = True

    def __init__(self) -> None:
        self._reply: asyncio.Future[str | None] | None = None
        self.waiting: Waiting | None = None
        """What the runner waits for now, or None."""
        self.question: str | None = None
        """The agent's question while `waiting == 'answer'`."""

    async def answer(self, question: str) -> tuple[str, Source]:
        text = await self._wait("answer", question)
        assert text is not None
        return text, "person"

    async def review(self) -> str | None:
        return await self._wait("review", None)

    async def _wait(self, what: Waiting, question: str | None) -> str | None:
        if self._reply is not None and not self._reply.done():
            raise RuntimeError(f"the person is already asked for an {self.waiting}")
        reply: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._reply, self.waiting, self.question = reply, what, question
        try:
            return await reply
        finally:
            if self._reply is reply:
                self._reply, self.waiting, self.question = None, None, None

    def _give(self, what: Waiting, value: str | None) -> None:
        if self.waiting != what or self._reply is None or self._reply.done():
            now = f"waiting for an {self.waiting}" if self.waiting else "not waiting for anything"
            raise ValueError(f"cannot give an {what}: the episode is {now}")
        self._reply.set_result(value)

    def provide_answer(self, text: str) -> None:
        """Answer the agent's pending ASK.

        Raises:
            ValueError: empty text, or no ASK is waiting for an answer.
        """
        if not text.strip():
            raise ValueError("an answer needs text")
        self._give("answer", text)

    def accept(self) -> None:
        """Accept the result after the agent's DONE: the episode ends and is scored.

        Raises:
            ValueError: no DONE is waiting for a review.
        """
        self._give("review", None)

    def give_feedback(self, text: str) -> None:
        """Reject the DONE with feedback; it becomes the active instruction.

        Raises:
            ValueError: empty text, or no DONE is waiting for a review.
        """
        if not text.strip():
            raise ValueError("feedback needs text")
        self._give("review", text)
