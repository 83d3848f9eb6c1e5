"""Collaboration measures of a trial, from an episode recorded in a real store,
against figures worked out by hand (the arithmetic beside each)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from app.store import Store
from app.studies.measures import MEASURES, TrialMeasures, entropy, trial_measures
from tests.store.helpers import new_episode, step

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def _record_collaboration(store: Store) -> int:
    """An episode of 100 s: the agent asks twice (answered once, after 8 s), the
    person interrupts once, gives feedback once, and takes over twice (3 steps)."""
    episode = new_episode(store, user_mode="person", started_at=_at(0))
    say = store.record_message
    say(
        episode,
        role="user",
        kind="instruction",
        text="go",
        step=0,
        source="task",
        created_at=_at(0),
    )
    step(store, episode, 0, started_at=_at(1))
    say(
        episode,
        role="agent",
        kind="question",
        text="Which size?",
        step=1,
        source="agent",
        created_at=_at(10),
    )
    say(
        episode,
        role="user",
        kind="answer",
        text="64",
        step=1,
        source="person",
        created_at=_at(18),
        wait_seconds=8.0,
    )
    step(store, episode, 1, started_at=_at(20))
    # A take-over of two steps (person), then the agent again.
    step(store, episode, 2, started_at=_at(30), actor="person", agent_seconds=2.0, act_seconds=0.5)
    step(store, episode, 3, started_at=_at(33), actor="person", agent_seconds=1.0, act_seconds=0.5)
    step(store, episode, 4, started_at=_at(40))
    say(
        episode,
        role="user",
        kind="interruption",
        text="wait, PNG",
        step=5,
        source="person",
        created_at=_at(45),
        wait_seconds=4.0,
    )
    say(
        episode,
        role="agent",
        kind="question",
        text="Keep alpha?",
        step=5,
        source="agent",
        created_at=_at(50),
    )
    # Not an answer: the person gives feedback instead (the question is left open).
    say(
        episode, role="agent", kind="done", text="Done.", step=5, source="agent", created_at=_at(60)
    )
    say(
        episode,
        role="user",
        kind="feedback",
        text="bigger",
        step=5,
        source="person",
        created_at=_at(70),
        wait_seconds=6.0,
    )
    step(store, episode, 5, started_at=_at(80), actor="person", agent_seconds=3.0, act_seconds=1.0)
    step(store, episode, 6, started_at=_at(85))
    store.record_score(episode, passed=True, score=1.0, checks=[])
    store.finish_episode(episode, status="finished", end_reason="done", steps=7, ended_at=_at(100))
    return episode


def test_measures_of_a_recorded_trial_match_the_hand_worked_figures(tmp_path: Path) -> None:
    with Store(tmp_path / "db.sqlite") as store:
        episode = _record_collaboration(store)
        got = trial_measures(
            store.get_episode(episode), store.steps(episode), store.messages(episode)
        )
    assert got.passed == 1 and got.score == 1.0
    assert got.time_on_task_s == 100.0
    # composing 8 + 4 + 6 = 18; taking over (2 + 0.5) + (1 + 0.5) + (3 + 1) = 8
    assert got.participant_active_s == pytest.approx(26.0)
    assert got.participant_waiting_s == pytest.approx(74.0)
    assert (got.asks, got.asks_answered, got.answer_time_s) == (2, 1, 8.0)
    assert (got.interruptions, got.feedback_rounds, got.take_overs) == (1, 1, 2)
    assert got.participant_step_share == pytest.approx(3 / 7)
    # initiatives: agent 2 questions; participant 1 interruption + 1 feedback + 2 take-overs
    assert got.participant_initiative_share == pytest.approx(4 / 6)
    h = -(4 / 6) * math.log2(4 / 6) - (2 / 6) * math.log2(2 / 6)  # 0.918 bits
    assert got.initiative_entropy == pytest.approx(h)
    assert (got.confirmations_answered, got.participant_halts) == (1, 3)


def test_a_participant_who_is_the_agent_is_active_in_every_step(tmp_path: Path) -> None:
    with Store(tmp_path / "db.sqlite") as store:
        episode = new_episode(store, started_at=_at(0))
        for idx in range(4):  # 0.5 s deciding and 0.01 s acting each (the helper's)
            step(store, episode, idx, started_at=_at(idx))
        store.finish_episode(
            episode, status="finished", end_reason="done", steps=4, ended_at=_at(10)
        )
        got = trial_measures(
            store.get_episode(episode), store.steps(episode), store.messages(episode), role="agent"
        )
    assert got.participant_active_s == pytest.approx(4 * 0.51)
    assert got.participant_step_share == 1.0 and got.take_overs == 0
    assert got.participant_initiative_share is None and got.initiative_entropy is None
    assert got.passed is None


def test_entropy_and_the_codebook() -> None:
    assert entropy([0.5, 0.5]) == 1.0 and entropy([1.0, 0.0]) == 0.0
    assert set(MEASURES) == set(TrialMeasures.__dataclass_fields__)


def test_every_measure_is_in_the_docs() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "studies.md").read_text()
    for name in MEASURES:
        assert f"| `{name}` |" in page, name
