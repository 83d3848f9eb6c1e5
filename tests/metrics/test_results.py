"""The figures' policy (app.metrics.summary): groups, outcomes, what rates are over,
and how batch retries count."""

from __future__ import annotations

import pytest

from app.core.vocabulary import ERROR_KINDS, EndReason, ErrorKind
from app.metrics.slots import counted_episodes
from app.metrics.summary import cells, outcome, summarize
from app.store import Store
from tests.recorded_episodes import add_episode
from tests.ui.helpers import record_episode


def test_groups_by_app_level_kind_agent_and_user() -> None:
    with Store.memory() as store:
        record_episode(store, task_id="a", score=1.0)
        record_episode(store, task_id="a", passed=False, score=0.5)
        record_episode(store, task_id="a", user_mode="person", passed=False, score=0.0)
        record_episode(store, task_id="b", level="L2", interactive=True, asks=2)
        record_episode(store, task_id="c", app="blender", passed=None, score=None)
        summary = summarize(store)
    assert [(g.app, g.level, g.kind, g.agent, g.user) for g in summary.groups] == [
        ("blender", "L1", "standard", "reference", "simulated"),
        ("gimp", "L1", "standard", "reference", "person"),
        ("gimp", "L1", "standard", "reference", "simulated"),
        ("gimp", "L2", "interactive", "reference", "simulated"),
    ]
    blender, person, gimp_l1, gimp_l2 = summary.groups
    assert (blender.errors, blender.episodes, blender.finished) == (1, 1, 0)
    assert gimp_l1.success_rate == 0.5 and gimp_l1.mean_score == pytest.approx(0.75)
    assert gimp_l1.ask_rate == 0.0 and person.success_rate == 0.0
    assert gimp_l2.asks == 2 and gimp_l2.asked == 1 and gimp_l2.ask_rate == 1.0
    assert gimp_l2.asks_per_episode == 2.0
    # One agent: its row and the overall row have the same figures.
    (agent,) = summary.by_agent
    assert summary.overall is not None
    assert cells(agent)[5:] == cells(summary.overall)[5:]
    assert [t.agent for t in summary.totals] == ["reference", "all"]


def test_an_error_is_counted_apart_and_left_out_of_every_rate() -> None:
    # Once the TUI counted it as a failure with no credit and `report` left it out.
    with Store.memory() as store:
        add_episode(store, score=1.0)
        add_episode(store, passed=False, score=0.5, end_reason="fail")
        add_episode(store, status="error")
        add_episode(store, status="error", end_reason="aborted", error="aborted during episode")
        add_episode(store, app="blender", status="error")
        summary = summarize(store)
    gimp = summary.groups[1]
    assert (gimp.episodes, gimp.passed, gimp.failed, gimp.errors, gimp.aborted) == (4, 1, 1, 1, 1)
    assert gimp.success_rate == 0.5 and gimp.mean_score == 0.75 and gimp.mean_steps == 3.0
    lo, hi = gimp.success_interval or (0.0, 0.0)
    assert 0.0 < lo < 0.5 < hi < 1.0
    # A group with no finished episode has no rate, not 0%.
    blender = summary.groups[0]
    assert blender.errors == 1 and blender.success_rate is None and blender.success_interval is None
    assert cells(blender)[11:] == ["-", "-", "-", "-", "-"]
    assert [e.app for e in summary.unscored] == ["gimp", "gimp", "blender"]


@pytest.mark.parametrize(
    ("end_reason", "passed", "expected"),
    [
        ("done", True, "passed"),
        ("done", False, "failed"),
        ("fail", False, "failed"),
        ("step_budget", False, "failed"),
        ("time_budget", False, "failed"),
    ],
)
def test_every_finished_episode_is_an_attempt(
    end_reason: EndReason, passed: bool, expected: str
) -> None:
    """The agent's FAIL and a spent budget are failures, not errors."""
    with Store.memory() as store:
        episode = add_episode(store, passed=passed, score=float(passed), end_reason=end_reason)
        assert outcome(store.get_episode(episode)) == expected


@pytest.mark.parametrize("kind", ERROR_KINDS)
def test_an_error_is_a_failure_only_when_it_is_the_agents_own(kind: ErrorKind) -> None:
    """The agent could not run, answered with nothing usable or asked for an action
    that cannot be done: its attempt failed. Any other error says nothing of it."""
    with Store.memory() as store:
        end_reason: EndReason = "aborted" if kind == "aborted" else "error"
        episode = add_episode(store, status="error", end_reason=end_reason, error_kind=kind)
        expected = {"agent": "failed", "action": "failed", "aborted": "aborted"}
        assert outcome(store.get_episode(episode)) == expected.get(kind, "error")


def test_an_error_of_unknown_kind_is_an_error() -> None:
    # Recorded before kinds were, in words migration 0005 could not place.
    with Store.memory() as store:
        episode = add_episode(store, status="running")
        store.finish_episode(episode, status="error", end_reason="error", error="boom", steps=1)
        assert store.get_episode(episode).error_kind is None
        assert outcome(store.get_episode(episode)) == "error"


def test_the_agents_own_errors_count_in_every_rate_with_no_credit() -> None:
    with Store.memory() as store:
        add_episode(store, score=1.0, steps=4)
        broke = add_episode(
            store,
            status="error",
            error="Agent error: the model answered with no action",
            error_kind="agent",
            steps=2,
            asks=1,
        )
        add_episode(store, status="error", error_kind="agent_unavailable", steps=1)
        summary = summarize(store)
    (group,) = summary.groups
    assert (group.passed, group.failed, group.errors, group.finished) == (1, 1, 1, 2)
    assert group.success_rate == 0.5 and group.mean_score == 0.5 and group.mean_steps == 3.0
    assert group.ask_rate == 0.5 and group.asks == 1
    # Only what the rates leave out is listed as unscored.
    assert broke not in [e.id for e in summary.unscored] and len(summary.unscored) == 1


def test_running_episodes_are_left_out() -> None:
    with Store.memory() as store:
        record_episode(store, task_id="a")
        running = add_episode(store, task="a", status="running")
        assert outcome(store.get_episode(running)) is None
        summary = summarize(store)
    assert [g.episodes for g in summary.groups] == [1]
    with Store.memory() as empty:
        nothing = summarize(empty)
    assert nothing.groups == [] and nothing.overall is None and nothing.totals == []


def test_a_slot_counts_once_and_its_other_tries_are_retries() -> None:
    suite = {
        "tasks": [{"id": "gimp-a", "path": "x", "sha256": "0" * 64}],
        "agents": ["null"],
        "repeats": 3,
    }
    with Store.memory() as store:
        store.create_batch("b", suite)
        first = add_episode(store, agent="null", status="error", batch="b", slot=("null", 0, 0))
        add_episode(store, agent="null", passed=False, score=0.0, batch="b", slot=("null", 0, 1))
        add_episode(store, agent="null", status="error", batch="b", slot=("null", 1, 0))
        add_episode(store, agent="null", status="error", batch="b", slot=("null", 1, 1))
        add_episode(store, agent="null", status="error", batch="b", slot=("null", 2, 0))
        add_episode(store, agent="null", status="running", batch="b", slot=("null", 2, 1))
        add_episode(store, agent="null")  # outside the batch
        counted = counted_episodes(store)
        assert [e.id for e in counted.retries] == [first, first + 2, first + 4]
        assert len(counted.episodes) == 3
        for batch_id in ("b", None):
            (group,) = summarize(store, batch_id).groups
            outside = 0 if batch_id else 1
            assert (group.passed, group.failed, group.errors, group.retries) == (
                outside,
                1,
                1,
                3,
            )
