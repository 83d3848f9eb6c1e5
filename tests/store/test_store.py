"""The episode store on real SQLite files: schema, round trips, crash safety, frames."""

from __future__ import annotations

import asyncio
import functools
import io
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from sqlite_utils import Database

from app.core.actions import Click, Done, Key, action_to_dict, describe_action
from app.core.conversation import Message
from app.core.errors import StoreError
from app.core.integrity import FLAG_KINDS
from app.core.triggers import AgentAsk, AgentDone, AnyOf
from app.core.vocabulary import (
    AGENT_KINDS,
    END_REASONS,
    EPISODE_STATUSES,
    ERROR_KINDS,
    MESSAGE_ORIGINS,
    PHASE_KINDS,
    PHASE_STATUSES,
    ROLES,
    SOURCES,
    STEP_ACTORS,
    USER_KINDS,
    USER_MODES,
    EpisodeStatus,
    ErrorKind,
    PhaseKind,
)
from app.store import Store, frame_png
from app.store.schema import MIGRATIONS
from app.tasks.model import Phase
from tests.check_outcomes import outcome

REPO = Path(__file__).resolve().parents[2]


def phase(message: str, trigger: Any, kind: PhaseKind | None = None) -> Phase:
    """A task's phase, its trigger read from the task file's form."""
    return Phase.model_validate({"message": message, "trigger": trigger, "kind": kind})


def new_episode(store: Store, **overrides: Any) -> int:
    fields: dict[str, Any] = {
        "task_id": "gimp-flip",
        "task_path": "tasks/gimp/gimp-flip.yaml",
        "task_sha256": "ab" * 32,
        "app": "gimp",
        "level": "L1",
        "interactive": True,
        "agent": "reference",
        "user_mode": "simulated",
        "backend": "local",
        "config": {"budget": {"steps": 50}},
    }
    fields.update(overrides)
    return store.start_episode(**fields)


def step(store: Store, episode_id: int, idx: int, **overrides: Any) -> list[int]:
    fields: dict[str, Any] = {
        "idx": idx,
        "action": action_to_dict(Key("ctrl+s")),
        "kind": "key",
        "description": "key(ctrl+s)",
        "started_at": datetime(2025, 1, 1, tzinfo=UTC) + timedelta(seconds=idx),
        "agent_seconds": 0.5,
        "act_seconds": 0.01,
        "settle_seconds": 0.2,
        "frame": None,
        "phase_index": None,
        "active_message_id": None,
    }
    fields.update(overrides)
    return store.record_step(episode_id, **fields)


def png_of(value: int, size: tuple[int, int] = (8, 12)) -> bytes:
    return frame_png(np.full((*size, 3), value, dtype=np.uint8))


# -- schema ------------------------------------------------------------------


def test_migrations_apply_once_and_reopening_is_idempotent(tmp_path: Path) -> None:
    db = tmp_path / "sessions" / "lab.db"
    with Store(db) as store:
        first = store.applied_migrations()
        episode = new_episode(store)
    with Store(db) as store:
        assert store.applied_migrations() == first
        assert store.get_episode(episode).task_id == "gimp-flip"
    assert first == all_migrations()
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT COUNT(*) FROM _sqlite_migrations").fetchone()[0] == len(first)
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


def all_migrations() -> list[str]:
    return [migration.name for migration in MIGRATIONS.pending(Database(memory=True))]


