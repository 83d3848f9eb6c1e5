"""The user side of the protocol: who answers ASKs no phase answers.

Phase delivery is decided by the protocol engine from the task's triggers, never
by the user object. A simulated user answers a free question with a fixed
"no further information" reply; a person (in the TUI) types the answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from app.core.conversation import Message
from app.core.vocabulary import Source, UserMode

NO_FURTHER_INFORMATION = "No further information is available. Please continue with what you know."


class User(Protocol):
    mode: UserMode
    """Recorded with the episode."""

    reviews_done: bool
    """Whether a DONE no phase answers waits for this user's review (a person does;
    the simulated user accepts every DONE)."""

    async def answer(self, question: str) -> tuple[str, Source]:
        """The answer to an ASK that no phase answered, and who gave it."""
        ...

    async def review(self) -> str | None:
        """After a DONE: None accepts the result, text is feedback that continues the
        episode. Only called when `reviews_done` is true."""
        ...


@runtime_checkable
class ReadsConversation(Protocol):
    """A user whose answers depend on the episode so far (the LLM user): it is handed
    where to read the conversation when the episode is wired up
    (`app.episode.launch`), since the user is built before the runner that holds it."""

    def bind_conversation(self, conversation: Callable[[], Sequence[Message]]) -> None:
        """Where to read the episode's conversation when a question comes."""
        ...


class SimulatedUser:
    mode: UserMode = "simulated"
    reviews_done = False

    async def answer(self, question: str) -> tuple[str, Source]:
        return NO_FURTHER_INFORMATION, "simulated"

    async def review(self) -> str | None:
        return None
