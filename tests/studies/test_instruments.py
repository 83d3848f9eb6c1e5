"""The questionnaires' scoring, against scores computed by hand from the published
rules (the arithmetic is written out beside each figure)."""

from __future__ import annotations

import pytest

from app.studies.instruments import (
    BUILTINS,
    NASA_TLX,
    SUS,
    TRUST,
    Instrument,
    Item,
    answer_problems,
    score_instrument,
)


def test_raw_tlx_is_the_mean_of_its_six_subscales() -> None:
    answers = {
        "mental": 70,
        "physical": 10,
        "temporal": 55,
        "performance": 25,
        "effort": 60,
        "frustration": 40,
    }
    scores = score_instrument(NASA_TLX, answers)
    # (70 + 10 + 55 + 25 + 60 + 40) / 6 = 260 / 6
    assert scores["score"] == pytest.approx(43.3333, abs=1e-4)
    assert scores["performance"] == 25 and scores["mental"] == 70


def test_sus_counts_odd_items_up_and_even_items_down() -> None:
    answers = {f"q{n}": v for n, v in enumerate([4, 2, 5, 1, 4, 2, 5, 1, 4, 3], 1)}
    # odd: (4-1)+(5-1)+(4-1)+(5-1)+(4-1) = 17; even: (5-2)+(5-1)+(5-2)+(5-1)+(5-3) = 16
    # (17 + 16) * 2.5 = 82.5
    assert score_instrument(SUS, answers) == {"score": 82.5}
    worst = {f"q{n}": 1 if n % 2 else 5 for n in range(1, 11)}
    assert score_instrument(SUS, worst) == {"score": 0.0}


def test_trust_reverses_the_five_distrust_items() -> None:
    values = [2, 1, 3, 2, 1, 6, 5, 6, 7, 6, 6, 4]
    answers = {f"q{n}": v for n, v in enumerate(values, 1)}
    scores = score_instrument(TRUST, answers)
    # reversed distrust: 6, 7, 5, 6, 7 = 31; trust items: 6+5+6+7+6+6+4 = 40; 71 / 12
    assert scores["score"] == pytest.approx(71 / 12)
    assert scores["distrust"] == pytest.approx(9 / 5)  # 2+1+3+2+1 as given
    assert scores["trust"] == pytest.approx(40 / 7)


def test_a_builtin_instrument_half_answered_has_no_score() -> None:
    assert score_instrument(SUS, {"q1": 3}) == {}
    problems = answer_problems(SUS, {"q1": 3, "q2": 9, "q11": 1})
    assert "q2: 9 is outside 1–5" in problems
    assert "q3: an answer is required" in problems
    assert "q11: not an item of sus" in problems


def test_answers_are_checked_against_their_item() -> None:
    tlx = NASA_TLX.item("mental")
    assert tlx is not None
    assert tlx.problem(52) == "52 is not one of the scale's points (every 5)"
    assert tlx.problem(True) == "expected a number from 0 to 100"
    assert tlx.problem(55) is None
    choice = Item("tool", "choice", "Which?", options=("gimp", "krita"))
    assert choice.problem("paint") == "expected one of: gimp, krita"
    several = Item("tools", "multiple", "Which?", options=("gimp", "krita"))
    assert several.problem(["gimp", "gimp"]) == "an option is chosen twice"
    assert several.problem(["krita"]) is None
    assert Item("note", "text", "Anything?", required=False).problem(None) is None


def test_custom_items_score_themselves() -> None:
    own = Instrument(
        "own",
        "Own",
        (
            Item("liked", "likert", "I liked it", 1, 7),
            Item("hated", "likert", "I hated it", 1, 7, reverse=True),
            Item("years", "number", "Years?", 0, 60),
            Item("tool", "choice", "Which?", options=("a", "b")),
        ),
    )
    scores = score_instrument(own, {"liked": 6, "hated": 2, "years": 3.5, "tool": "a"})
    assert scores == {"liked": 6.0, "hated": 6.0, "years": 3.5}  # 7 + 1 - 2 = 6


def test_the_builtins_have_the_published_item_counts() -> None:
    assert {name: len(i.items) for name, i in BUILTINS.items()} == {
        "nasa_tlx": 6,
        "sus": 10,
        "trust": 12,
    }