RACE_CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from app.store import Store
    folder, me = Path(sys.argv[1]), sys.argv[2]
    for n in range(int(sys.argv[3])):
        (folder / f"ready-{n}-{me}").touch()
        while not (folder / f"go-{n}").exists():
            time.sleep(0.0005)
        Store(folder / f"race-{n}.db").close()
    """
)


def test_fresh_database_opened_by_several_processes_at_once(tmp_path: Path) -> None:
    # Round by round, the children wait until all are ready, then open the same fresh
    # database at once. Before the WAL switch retried, one child in about ten rounds
    # was answered "database is locked".
    children, rounds = 6, 40
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RACE_CHILD, str(tmp_path), str(k), str(rounds)],
            cwd=REPO,
            stderr=subprocess.PIPE,
        )
        for k in range(children)
    ]
    deadline = time.monotonic() + 120
    for n in range(rounds):
        while len(list(tmp_path.glob(f"ready-{n}-*"))) < children:
            if any(p.poll() is not None for p in procs) or time.monotonic() > deadline:
                break
            time.sleep(0.0005)
        else:
            (tmp_path / f"go-{n}").touch()
            continue
        for p in procs:  # a child failed (or hung): the others wait for a round that never starts
            p.kill()
        break
    errors = [p.communicate(timeout=120)[1].decode() for p in procs]
    assert [p.returncode for p in procs] == [0] * children, errors
    for n in range(rounds):
        with Store(tmp_path / f"race-{n}.db") as store:
            assert len(store.applied_migrations()) == len(all_migrations())
            assert store.integrity_ok()


def test_message_vocabulary_matches_the_schema(tmp_path: Path) -> None:
    with Store(tmp_path / "lab.db") as store:
        episode = new_episode(store)
        for n, kind in enumerate(USER_KINDS):
            store.record_message(
                episode, role="user", kind=kind, text=kind, step=n, source=SOURCES[n % 4]
            )
        for agent_kind in AGENT_KINDS:
            store.record_message(
                episode, role="agent", kind=agent_kind, text=agent_kind, step=9, source="agent"
            )
        kinds = [m.kind for m in store.messages(episode)]
        assert kinds == [*USER_KINDS, *AGENT_KINDS]
        assert [m.idx for m in store.messages(episode)] == list(range(len(kinds)))

        bad: list[dict[str, Any]] = [
            {"role": "agent", "kind": "instruction", "source": "agent"},
            {"role": "user", "kind": "question", "source": "person"},
            {"role": "user", "kind": "shout", "source": "person"},
            {"role": "robot", "kind": "done", "source": "agent"},
            {"role": "user", "kind": "feedback", "source": "nobody"},
        ]
        for fields in bad:
            with pytest.raises(StoreError, match="CHECK constraint failed") as err:
                store.record_message(episode, text="x", step=0, **fields)
            assert str(tmp_path / "lab.db") in str(err.value)
        assert len(store.messages(episode)) == len(kinds)


def test_every_end_reason_is_accepted_and_status_running_is_refused(tmp_path: Path) -> None:
    with Store(tmp_path / "lab.db") as store:
        for reason in END_REASONS:
            episode = new_episode(store)
            status: EpisodeStatus = "error" if reason == "error" else "finished"
            store.finish_episode(episode, status=status, end_reason=reason, steps=0)
            assert store.get_episode(episode).end_reason == reason
        episode = new_episode(store)
        with pytest.raises(StoreError, match="status must be"):
            store.finish_episode(episode, status="running", end_reason="done", steps=0)
        # an 'error' end reason with a 'finished' status contradicts itself
        with pytest.raises(StoreError, match="CHECK constraint failed"):
            store.finish_episode(episode, status="finished", end_reason="error", steps=0)
        assert store.get_episode(episode).status == "running"


# Where each CHECK list of vocabulary words belongs: (table, column) -> the lists, in
# the order the table's SQL has them (messages.kind: the user's kinds, the agent's).
VOCABULARY_CHECKS = {
    ("episodes", "user_mode"): [USER_MODES],
    ("episodes", "status"): [EPISODE_STATUSES],
    ("episodes", "end_reason"): [END_REASONS],
    ("episodes", "error_kind"): [ERROR_KINDS],
    ("phases", "kind"): [PHASE_KINDS],
    ("phases", "status"): [PHASE_STATUSES],
    ("messages", "role"): [ROLES],
    ("messages", "source"): [SOURCES],
    ("messages", "kind"): [USER_KINDS, AGENT_KINDS],
    ("messages", "origin"): [MESSAGE_ORIGINS],
    ("integrity_flags", "kind"): [FLAG_KINDS],
    ("steps", "actor"): [STEP_ACTORS],
}

# A database as the store made it before app.core.vocabulary existed.
OLD_DATABASE = REPO / "tests" / "data" / "store" / "deskloop-0004.sql"


def old_database(path: Path) -> Path:
    conn = sqlite3.connect(path)
    try:
        conn.executescript(OLD_DATABASE.read_text())
    finally:
        conn.close()
    return path


def check_lists(db: Path) -> dict[tuple[str, str], list[tuple[str, ...]]]:
    """Every `column IN ('word', ...)` of the tables' stored SQL, by table and column."""
    conn = sqlite3.connect(db)
    try:
        tables = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall()
    finally:
        conn.close()
    found: dict[tuple[str, str], list[tuple[str, ...]]] = {}
    for table, sql in tables:
        for column, words in re.findall(r"(\w+)\s+IN\s*\(\s*('[^)]*)\)", sql):
            found.setdefault((table, column), []).append(tuple(re.findall(r"'([^']*)'", words)))
    return found


