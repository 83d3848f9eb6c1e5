"""The store's schema on real SQLite files: migrations, the vocabulary's CHECK lists,
databases made by older versions, error kinds."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from sqlite_utils import Database

from app.core import vocabulary
from app.core.conversation import Message
from app.core.errors import StoreError
from app.core.integrity import FLAG_KINDS
from app.core.vocabulary import (
    AGENT_KINDS,
    END_REASONS,
    ERROR_KINDS,
    SOURCES,
    USER_KINDS,
    EpisodeStatus,
    ErrorKind,
)
from app.store import Store
from app.store.schema import MIGRATIONS
from tests.store.helpers import REPO, new_episode, old_database, step

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
# Written here on purpose, not taken from app/store/schema.py: it is the oracle the
# databases' stored SQL is compared with, so a column the schema forgets (or a list it
# builds from the wrong tuple) fails the test instead of agreeing with itself.
VOCABULARY_CHECKS = {
    ("episodes", "user_mode"): [vocabulary.USER_MODES],
    ("episodes", "status"): [vocabulary.EPISODE_STATUSES],
    ("episodes", "end_reason"): [vocabulary.END_REASONS],
    ("episodes", "error_kind"): [vocabulary.ERROR_KINDS],
    ("phases", "kind"): [vocabulary.PHASE_KINDS],
    ("phases", "status"): [vocabulary.PHASE_STATUSES],
    ("messages", "role"): [vocabulary.ROLES],
    ("messages", "source"): [vocabulary.SOURCES],
    ("messages", "kind"): [vocabulary.USER_KINDS, vocabulary.AGENT_KINDS],
    ("messages", "origin"): [vocabulary.MESSAGE_ORIGINS],
    ("integrity_flags", "kind"): [FLAG_KINDS],
    ("steps", "actor"): [vocabulary.STEP_ACTORS],
    ("trial_tries", "status"): [vocabulary.TRIAL_STATUSES],
    ("responses", "point"): [vocabulary.QUESTIONNAIRE_POINTS],
    ("episode_requests", "request"): [vocabulary.EPISODE_REQUESTS],
}


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
