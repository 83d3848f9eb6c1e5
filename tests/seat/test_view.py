"""The page's rules without a browser: a questionnaire takes only answers its items
accept (each refused one named, with why), an action on a page that has gone does
nothing, and consent is a yes or a no."""

from __future__ import annotations

import asyncio

import pytest

from app.seat.seat import BrowserSeat, render_markdown
from app.seat.view import PageKind, Refused, instrument_view, read_answers
from app.studies.instruments import NASA_TLX, SUS, Instrument, Item
from app.studies.model import CustomQuestionnaire
from tests.waiting import eventually

CUSTOM = CustomQuestionnaire.model_validate(
    {
        "id": "after",
        "items": [
            {"id": "ease", "kind": "likert", "prompt": "Easy?", "points": 5,
             "anchors": ["no", "yes"]},
            {"id": "tool", "kind": "choice", "prompt": "Which?", "options": ["a", "b"]},
            {"id": "used", "kind": "multiple", "prompt": "Used?", "options": ["x", "y", "z"]},
            {"id": "years", "kind": "number", "prompt": "Years?", "min": 0, "max": 60},
            {"id": "note", "kind": "text", "prompt": "Anything else?", "required": False},
        ],
    }
).instrument()  # fmt: skip


async def _shown(seat: BrowserSeat, kind: PageKind) -> None:
    await eventually(lambda: seat.view.page.kind == kind, f"the {kind} page")


def test_a_whole_answer_is_taken_as_the_items_values() -> None:
    posted = {"ease": 4, "tool": "b", "used": ["x", "z"], "years": "2.5", "note": "  fine "}
    answers, problems = read_answers(CUSTOM, posted)
    assert problems == {}
    assert answers == {"ease": 4, "tool": "b", "used": ["x", "z"], "years": 2.5, "note": "fine"}


def test_each_refused_answer_is_named_with_why() -> None:
    posted = {
        "ease": 6,  # off the scale
        "tool": "c",  # no such option
        "used": ["x", "x"],  # twice
        "years": "many",  # not a number
        "note": "",  # optional: no answer is an answer
        "extra": 1,  # not an item
    }
    answers, problems = read_answers(CUSTOM, posted)
    assert set(problems) == {"ease", "tool", "used", "years", "extra"}
    assert "outside" in problems["ease"] and "one of" in problems["tool"]
    assert "twice" in problems["used"] and "number" in problems["years"]
    assert "note" not in problems and answers["note"] is None


def test_a_required_item_left_empty_is_refused() -> None:
    _, problems = read_answers(CUSTOM, {"ease": 3, "tool": "a", "used": [], "note": "x"})
    assert problems == {"used": "an answer is required", "years": "an answer is required"}


def test_a_scale_takes_only_its_points_and_booleans_are_no_numbers() -> None:
    tlx = {item.id: 50 for item in NASA_TLX.items}
    assert read_answers(NASA_TLX, tlx)[1] == {}
    _, problems = read_answers(NASA_TLX, {**tlx, "mental": 52, "effort": True})
    assert "points" in problems["mental"] and problems["effort"] == "expected a number"


def test_the_page_shows_every_item_as_it_is_answered() -> None:
    view = instrument_view(NASA_TLX)
    mental = view["items"][0]
    assert mental["points"][:3] == [0, 5, 10] and len(mental["points"]) == 21
    assert mental["anchors"] == ["Very low", "Very high"]
    years = instrument_view(CUSTOM)["items"][3]
    assert (years["min"], years["max"]) == (0, 60)
    unbounded = instrument_view(
        Instrument("n", "n", (Item("n", "number", "N?", float("-inf"), float("inf")),))
    )
    assert (unbounded["items"][0]["min"], unbounded["items"][0]["max"]) == (None, None)


async def test_a_questionnaire_waits_for_valid_answers_and_an_old_page_does_nothing() -> None:
    seat = BrowserSeat()
    answering = asyncio.ensure_future(seat.answer(SUS, "post_condition", "condition:a"))
    await _shown(seat, "questionnaire")
    state = await seat.view.state()
    assert state["page"] == "questionnaire" and len(state["items"]) == 10
    number = state["number"]
    with pytest.raises(Refused) as refused:
        seat.view.act(number, {"do": "answers", "answers": {"q1": 3}})
    assert set(refused.value.problems) == {f"q{n}" for n in range(2, 11)}
    assert not answering.done()
    with pytest.raises(Refused, match="changed"):
        seat.view.act(number - 1, {"do": "answers", "answers": {}})
    all_items = {f"q{n}": 5 for n in range(1, 11)}
    seat.view.act(number, {"do": "answers", "answers": all_items})
    assert await answering == all_items
    assert (await seat.view.state())["page"] == "waiting"
    with pytest.raises(Refused):  # the same click again: that page is gone
        seat.view.act(number, {"do": "answers", "answers": all_items})


@pytest.mark.parametrize("agree", [True, False])
async def test_consent_is_a_yes_or_a_no(agree: bool) -> None:
    seat = BrowserSeat()
    consenting = asyncio.ensure_future(seat.consent("# Consent\n\n<script>x</script> ok"))
    await _shown(seat, "consent")
    state = await seat.view.state()
    assert state["page"] == "consent" and "<h1>Consent</h1>" in state["html"]
    assert "<script>" not in state["html"]  # the study's raw HTML is shown as text
    with pytest.raises(Refused):
        seat.view.act(state["number"], {"do": "consent", "agree": "yes"})
    seat.view.act(state["number"], {"do": "consent", "agree": agree})
    assert await consenting is agree
    assert (await seat.view.state())["page"] == ("waiting" if agree else "end")


def test_markdown_keeps_html_out() -> None:
    assert render_markdown("<b>bold</b>") == "<p>&lt;b&gt;bold&lt;/b&gt;</p>\n"


async def test_a_break_ends_by_itself_or_when_the_participant_goes_on() -> None:
    seat = BrowserSeat()
    await seat.rest(0.05)  # nobody pressed Continue: the break is over
    assert seat.view.page.kind == "waiting"
    resting = asyncio.ensure_future(seat.rest(60))
    await _shown(seat, "break")
    state = await seat.view.state()
    assert state["page"] == "break"
    seat.view.act(state["number"], {"do": "continue"})
    await asyncio.wait_for(resting, 5)