@pytest.mark.parametrize("made", ["fresh", "before the vocabulary"])
def test_every_check_list_is_the_vocabulary(tmp_path: Path, made: str) -> None:
    # Both kinds of database: a word added to the vocabulary reaches fresh databases
    # through migration 0001, and existing ones only through a new migration.
    db = tmp_path / "lab.db"
    if made != "fresh":
        old_database(db)
    Store(db).close()
    assert check_lists(db) == VOCABULARY_CHECKS


def test_a_database_made_before_opens_reads_back_and_takes_writes(tmp_path: Path) -> None:
    with Store(old_database(tmp_path / "old.db")) as store:
        assert store.applied_migrations() == all_migrations()
        (ep,) = store.list_episodes()
        assert (ep.status, ep.end_reason, ep.user_mode, ep.passed, ep.steps) == (
            "finished",
            "step_budget",
            "person",
            True,
            1,
        )
        assert [(m.role, m.kind, m.source, m.step) for m in store.messages(ep.id)] == [
            ("user", "instruction", "task", 0),
            ("agent", "done", "agent", 1),
            ("user", "feedback", "phase", 1),
        ]
        assert [(p.status, p.kind, p.delivered_step) for p in store.phases(ep.id)] == [
            ("delivered", "feedback", 1)
        ]
        assert [s.description for s in store.steps(ep.id)] == ["DONE"]
        assert [c.name for c in store.checks(ep.id)] == ["file_exists"]
        episode = new_episode(store)
        step(store, episode, 0, messages=[Message("agent", "fail", "no", 1, "agent")])
        assert store.integrity_ok()


# The errors the store held before kinds were recorded, as their runner worded them,
# and the kind migration 0005 gives each (None: the words do not say).
LEGACY_ERRORS: list[tuple[str, str, ErrorKind | None]] = [
    ("error", "Desktop error: cannot connect to libvirt at qemu+ssh://lab2/system", "desktop"),
    ("error", "VNC error: no frame within 5 s", "vnc"),
    ("error", "scoring failed: Guest error: reading '~/out.png' timed out", "guest"),
    ("error", "Agent unavailable: model endpoint failed after 4 retries", "agent_unavailable"),
    ("error", "User unavailable: LLM user endpoint failed", "user_unavailable"),
    ("error", "Endpoint unavailable: HTTP 503", "endpoint"),
    ("error", "batch time limit of 30 s exceeded during the episode", "time_limit"),
    ("error", "interrupted: runner process 41 ended without finishing the episode", "interrupted"),
    ("error", "Agent error: scripted agent file x not found", "agent"),
    ("error", "Malformed action: no tool call in the answer", "agent"),
    ("error", "Invalid action: unknown key 'hyper'", "action"),
    ("error", "Invalid task: tasks/gimp/x.yaml: budget: field required", "task"),
    ("error", "User error: the LLM user answered without text", "user"),
    ("error", "Store error: disk I/O error", "store"),
    ("aborted", "aborted during episode", "aborted"),
    ("aborted", "aborted by the person in the loop", "aborted"),
    ("error", "KeyError: 'frame'", None),
    ("error", "boom", None),
]


def test_legacy_error_rows_get_their_kind_from_their_words_once(tmp_path: Path) -> None:
    db = old_database(tmp_path / "old.db")
    conn = sqlite3.connect(db)
    try:
        for end_reason, error, _ in LEGACY_ERRORS:
            conn.execute(
                """INSERT INTO episodes (task_id, task_path, task_sha256, app, level,
                       interactive, agent, user_mode, backend, status, end_reason, error,
                       steps, started_at, ended_at, pid, hostname)
                   SELECT task_id, task_path, task_sha256, app, level, interactive, agent,
                       user_mode, backend, 'error', ?, ?, 0, started_at, ended_at, pid,
                       hostname
                   FROM episodes WHERE id = 1""",
                (end_reason, error),
            )
        conn.commit()
    finally:
        conn.close()
    with Store(db) as store:
        assert "0005_episode_error_kind" in store.applied_migrations()
        by_id = sorted(store.list_episodes(limit=None), key=lambda e: e.id)
        finished, *errors = by_id
        assert (finished.status, finished.error_kind) == ("finished", None)
        assert [(e.error, e.error_kind) for e in errors] == [
            (error, kind) for _, error, kind in LEGACY_ERRORS
        ]
        # A row of unknown kind is still read, and the text stays as it was written.
        assert errors[-1].status == "error" and errors[-1].error == "boom"


