"""The user's turns, with no desktop: the protocol's outcome of a step, the user's
reply to it (a simulated user's answer, a person's message for a due phase), the
wait for a person kept apart from the budget, and an abort that ends that wait."""

from __future__ import annotations

import asyncio

import pytest

from app.core.actions import Ask, Click
from app.core.triggers import StepCount
from app.episode.control import Aborted, EpisodeControl
from app.episode.events import Reporter, RunnerEvent, WaitingEvent
from app.episode.protocol import PhaseSpec, Protocol
from app.episode.user_turns import UserTurns
from app.users.person import PersonUser
from app.users.simulated import NO_FURTHER_INFORMATION, SimulatedUser

PHASE = PhaseSpec("Make it blue.", StepCount(1))


async def waiting_for(person: PersonUser) -> None:
    while person.waiting is None:
        await asyncio.sleep(0.01)


async def test_a_simulated_user_answers_an_ask_no_phase_answered() -> None:
    events: list[RunnerEvent] = []
    turns = UserTurns(SimulatedUser(), EpisodeControl(), Reporter(on_event=events.append))
    protocol = Protocol("export it", [], max_steps=10, max_seconds=100)
    ask = Ask("Which size?")
    replied = await turns.reply(protocol, ask, protocol.on_agent(ask, 1.0), elapsed=lambda: 2.0)
    assert replied is not None
    (answer,) = replied.messages
    assert (answer.kind, answer.text, answer.source) == (
        "answer",
        NO_FURTHER_INFORMATION,
        "simulated",
    )
    assert protocol.active_message is answer and not protocol.awaiting_answer
    assert events == [WaitingEvent("answer", "Which size?")]
    # A GUI action calls for no reply.
    click = Click(1, 1)
    assert await turns.reply(protocol, click, protocol.on_agent(click, 3.0), lambda: 3.0) is None


async def test_a_persons_words_deliver_the_due_phase_and_their_wait_is_kept_apart() -> None:
    person = PersonUser()
    events: list[RunnerEvent] = []
    turns = UserTurns(person, EpisodeControl(), Reporter(on_event=events.append))
    protocol = Protocol("paint it", [PHASE], max_steps=10, max_seconds=100, person_phases=True)
    click = Click(1, 1)
    outcome = protocol.on_agent(click, 1.0)
    assert outcome.phase_due == 0 and outcome.delivered_phase is None
    replying = asyncio.create_task(turns.reply(protocol, click, outcome, lambda: 2.0))
    await waiting_for(person)
    assert person.draft == "Make it blue."
    await asyncio.sleep(0.05)
    person.send("Make it dark blue.", from_draft=True)
    replied = await replying
    assert replied is not None and replied.delivered_phase == 0
    (message,) = replied.messages
    assert (message.text, message.origin, message.scripted) == (
        "Make it dark blue.",
        "edited",
        "Make it blue.",
    )
    assert message.wait_seconds is not None and message.wait_seconds >= 0.05
    assert turns.waits.total >= 0.05 and not turns.waits.waiting
    assert events == [WaitingEvent("phase", None, "Make it blue.", 0)]


async def test_an_abort_ends_the_wait_for_the_person() -> None:
    person = PersonUser()
    control = EpisodeControl()
    turns = UserTurns(person, control, Reporter())
    protocol = Protocol("export it", [], max_steps=10, max_seconds=100)
    ask = Ask("Which size?")
    replying = asyncio.create_task(turns.reply(protocol, ask, protocol.on_agent(ask, 0), lambda: 0))
    await waiting_for(person)
    control.abort()
    with pytest.raises(Aborted):
        await replying
    assert person.waiting is None  # the request to the person was withdrawn
