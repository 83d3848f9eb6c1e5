"""Results aggregation: groups, rates and what counts as a failure."""

from __future__ import annotations

import pytest

from app.metrics.summary import aggregate, ask_counts, results, total
from app.store import Store
from tests.ui.helpers import record_episode


def test_groups_by_app_level_and_kind() -> None:
    with Store.memory() as store:
        record_episode(store, task_id="a", score=1.0)
        record_episode(store, task_id="a", passed=False, score=0.5)
        record_episode(store, task_id="b", level="L2", interactive=True, asks=2)
        record_episode(store, task_id="c", app="blender", passed=None, score=None)
        rows = results(store)
    assert [(r.app, r.level, r.mode) for r in rows] == [
        ("blender", "L1", "standard"),
        ("gimp", "L1", "standard"),
        ("gimp", "L2", "interactive"),
    ]
    blender, gimp_l1, gimp_l2 = rows
    assert blender.episodes == 1 and blender.passed == 0 and blender.mean_score == 0.0
    assert gimp_l1.success_rate == 0.5 and gimp_l1.mean_score == pytest.approx(0.75)
    assert gimp_l1.ask_rate == 0.0
    assert gimp_l2.asks == 2 and gimp_l2.asked == 1 and gimp_l2.ask_rate == 1.0
    everything = total(rows)
    assert everything is not None and everything.episodes == 4 and everything.passed == 2
    assert everything.mean_score == pytest.approx((0 + 1.0 + 0.5 + 1.0) / 4)


def test_running_episodes_are_left_out() -> None:
    with Store.memory() as store:
        record_episode(store, task_id="a")
        store.start_episode(
            task_id="a",
            task_path="a.yaml",
            task_sha256="0",
            app="gimp",
            level="L1",
            interactive=False,
            agent="x",
            user_mode="simulated",
            backend="local",
        )
        episodes = store.list_episodes(limit=None)
        assert len(episodes) == 2
        rows = aggregate(episodes, ask_counts(store, episodes))
    assert [r.episodes for r in rows] == [1]
    assert total([]) is None