def test_the_error_kind_is_recorded_beside_the_error(tmp_path: Path) -> None:
    with Store(tmp_path / "lab.db") as store:
        for kind in ERROR_KINDS:
            episode = new_episode(store)
            store.finish_episode(
                episode, status="error", end_reason="error", error="x", error_kind=kind, steps=0
            )
            assert store.get_episode(episode).error_kind == kind
        unknown = new_episode(store)
        store.finish_episode(unknown, status="error", end_reason="error", error="x", steps=0)
        assert store.get_episode(unknown).error_kind is None
        # Only an episode that ended in an error has a kind, and only a word of the
        # vocabulary is one.
        finished = new_episode(store)
        with pytest.raises(StoreError, match="CHECK constraint failed"):
            store.finish_episode(
                finished, status="finished", end_reason="done", error_kind="desktop", steps=0
            )
        with pytest.raises(StoreError, match="CHECK constraint failed"):
            store.finish_episode(
                finished,
                status="error",
                end_reason="error",
                error_kind="oops",  # type: ignore[arg-type]
                steps=0,
            )
        assert store.get_episode(finished).status == "running"


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


# -- crash safety --------------------------------------------------------------

CHILD = textwrap.dedent(
    """
    import sys, time
    from app.core.conversation import Message
    from app.core.triggers import AgentDone
    from app.tasks.model import Phase
    from app.store import Store, frame_png
    import numpy as np
    store = Store(sys.argv[1])
    episode = store.start_episode(
        task_id="t", task_path="t.yaml", task_sha256="0" * 64, app="gimp", level="L1",
        interactive=True, agent="null", user_mode="simulated", backend="local")
    store.init_phases(episode, [Phase(message="m", trigger=AgentDone())])
    message = store.record_message(
        episode, role="user", kind="instruction", text="go", step=0, source="task")
    print(episode, flush=True)
    for idx in range(100000):
        frame = store.save_frame(
            episode, idx, frame_png(np.full((4, 4, 3), idx % 256, dtype=np.uint8)))
        store.record_step(
            episode, idx=idx, action={"kind": "wait", "seconds": idx}, kind="wait",
            description=f"step {idx}", started_at=time.time(), agent_seconds=0.0,
            act_seconds=0.0, settle_seconds=0.0, frame=frame, phase_index=0,
            active_message_id=message,
            messages=[Message("agent", "question", f"step {idx}?", idx + 1, "agent")])
        print(idx, flush=True)
    """
)


