"""The user side of the protocol: who answers ASKs no phase answers.

Phase delivery is decided by the protocol engine from the task's triggers, never
by the user object. A simulated user answers a free question with a fixed
"no further information" reply; a person (in the TUI) types the answer.
"""

from __future__ import annotations

from typing import Literal, Protocol

from app.protocol import Source

NO_FURTHER_INFORMATION = "No further information is available. Please continue with what you know."


class User(Protocol):
    mode: Literal["simulated", "person"]
    """Recorded with the episode."""

    async def answer(self, question: str) -> tuple[str, Source]:
        """The answer to an ASK that no phase answered, and who gave it."""
        ...


class SimulatedUser:
    mode: Literal["simulated", "person"] = "simulated"

    async def answer(self, question: str) -> tuple[str, Source]:
        return NO_FURTHER_INFORMATION, "simulated"
