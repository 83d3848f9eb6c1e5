"""The user's part of an episode, after each agent step: a delivered phase's checks, the
answer to an ASK, the review of a DONE, and in person mode the person's message for a
phase that became due (DESIGN.md's person mode). Part of `EpisodeRunner`, kept apart
from its loop; the waits for the person are off the time budget (`PersonWaits`).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

from app.core.actions import Action, Ask, Done
from app.episode.control import EpisodeControl
from app.episode.events import PhaseEvent, WaitingEvent
from app.episode.protocol import Outcome, Protocol, Reply
from app.episode.records import EpisodeRecords
from app.episode.waits import PersonWaits
from app.users.person import PersonReply, PersonUser
from app.users.simulated import User

T = TypeVar("T")


class Aborted(Exception):
    """The person aborted the episode."""


class UserTurns(EpisodeRecords):
    """The runner's methods for the user's turns (a mixin of `EpisodeRunner`)."""

    user: User
    control: EpisodeControl
    waits: PersonWaits

    # Provided by EpisodeRunner.
    def _elapsed(self, started: float, now: float | None = None) -> float:
        raise NotImplementedError

    async def _score_phase(self, episode_id: int, index: int) -> None:
        raise NotImplementedError

    async def _wait_for_user(self, waiting: Awaitable[T]) -> T:
        """Await a simulated user's reply, unless the person aborts first."""
        raise NotImplementedError

    async def _apply_outcome(
        self,
        episode_id: int,
        protocol: Protocol,
        action: Action | None,
        outcome: Outcome,
        started: float,
    ) -> None:
        """What follows a step already recorded with its messages and phase delivery:
        the delivered phase's checks, the user's answer or review, and in person mode
        the person's message for a phase that became due."""
        await self._delivered(episode_id, protocol, outcome)
        person = self.user if isinstance(self.user, PersonUser) else None
        due, draft = outcome.phase_due, protocol.due_message
        replied: Outcome | None = None
        if outcome.needs_answer:
            assert isinstance(action, Ask)
            self._emit(WaitingEvent("answer", action.question, draft, due))
            if person is not None:
                got = await self._wait_for_person(
                    person.reply("answer", question=action.question, draft=draft)
                )
                if protocol.awaiting_answer:  # a person may have answered by injection
                    assert got[0].text is not None
                    replied = protocol.answer(got[0].text, "person", self._elapsed(started), got[1])
            else:
                text, source = await self._wait_for_user(self.user.answer(action.question))
                if protocol.awaiting_answer:
                    replied = protocol.answer(text, source, self._elapsed(started))
        elif outcome.needs_review:
            assert isinstance(action, Done)
            self._emit(WaitingEvent("review", None, draft, due))
            if person is not None:
                got = await self._wait_for_person(person.reply("review", draft=draft))
                if protocol.awaiting_review:
                    replied = protocol.review(got[0].text, "person", self._elapsed(started), got[1])
            else:
                feedback = await self._wait_for_user(self.user.review())
                if protocol.awaiting_review:
                    source = "person" if self.user.mode == "person" else "simulated"
                    replied = protocol.review(feedback, source, self._elapsed(started))
        elif protocol.awaiting_phase and person is not None:
            self._emit(WaitingEvent("phase", None, draft, due))
            got = await self._wait_for_person(person.reply("phase", draft=draft))
            assert got[0].text is not None
            replied = protocol.send_due(got[0].text, "person", self._elapsed(started), got[1])
        if replied is not None:
            await self._record_messages(episode_id, replied.messages, replied.delivered_phase)
            await self._delivered(episode_id, protocol, replied)

    async def _delivered(self, episode_id: int, protocol: Protocol, outcome: Outcome) -> None:
        """A phase delivered (by the script, or in the person's words): its checks."""
        if outcome.delivered_phase is not None:
            self._emit(PhaseEvent(outcome.delivered_phase, protocol.steps))
            self._say(f"phase {outcome.delivered_phase + 1} delivered")
            await self._score_phase(episode_id, outcome.delivered_phase)

    async def _wait_for_person(self, waiting: Awaitable[PersonReply]) -> tuple[PersonReply, Reply]:
        """Await the person's reply, unless they abort first. The wait is off the time
        budget; the reply comes with how it came about, for its record."""
        got = await self.waits.wait(waiting, self.control.until_abort())
        if got is None:
            raise Aborted
        reply, waited = got
        return reply, Reply(reply.origin, reply.scripted, round(waited, 3))
