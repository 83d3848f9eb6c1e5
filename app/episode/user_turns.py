"""The user's side of an episode, after each agent step: the answer to an ASK, the
review of a DONE, and in person mode the person's message for a phase that became due
(DESIGN.md's person mode). The waits for the person are off the time budget
(`PersonWaits`); a wait for anyone ends when the person aborts (`Aborted`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from app.core.actions import Action, Ask, Done
from app.episode.control import Aborted, EpisodeControl
from app.episode.events import Reporter, WaitingEvent
from app.episode.protocol import Outcome, Protocol, Reply
from app.episode.waits import PersonWaits
from app.users.person import PersonReply, PersonUser
from app.users.simulated import User


class UserTurns:
    """What `user` says when an agent's step calls for it, told to the protocol.

    `elapsed` (given to `reply`) is the episode's time against its budget now, which
    each reply is checked against; the time spent waiting for a person is kept in
    `waits`, which the runner leaves out of that time.
    """

    def __init__(self, user: User, control: EpisodeControl, report: Reporter) -> None:
        self.user = user
        self.control = control
        self.report = report
        self.waits = PersonWaits()
        """The time spent waiting for the person: off the budget, recorded apart."""

    async def reply(
        self,
        protocol: Protocol,
        action: Action | None,
        outcome: Outcome,
        elapsed: Callable[[], float],
    ) -> Outcome | None:
        """The user's reply to a step already recorded with `outcome`: an answer, a
        review, or in person mode the person's message for a due phase; None when the
        step called for none. The reply is told to `protocol`; what it said (its
        messages, the phase it delivered) is the outcome returned, not yet recorded.

        Raises:
            Aborted: the person aborted while the user was awaited.
        """
        person = self.user if isinstance(self.user, PersonUser) else None
        due, draft = outcome.phase_due, protocol.due_message
        if outcome.needs_answer:
            assert isinstance(action, Ask)
            if person is not None and person.fixed_answer is not None:
                # Not the person's to answer (the study's policy): the task's words.
                return protocol.answer(person.fixed_answer, "task", elapsed())
            self.report.emit(WaitingEvent("answer", action.question, draft, due))
            if person is not None:
                got = await self._wait_for_person(
                    person.reply("answer", question=action.question, draft=draft)
                )
                if protocol.awaiting_answer:  # a person may have answered by injection
                    assert got[0].text is not None
                    return protocol.answer(got[0].text, "person", elapsed(), got[1])
            else:
                text, source = await self.control.unless_aborted(self.user.answer(action.question))
                if protocol.awaiting_answer:
                    return protocol.answer(text, source, elapsed())
        elif outcome.needs_review:
            assert isinstance(action, Done)
            self.report.emit(WaitingEvent("review", None, draft, due))
            if person is not None:
                got = await self._wait_for_person(person.reply("review", draft=draft))
                if protocol.awaiting_review:
                    return protocol.review(got[0].text, "person", elapsed(), got[1])
            else:
                feedback = await self.control.unless_aborted(self.user.review())
                if protocol.awaiting_review:
                    source = "person" if self.user.mode == "person" else "simulated"
                    return protocol.review(feedback, source, elapsed())
        elif protocol.awaiting_phase and person is not None:
            self.report.emit(WaitingEvent("phase", None, draft, due))
            got = await self._wait_for_person(person.reply("phase", draft=draft))
            assert got[0].text is not None
            return protocol.send_due(got[0].text, "person", elapsed(), got[1])
        return None

    async def _wait_for_person(self, waiting: Awaitable[PersonReply]) -> tuple[PersonReply, Reply]:
        """Await the person's reply, unless they abort first. The wait is off the time
        budget; the reply comes with how it came about, for its record."""
        got = await self.waits.wait(waiting, self.control.until_abort())
        if got is None:
            raise Aborted
        reply, waited = got
        return reply, Reply(reply.origin, reply.scripted, round(waited, 3))
