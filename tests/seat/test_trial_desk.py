"""A trial's page under its condition's policy, without a desktop (the runner and the
episode are stand-ins; the person and the control are the real ones): what the page
offers and what it refuses. The whole trial on a real desktop is test_browser_walk's."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from app.core.conversation import Message
from app.episode.control import EpisodeControl
from app.seat.seat import TrialDesk
from app.seat.view import Refused
from app.studies.model import Policy
from app.studies.session import NO_ASKING_REPLY, TrialStart
from app.users.person import PersonUser
from tests.waiting import eventually


def _desk(
    policy: dict[str, Any], person: PersonUser, conversation: list[Message] | None = None
) -> tuple[TrialDesk, EpisodeControl]:
    task = SimpleNamespace(title="T", instruction="Do it.", phases=[])
    control = EpisodeControl()
    protocol = None if conversation is None else SimpleNamespace(conversation=conversation)
    runner = SimpleNamespace(control=control, protocol=protocol, budget_seconds_used=lambda: 1.0)
    desktop = SimpleNamespace(info=lambda: SimpleNamespace(vnc=None))
    episode = SimpleNamespace(runner=runner, desktop=desktop, person=None)
    trial = TrialStart(task, Policy.model_validate(policy), alone=False)  # type: ignore[arg-type]
    return TrialDesk(trial, episode, person), control  # type: ignore[arg-type]


async def test_an_answer_goes_to_the_waiting_question_with_the_suggestion_offered() -> None:
    person = PersonUser()
    desk, _ = _desk({}, person)
    waiting = asyncio.ensure_future(person.reply("answer", question="Which?", draft="PNG"))
    await eventually(lambda: person.waiting == "answer", "the question")
    live = await desk.live()
    assert (live["waiting"], live["question"], live["suggestion"]) == ("answer", "Which?", "PNG")
    assert live["desktop"] is None  # no desktop yet: nothing to connect to
    with pytest.raises(Refused):
        desk.handle({"do": "accept"})  # nothing to accept: it asked, it did not finish
    desk.handle({"do": "send", "text": "PNG", "from_draft": True})
    reply = await waiting
    assert (reply.text, reply.origin) == ("PNG", "script")


async def test_a_brief_policy_offers_no_suggestion() -> None:
    person = PersonUser()
    desk, _ = _desk({"phases": "brief"}, person)
    waiting = asyncio.ensure_future(person.reply("phase", draft="Now make it blue."))
    await eventually(lambda: person.waiting == "phase", "the due phase")
    assert (await desk.live())["suggestion"] is None
    desk.handle({"do": "send", "text": "Blue, please."})
    assert (await waiting).origin == "free"


async def test_a_message_while_the_agent_works_is_an_interruption_where_allowed() -> None:
    desk, control = _desk({}, PersonUser())
    desk.handle({"do": "send", "text": "Stop: use the other file."})
    assert control.take_injections() == [("Stop: use the other file.", "interruption")]
    quiet, control = _desk({"may_interrupt": False}, PersonUser())
    assert (await quiet.live())["may_send"] is False
    with pytest.raises(Refused):
        quiet.handle({"do": "send", "text": "Stop."})
    assert control.take_injections() == []


async def test_a_done_is_accepted_or_answered_with_feedback() -> None:
    person = PersonUser()
    desk, _ = _desk({}, person)
    reviewing = asyncio.ensure_future(person.reply("review"))
    await eventually(lambda: person.waiting == "review", "the review")
    desk.handle({"do": "accept"})
    assert (await reviewing).text is None
    with pytest.raises(Refused):
        desk.handle({"do": "done"})  # the assistant says when it is done
    with pytest.raises(Refused):
        desk.handle({"do": "send", "text": " "})


async def test_where_the_agent_may_not_ask_its_questions_are_not_shown() -> None:
    conversation = [
        Message("user", "instruction", "Do it.", 0, "task"),
        Message("agent", "question", "Which blue?", 1, "agent"),
        Message("user", "answer", NO_ASKING_REPLY, 1, "task"),
        Message("agent", "done", "", 2, "agent"),
    ]
    quiet, _ = _desk({"agent_may_ask": False}, PersonUser(), conversation)
    shown = [m["kind"] for m in (await quiet.live())["conversation"]]
    assert shown == ["instruction", "done"]
    asking, _ = _desk({}, PersonUser(), conversation)
    assert len((await asking.live())["conversation"]) == 4
