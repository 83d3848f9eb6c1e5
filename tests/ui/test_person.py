"""PersonUser: the runner awaits, the UI replies; wrong replies are refused."""

from __future__ import annotations

import asyncio

import pytest

from app.users.person import PersonUser, PhaseDue


async def test_answer_waits_for_the_person() -> None:
    user = PersonUser()
    pending = asyncio.create_task(user.answer("Which size?"))
    await asyncio.sleep(0)
    assert user.waiting == "answer" and user.question == "Which size?"
    with pytest.raises(ValueError, match="waiting for an answer"):
        user.accept()
    user.provide_answer("200 pixels")
    assert await pending == ("200 pixels", "person")
    assert user.waiting is None and user.question is None


async def test_review_accepts_or_gives_feedback() -> None:
    user = PersonUser()
    accepted = asyncio.create_task(user.review())
    await asyncio.sleep(0)
    assert user.waiting == "review"
    with pytest.raises(ValueError, match="cannot give an answer"):
        user.provide_answer("yes")
    user.accept()
    assert await accepted is None

    rejected = asyncio.create_task(user.review())
    await asyncio.sleep(0)
    with pytest.raises(ValueError, match="needs text"):
        user.give_feedback("  ")
    user.give_feedback("Make it bigger.")
    assert await rejected == "Make it bigger."


async def test_replies_without_a_request_are_refused() -> None:
    user = PersonUser()
    assert user.mode == "person" and user.reviews_done
    with pytest.raises(ValueError, match="not waiting"):
        user.provide_answer("hello")
    with pytest.raises(ValueError, match="not waiting"):
        user.accept()


async def test_cancelled_wait_clears_the_request() -> None:
    user = PersonUser()
    pending = asyncio.create_task(user.answer("?"))
    await asyncio.sleep(0)
    pending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await pending
    assert user.waiting is None
    with pytest.raises(ValueError):
        user.provide_answer("late")


async def test_accept_is_refused_while_a_phase_is_due_at_the_done() -> None:
    # A phase whose trigger holds at a DONE is delivered and the episode goes on
    # (DESIGN.md): accepting would end it with the phase never delivered.
    user = PersonUser()
    pending = asyncio.create_task(user.reply("review", draft="Now make it greyscale."))
    await asyncio.sleep(0)
    with pytest.raises(PhaseDue, match="phase is due"):
        user.accept()
    assert user.waiting == "review" and not pending.done()  # still waiting
    user.send("Now make it greyscale.", from_draft=True)
    reply = await pending
    assert (reply.text, reply.origin) == ("Now make it greyscale.", "script")