def test_killed_runner_leaves_committed_steps_and_is_recovered(tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    errors = tmp_path / "child-stderr.txt"
    with errors.open("w") as stderr:
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(db)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    try:
        assert child.stdout is not None
        episode = int(child.stdout.readline() or errors.read_text())
        acked = -1
        while acked < 40:
            line = child.stdout.readline()
            assert line, errors.read_text()
            acked = int(line)
        # A second store on the same file while the runner writes: opening it must
        # neither block the runner nor "recover" an episode whose runner is alive.
        with Store(db) as reader:
            assert reader.get_episode(episode).status == "running"
        child.send_signal(signal.SIGKILL)
        # Read through the same buffered reader as above: communicate() would read
        # the raw pipe and miss lines this reader has already buffered.
        rest = child.stdout.read()
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL
    acked = max([acked, *(int(line) for line in rest.split())])

    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        stored = conn.execute(
            "SELECT idx, action, description FROM steps WHERE episode_id = ? ORDER BY idx",
            (episode,),
        ).fetchall()
        asked = [
            text
            for (text,) in conn.execute(
                "SELECT text FROM messages WHERE episode_id = ? AND role = 'agent' ORDER BY idx",
                (episode,),
            )
        ]
    finally:
        conn.close()
    # Every acknowledged step was committed; at most the one in flight was too.
    assert acked + 1 <= len(stored) <= acked + 2
    assert [row[0] for row in stored] == list(range(len(stored)))
    for idx, action, description in stored:
        assert (action, description) == (f'{{"kind": "wait", "seconds": {idx}}}', f"step {idx}")
    # Each step was committed with its message, and no message without its step.
    assert asked == [f"step {idx}?" for idx in range(len(stored))]

    with Store(db) as store:
        assert store.integrity_ok()
        ep = store.get_episode(episode)
        assert (ep.status, ep.end_reason) == ("error", "error")
        assert ep.error == (
            f"interrupted: runner process {child.pid} ended without finishing the episode"
        )
        assert ep.error_kind == "interrupted"  # a batch reruns it
        assert ep.steps == len(stored)
        steps = store.steps(episode)
        # The last thing recorded: the last step's message, written with the step.
        assert ep.ended_at == store.messages(episode)[-1].created_at >= steps[-1].started_at
        assert [p.status for p in store.phases(episode)] == ["never_delivered"]
        for s in steps:
            assert s.frame is not None
            with Image.open(store.frame_path(s.frame)) as image:
                assert image.getpixel((0, 0)) == (s.idx % 256,) * 3
        # Recovery is done once: nothing is left to recover.
        assert store.recover_interrupted() == []


def test_opening_an_up_to_date_database_takes_no_write_lock(tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    with Store(db) as store:
        episode = new_episode(store)
    writer = sqlite3.connect(db, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")  # another process in the middle of a write
        start = time.perf_counter()
        with Store(db) as viewer:
            assert viewer.get_episode(episode).status == "running"
        # Waiting for the lock would take the whole busy timeout (5 s).
        assert time.perf_counter() - start < 2.0
        writer.execute("COMMIT")
    finally:
        writer.close()


def test_episode_of_a_live_runner_is_not_recovered(tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    with Store(db) as store:
        episode = new_episode(store)
    with Store(db) as store:
        assert store.recover_interrupted() == []
        assert store.get_episode(episode).status == "running"


def test_episode_whose_pid_was_reused_is_recovered(tmp_path: Path) -> None:
    # The runner dies and the kernel hands its pid to another process (after a reboot,
    # often a system daemon). The pid is alive; the runner is not.
    db = tmp_path / "lab.db"
    record = (
        "import sys; from tests.store.test_store import new_episode; from app.store import Store;"
        " s = Store(sys.argv[1]); print(new_episode(s)); s.close()"
    )
    made = subprocess.run(
        [sys.executable, "-c", record, str(db)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    episode = int(made.stdout)
    other = subprocess.Popen(["sleep", "600"])
    try:
        conn = sqlite3.connect(db, isolation_level=None)
        try:
            (start,) = conn.execute(
                "SELECT runner_start FROM episodes WHERE id = ?", (episode,)
            ).fetchone()
            boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
            assert start.startswith(boot_id + "/")
            conn.execute("UPDATE episodes SET pid = ? WHERE id = ?", (other.pid, episode))
            # An episode recorded before runner_start existed is judged by its pid alone.
            with Store(db) as store:
                old = new_episode(store)
            conn.execute(
                "UPDATE episodes SET pid = ?, runner_start = NULL WHERE id = ?", (other.pid, old)
            )
        finally:
            conn.close()
        with Store(db) as store:
            assert store.get_episode(episode).status == "error"
            assert store.get_episode(old).status == "running"
    finally:
        other.kill()
        other.wait()
    with Store(db) as store:
        assert store.get_episode(old).status == "error"


# -- off the loop ------------------------------------------------------------------------


@contextmanager
def write_locked(db: Path) -> Iterator[None]:
    """Another process in the middle of a write: the store's writes wait for it."""
    other = sqlite3.connect(db, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        yield
        other.execute("COMMIT")
    finally:
        other.close()


def question(store: Store, episode: int, text: str) -> Callable[[], int]:
    return functools.partial(
        store.record_message,
        episode,
        role="agent",
        kind="question",
        text=text,
        step=0,
        source="agent",
    )


async def test_a_write_waiting_on_a_lock_leaves_the_loop_running(tmp_path: Path) -> None:
    with Store(tmp_path / "lab.db") as store:
        episode = new_episode(store)
        with write_locked(tmp_path / "lab.db"):
            write = asyncio.ensure_future(store.off_loop(question(store, episode, "a")))
            ticks, until = 0, time.monotonic() + 0.5
            while time.monotonic() < until:
                await asyncio.sleep(0.01)
                ticks += 1
            assert not write.done() and ticks >= 10
        message_id = await write
        assert [m.id for m in store.messages(episode)] == [message_id]


async def test_calls_run_in_order_and_survive_their_awaiter_being_cancelled(
    tmp_path: Path,
) -> None:
    # A runner cancelled (Ctrl-C, a batch's time limit) while its write waits still
    # has that write done, and before the episode's end it records next.
    db = tmp_path / "lab.db"
    with Store(db) as store:
        episode = new_episode(store)
        with write_locked(db):
            first = asyncio.ensure_future(store.off_loop(question(store, episode, "a")))
            await asyncio.sleep(0.1)  # the store's thread runs it: it waits for the lock
            # Handing calls over does not wait for the one running.
            start = time.monotonic()
            calls = [
                asyncio.ensure_future(store.off_loop(question(store, episode, text)))
                for text in "bc"
            ]
            await asyncio.sleep(0.05)
            assert time.monotonic() - start < 1.0 and not first.done()
            calls[0].cancel()
            with pytest.raises(asyncio.CancelledError):
                await calls[0]
        await first
        await calls[1]
        assert [m.text for m in store.messages(episode)] == ["a", "b", "c"]


async def test_close_waits_for_the_calls_handed_over(tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    store = Store(db)
    episode = new_episode(store)
    other = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    try:
        other.execute("BEGIN IMMEDIATE")
        write = asyncio.ensure_future(store.off_loop(question(store, episode, "kept")))
        await asyncio.sleep(0.05)
        release = threading.Timer(0.3, other.execute, ["COMMIT"])
        release.start()
        store.close()  # blocks until the write, waiting on the lock, is done
        release.join()
    finally:
        other.close()
    await write
    with pytest.raises(StoreError, match="closed"):
        await store.off_loop(question(store, episode, "too late"))
    with Store(db) as again:
        assert [m.text for m in again.messages(episode)] == ["kept"]


# -- frames -----------------------------------------------------------------------


def test_frame_png_is_lossless() -> None:
    rng = np.random.default_rng(7)
    for shape in [(30, 40, 3), (30, 40, 4), (30, 40)]:
        pixels = rng.integers(0, 256, size=shape, dtype=np.uint8)
        with Image.open(io.BytesIO(frame_png(pixels))) as image:
            assert np.array_equal(np.asarray(image), pixels)
    with pytest.raises(StoreError, match="uint8"):
        frame_png(np.zeros((4, 4, 3), dtype=np.float32))
    with pytest.raises(StoreError, match="shape"):
        frame_png(np.zeros((4, 4, 2), dtype=np.uint8))


def test_identical_frames_share_a_file_within_an_episode(tmp_path: Path) -> None:
    with Store(tmp_path / "lab.db") as store:
        folder = store.frames.root.relative_to(tmp_path).as_posix()
        one, two = new_episode(store), new_episode(store)
        first = store.save_frame(one, 0, png_of(1))
        assert first == f"{folder}/{one}/0.png"
        assert store.save_frame(one, 1, png_of(1)) == first
        assert store.save_frame(one, 2, png_of(2)) == f"{folder}/{one}/2.png"
        assert store.save_frame(one, 3, png_of(1)) == first
        assert store.save_frame(one, "final", png_of(3)) == f"{folder}/{one}/final.png"
        assert store.save_frame(two, 0, png_of(1)) == f"{folder}/{two}/0.png"
        assert sorted(p.name for p in (tmp_path / folder / str(one)).iterdir()) == [
            "0.png",
            "2.png",
            "final.png",
        ]
        assert store.frame_path(first).read_bytes() == png_of(1)
        for bad in ["../x", "a/b", "", "final.png"]:
            with pytest.raises(StoreError, match="frame name"):
                store.save_frame(one, bad, png_of(1))


def test_memory_store_keeps_frames_in_a_temporary_directory() -> None:
    store = Store.memory()
    try:
        episode = new_episode(store)
        frame = store.save_frame(episode, 0, png_of(5))
        step(store, episode, 0, frame=frame)
        path = store.frame_path(store.steps(episode)[0].frame or "")
        assert path.read_bytes() == png_of(5)
    finally:
        store.close()
    assert not path.exists()
    with pytest.raises(StoreError, match="closed"):
        store.get_episode(episode)


# -- bad paths ------------------------------------------------------------------------


def test_a_directory_is_not_a_database(tmp_path: Path) -> None:
    with pytest.raises(StoreError) as err:
        Store(tmp_path)
    assert str(tmp_path) in str(err.value)


def test_unwritable_location_names_the_path(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where a directory should be")
    target = blocker / "lab.db"
    with pytest.raises(StoreError) as err:
        Store(target)
    assert str(target) in str(err.value)


def test_a_file_that_is_not_a_database_names_the_path(tmp_path: Path) -> None:
    target = tmp_path / "lab.db"
    target.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not a database") as err:
        Store(target)
    assert str(target) in str(err.value)


def test_unwritable_frames_directory_names_the_frame(tmp_path: Path) -> None:
    with Store(tmp_path / "lab.db") as store:
        episode = new_episode(store)
        (tmp_path / "frames").write_text("a file where the frames directory should be")
        with pytest.raises(StoreError, match="cannot write frame") as err:
            store.save_frame(episode, 0, png_of(1))
        assert str(store.frames.root / str(episode) / "0.png") in str(err.value)


def test_agent_info_round_trips_and_old_databases_migrate(tmp_path: Path) -> None:
    path = tmp_path / "lab.db"
    with Store(path) as store:
        episode = new_episode(store)
        step(store, episode, 0, agent_info={"tokens": {"prompt": 812, "completion": 40}})
        step(store, episode, 1)
        infos = [s.agent_info for s in store.steps(episode)]
        assert infos == [{"tokens": {"prompt": 812, "completion": 40}}, None]
        assert "0002_step_agent_info" in store.applied_migrations()
    # A database made before migration 0002 gains the column on open, rows intact.
    with Store(tmp_path / "v1.db") as store:
        episode = new_episode(store)
        step(store, episode, 0)
    with sqlite3.connect(tmp_path / "v1.db") as conn:
        conn.execute("ALTER TABLE steps DROP COLUMN agent_info")
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = '0002_step_agent_info'")
    with Store(tmp_path / "v1.db") as store:
        (only,) = store.steps(episode)
        assert only.agent_info is None and only.description == "key(ctrl+s)"


def test_two_databases_in_one_folder_keep_their_own_frames(tmp_path: Path) -> None:
    # Both databases' first episode has id 1: each must read back its own frames.
    with Store(tmp_path / "a.db") as a, Store(tmp_path / "b.db") as b:
        in_a, in_b = new_episode(a), new_episode(b)
        assert in_a == in_b
        frame_a, frame_b = a.save_frame(in_a, 0, png_of(10)), b.save_frame(in_b, 0, png_of(20))
        assert frame_a != frame_b
    with Store(tmp_path / "a.db") as a, Store(tmp_path / "b.db") as b:
        assert a.frame_path(frame_a).read_bytes() == png_of(10)
        assert b.frame_path(frame_b).read_bytes() == png_of(20)
        assert re.fullmatch(r"frames/[0-9a-f]{12}/1/0\.png", frame_a), frame_a


def test_an_older_database_keeps_its_frames_and_gets_a_folder_of_its_own(
    tmp_path: Path,
) -> None:
    db = old_database(tmp_path / "lab.db")
    legacy = tmp_path / "frames" / "1" / "0.png"  # where frames were written before 0006
    legacy.parent.mkdir(parents=True)
    legacy.write_bytes(png_of(5))
    with Store(db) as store:
        assert store.frame_path("frames/1/0.png").read_bytes() == png_of(5)
        episode = new_episode(store)
        frame = store.save_frame(episode, 0, png_of(6))
        assert not frame.startswith(f"frames/{episode}/")
        assert store.frame_path(frame).read_bytes() == png_of(6)
    assert legacy.read_bytes() == png_of(5)


def test_a_frames_folder_outside_the_database_folder_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    Store(db).close()
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE store_info SET value = '../elsewhere' WHERE key = 'frames_folder'")
    conn.close()
    with pytest.raises(StoreError, match=re.escape("frames_folder is '../elsewhere'")):
        Store(db)
