"""Writing episodes to the store: a whole episode round-tripped through a reopen, scores,
refused contradictions, listing, and one transaction per step."""

from __future__ import annotations

import json
import os
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from app.core.actions import Click, Done, action_to_dict, describe_action
from app.core.conversation import Message
from app.core.errors import StoreError
from app.core.triggers import AgentAsk, AgentDone, AnyOf
from app.store import Store
from tests.check_outcomes import outcome
from tests.store.helpers import new_episode, phase, png_of, step

# -- a whole episode -----------------------------------------------------------


def test_full_episode_round_trips_through_a_reopen(tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    t0 = datetime(2025, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)
    with Store(db) as store:
        episode = new_episode(store, batch_id="b1", started_at=t0)
        store.init_phases(
            episode,
            [
                phase("Make it 400 wide.", {"step_count": 1}),
                phase("Also a JPEG.", "agent_done", "feedback"),
                phase("Never reached.", {"any": ["agent_done", "agent_ask"]}),
            ],
        )
        first = store.record_message(
            episode, role="user", kind="instruction", text="Flip it.", step=0, source="task"
        )
        frame0 = store.save_frame(episode, 0, png_of(10))
        click = Click(100, 200, "right", 2)
        step(
            store,
            episode,
            0,
            action=action_to_dict(click),
            kind="click",
            description=describe_action(click),
            started_at=t0.timestamp() + 1.5,
            frame=frame0,
            phase_index=0,
            active_message_id=first,
        )
        store.mark_phase_delivered(episode, 0, step=1)
        second = store.record_message(
            episode,
            role="user",
            kind="interruption",
            text="Make it 400 wide.",
            step=1,
            phase_index=0,
            source="phase",
        )
        step(
            store,
            episode,
            1,
            action={"kind": "teleport"},
            kind="invalid",
            description="rejected",
            frame=store.save_frame(episode, 1, png_of(20)),
            phase_index=1,
            active_message_id=second,
            error="unknown action kind 'teleport'",
        )
        step(
            store,
            episode,
            2,
            action=action_to_dict(Done()),
            kind="done",
            description="DONE",
            phase_index=1,
            active_message_id=second,
        )
        store.record_message(episode, role="agent", kind="done", text="", step=2, source="agent")
        store.mark_phase_delivered(episode, 1, step=2)
        store.record_message(
            episode,
            role="user",
            kind="feedback",
            text="Also a JPEG.",
            step=2,
            phase_index=1,
            source="phase",
        )
        final = store.save_frame(episode, "final", png_of(30))
        store.finish_episode(
            episode, status="finished", end_reason="done", steps=3, final_frame=final
        )
        checks = [
            outcome(
                "all[0]",
                "image_size",
                params={"path": "~/Desktop/a.png", "width": 400},
                weight=2,
                passed=True,
                score=1.0,
                evidence="400x300",
            ),
            outcome("all[1]", passed=False, score=0.0),
        ]
        store.record_score(episode, passed=False, score=2 / 3, checks=checks)

    with Store(db) as store:
        ep = store.get_episode(episode)
        assert (ep.status, ep.end_reason, ep.error, ep.passed, ep.steps) == (
            "finished",
            "done",
            None,
            False,
            3,
        )
        assert ep.score == pytest.approx(2 / 3)
        assert ep.started_at == t0
        assert ep.ended_at is not None and ep.ended_at >= t0
        assert (ep.pid, ep.batch_id, ep.final_frame) == (os.getpid(), "b1", final)
        assert ep.config == {"budget": {"steps": 50}}
        assert (ep.interactive, ep.user_mode, ep.agent) == (True, "simulated", "reference")

        steps = store.steps(episode)
        assert [s.idx for s in steps] == [0, 1, 2]
        assert steps[0].action == {
            "kind": "click",
            "x": 100,
            "y": 200,
            "button": "right",
            "count": 2,
        }
        assert steps[0].description == "click(100, 200, right, x2)"
        assert steps[0].started_at == t0 + timedelta(seconds=1.5)
        assert steps[0].frame == frame0
        assert store.frame_path(frame0).read_bytes() == png_of(10)
        assert (steps[0].agent_seconds, steps[0].act_seconds, steps[0].settle_seconds) == (
            0.5,
            0.01,
            0.2,
        )
        assert steps[1].error == "unknown action kind 'teleport'"
        assert [s.active_message_id for s in steps] == [first, second, second]
        assert [s.phase_index for s in steps] == [0, 1, 1]
        assert steps[2].frame is None

        messages = store.messages(episode)
        assert [(m.role, m.kind, m.source, m.step) for m in messages] == [
            ("user", "instruction", "task", 0),
            ("user", "interruption", "phase", 1),
            ("agent", "done", "agent", 2),
            ("user", "feedback", "phase", 2),
        ]
        assert messages[1].phase_index == 0 and messages[0].phase_index is None

        phases = store.phases(episode)
        assert [(p.status, p.delivered_step, p.kind) for p in phases] == [
            ("delivered", 1, None),
            ("delivered", 2, "feedback"),
            ("never_delivered", None, None),
        ]
        assert phases[2].trigger == AnyOf((AgentDone(), AgentAsk()))
        assert phases[1].trigger == AgentDone()
        # The column holds the task file's form of each trigger.
        conn = sqlite3.connect(db)
        stored = conn.execute(
            "SELECT trigger FROM phases WHERE episode_id = ? ORDER BY idx", (episode,)
        ).fetchall()
        conn.close()
        assert [json.loads(t) for (t,) in stored] == [
            {"step_count": 1},
            "agent_done",
            {"any": ["agent_done", "agent_ask"]},
        ]

        got = store.checks(episode)
        assert [(c.path, c.name, c.passed, c.weight, c.required) for c in got] == [
            ("all[0]", "image_size", True, 2.0, True),
            ("all[1]", "file_exists", False, 1.0, True),
        ]
        assert got[0].params == {"path": "~/Desktop/a.png", "width": 400}
        assert got[0].evidence == "400x300" and got[1].evidence == ""
        assert store.integrity_ok()


def test_record_score_is_one_transaction_and_replaces_earlier_scores(tmp_path: Path) -> None:
    with Store(tmp_path / "lab.db") as store:
        episode = new_episode(store)
        ok = outcome("all[0]", passed=True, score=1.0)
        store.record_score(episode, passed=True, score=1.0, checks=[ok, ok])
        bad = outcome("all[1]", passed=True, score=1.5)
        with pytest.raises(StoreError, match="CHECK constraint failed"):
            store.record_score(episode, passed=False, score=0.5, checks=[ok, bad])
        ep = store.get_episode(episode)
        assert (ep.passed, ep.score, len(store.checks(episode))) == (True, 1.0, 2)

        store.record_score(episode, passed=False, score=0.0, checks=[])
        assert store.checks(episode) == []


def test_writes_that_contradict_the_episode_are_refused(tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    with Store(db) as store:
        one, two = new_episode(store), new_episode(store)
        other = store.record_message(
            two, role="user", kind="instruction", text="x", step=0, source="task"
        )
        with pytest.raises(StoreError, match="FOREIGN KEY"):
            step(store, one, 0, active_message_id=other)  # a message of another episode
        with pytest.raises(StoreError, match="FOREIGN KEY"):
            step(store, one, 0, phase_index=0)  # episode one has no phases
        step(store, one, 0)
        with pytest.raises(StoreError, match="UNIQUE") as err:
            step(store, one, 0)
        assert f"step 0 of episode {one}" in str(err.value) and str(db) in str(err.value)
        with pytest.raises(StoreError, match="no time zone"):
            step(store, one, 1, started_at=datetime(2025, 1, 1))

        store.init_phases(
            one,
            [phase("a", "agent_done"), phase("b", "agent_ask")],
        )
        with pytest.raises(StoreError, match="earlier phase is still pending"):
            store.mark_phase_delivered(one, 1, step=3)
        store.mark_phase_delivered(one, 0, step=3)
        with pytest.raises(StoreError, match="already delivered"):
            store.mark_phase_delivered(one, 0, step=4)
        with pytest.raises(StoreError, match="has no phase 7"):
            store.mark_phase_delivered(one, 7, step=4)

        store.finish_episode(one, status="error", end_reason="error", error="boom", steps=1)
        with pytest.raises(StoreError, match=r"already ended \(error\)"):
            store.finish_episode(one, status="finished", end_reason="done", steps=1)
        with pytest.raises(StoreError, match="CHECK constraint failed"):
            store.record_score(one, passed=True, score=1.0, checks=[])  # an error never passes
        with pytest.raises(StoreError, match=f"no episode 99 in {db}"):
            store.get_episode(99)
        with pytest.raises(StoreError, match=f"no episode 99 in {db}"):
            store.steps(99)
        with pytest.raises(StoreError, match="not JSON-serializable"):
            new_episode(store, config={"when": object()})
        assert store.integrity_ok()


def test_list_episodes_filters_newest_first(tmp_path: Path) -> None:
    with Store(tmp_path / "lab.db") as store:
        a = new_episode(store, task_id="a", agent="null")
        b = new_episode(store, task_id="b", agent="reference", batch_id="nightly")
        c = new_episode(store, task_id="a", agent="reference", batch_id="nightly")
        store.finish_episode(a, status="finished", end_reason="fail", steps=0)
        assert [e.id for e in store.list_episodes()] == [c, b, a]
        assert [e.id for e in store.list_episodes(task_id="a")] == [c, a]
        assert [e.id for e in store.list_episodes(status="running")] == [c, b]
        assert [e.id for e in store.list_episodes(agent="reference", task_id="a")] == [c]
        assert [e.id for e in store.list_episodes(batch_id="nightly")] == [c, b]
        assert [e.id for e in store.list_episodes(limit=1)] == [c]
        assert [e.id for e in store.list_episodes(limit=None)] == [c, b, a]
        assert store.list_episodes(task_id="zzz") == []


# -- one transaction per step ----------------------------------------------------------

TWO_PHASES = [
    phase("Also a JPEG.", "agent_done", "feedback"),
    phase("And a PNG.", "agent_done", "feedback"),
]


def test_a_step_is_written_with_its_messages_and_phase_delivery(tmp_path: Path) -> None:
    with Store(tmp_path / "lab.db") as store:
        episode = new_episode(store)
        store.init_phases(episode, TWO_PHASES)
        first = store.record_message(
            episode, role="user", kind="instruction", text="Flip it.", step=0, source="task"
        )
        said = [
            Message("agent", "done", "DONE", 1, "agent"),
            Message("user", "feedback", "Also a JPEG.", 1, "phase", phase_index=0),
        ]
        ids = step(
            store,
            episode,
            0,
            action=action_to_dict(Done()),
            kind="done",
            phase_index=0,
            active_message_id=first,
            messages=said,
            delivered_phase=0,
        )
        messages = store.messages(episode)
        assert [m.id for m in messages] == [first, *ids]
        assert [
            (m.role, m.kind, m.text, m.step, m.source, m.phase_index) for m in messages[1:]
        ] == [(m.role, m.kind, m.text, m.step, m.source, m.phase_index) for m in said]
        assert [(p.status, p.delivered_step) for p in store.phases(episode)] == [
            ("delivered", 1),
            ("pending", None),
        ]
        # A later step may point at a message its predecessor wrote.
        step(store, episode, 1, phase_index=1, active_message_id=ids[1])
        assert step(store, episode, 2) == []


def test_a_refused_part_of_a_step_leaves_none_of_it(tmp_path: Path) -> None:
    with Store(tmp_path / "lab.db") as store:
        episode = new_episode(store)
        store.init_phases(episode, TWO_PHASES)
        asked = Message("agent", "question", "Which size?", 1, "agent")
        # The step's row and its first message are written, then the database refuses
        # the second (an agent cannot give an instruction): all of it is rolled back.
        instruction = Message("agent", "instruction", "Do it yourself.", 1, "agent")
        with pytest.raises(StoreError, match="CHECK constraint failed") as err:
            step(store, episode, 0, messages=[asked, instruction])
        assert f"step 0 of episode {episode}" in str(err.value)
        # Refused last of all: a delivery out of order.
        with pytest.raises(StoreError, match="an earlier phase is still pending"):
            step(store, episode, 0, messages=[asked], delivered_phase=1)
        assert store.steps(episode) == [] and store.messages(episode) == []
        assert [p.status for p in store.phases(episode)] == ["pending", "pending"]
        # The same step, whole, goes in.
        step(store, episode, 0, messages=[asked], delivered_phase=0)
        assert [s.idx for s in store.steps(episode)] == [0]
        assert [m.text for m in store.messages(episode)] == ["Which size?"]
        assert store.integrity_ok()
