"""The episode store: the only writer of the SQLite database, and its queries.

Every write is its own committed transaction, so a runner killed at any moment
loses at most the write in flight; `recover_interrupted` (run on every open) marks
episodes whose runner died as errors. The runner calls the write methods from the
asyncio loop thread; each is one or two small statements (tens of microseconds in
WAL mode with synchronous=NORMAL), so they are not worth moving to a thread.
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
import socket
import sqlite3
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Self, cast

from sqlite_utils import Database

from app.core.errors import StoreError
from app.core.procfs import process_start_time
from app.store.frames import FrameDir
from app.store.schema import (
    EndReason,
    EpisodeStatus,
    MessageKind,
    MessageSource,
    PhaseKind,
    PhaseStatus,
    Role,
    UserMode,
    applied_migrations,
    migrate,
)

MEMORY = ":memory:"
# How long a write waits for another process's write lock (a TUI recovering
# episodes, a second runner) before failing.
BUSY_TIMEOUT_SECONDS = 5.0

Timestamp = datetime | float
"""An aware datetime, or Unix time in seconds (time.time())."""


@dataclass(frozen=True)
class EpisodeRecord:
    id: int
    task_id: str
    task_path: str
    task_sha256: str
    app: str
    level: str
    interactive: bool
    agent: str
    user_mode: UserMode
    backend: str
    status: EpisodeStatus
    end_reason: EndReason | None
    error: str | None
    passed: bool | None
    score: float | None
    steps: int
    started_at: datetime
    ended_at: datetime | None
    pid: int
    hostname: str
    config: dict[str, Any]
    batch_id: str | None
    final_frame: str | None
    batch_agent: str | None = None
    """For a batch episode: the agent spec of its slot (see app.batch)."""
    batch_repeat: int | None = None
    """For a batch episode: the repeat index of its slot."""
    batch_attempt: int | None = None
    """For a batch episode: 0 for the first try of its slot, then 1, 2... on retries."""


@dataclass(frozen=True)
class BatchRecord:
    id: str
    created_at: datetime
    suite: dict[str, Any]
    """What app.batch needs to resume the batch: tasks, agents, repeats, options."""


@dataclass(frozen=True)
class StepRecord:
    episode_id: int
    idx: int
    action: dict[str, Any]
    kind: str
    description: str
    started_at: datetime
    agent_seconds: float
    act_seconds: float
    settle_seconds: float
    frame: str | None
    phase_index: int | None
    active_message_id: int | None
    error: str | None
    agent_info: dict[str, Any] | None = None
    """What the agent reported for this step (model agents: tokens, latency, raw answer)."""


@dataclass(frozen=True)
class MessageRecord:
    id: int
    episode_id: int
    idx: int
    role: Role
    kind: MessageKind
    text: str
    step: int
    phase_index: int | None
    source: MessageSource
    created_at: datetime


@dataclass(frozen=True)
class PhaseRecord:
    episode_id: int
    idx: int
    message: str
    trigger: Any
    kind: PhaseKind | None
    status: PhaseStatus
    delivered_step: int | None
    delivered_at: datetime | None


@dataclass(frozen=True)
class CheckRecord:
    episode_id: int
    idx: int
    path: str
    name: str
    params: dict[str, Any]
    weight: float
    required: bool
    passed: bool
    score: float
    evidence: str
    phase: int | None


def now_utc() -> datetime:
    return datetime.now(UTC)


def _iso(when: Timestamp | None) -> str:
    if when is None:
        when = now_utc()
    elif isinstance(when, int | float):
        when = datetime.fromtimestamp(when, UTC)
    elif when.tzinfo is None:
        raise StoreError(f"timestamp {when.isoformat()} has no time zone; pass an aware datetime")
    return when.astimezone(UTC).isoformat(timespec="microseconds")


def _parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _json(value: Any, what: str) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{what} is not JSON-serializable: {exc}") from None


def _opt_bool(value: int | None) -> bool | None:
    return None if value is None else bool(value)


def _process_identity(pid: int) -> str | None:
    """'BOOT_ID/TICKS' for a live `pid`: it names one process across pid reuse and reboots."""
    start = process_start_time(pid)
    if start is None:
        return None
    try:
        boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot_id = "unknown-boot"
    return f"{boot_id}/{start}"


def _runner_alive(pid: int, runner_start: str | None) -> bool:
    if not _pid_alive(pid):
        return False
    # Episodes recorded before migration 0004 have no start: the pid is all we have.
    return runner_start is None or _process_identity(pid) == runner_start


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by another user
    # A killed child its parent has not reaped yet still answers signal 0.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    state = stat.rsplit(")", 1)[-1].split()
    return not (state and state[0] in ("Z", "X"))


def _required(item: Mapping[str, Any], key: str, what: str) -> Any:
    if key not in item:
        raise StoreError(f"{what} has no {key!r} (keys: {', '.join(map(str, item)) or 'none'})")
    return item[key]


def _switch_to_wal(conn: sqlite3.Connection) -> str:
    """Set WAL journal mode and return the mode SQLite reports.

    Switching a fresh database to WAL needs an exclusive lock, and when two processes
    switch at once SQLite answers one of them "database is locked" at once, without
    waiting on the busy timeout (waiting could deadlock: each holds a shared lock the
    other needs gone). SQLite's advice for that answer is to try again, so we do,
    for as long as the busy timeout would have waited.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
    pause = 0.005
    while True:
        try:
            return str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode != sqlite3.SQLITE_BUSY or time.monotonic() > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


class Store:
    """The episode database at `path` and its frames under `<path's dir>/frames/`.

    `Store(':memory:')` (or `Store.memory()`) keeps the database in memory and its
    frames in a temporary directory removed by `close()`. A Store may be used from
    several threads; calls are serialized.
    """

    def __init__(self, path: Path | str) -> None:
        self.is_memory = str(path) == MEMORY
        self.path = MEMORY if self.is_memory else str(Path(path).expanduser())
        self._lock = threading.RLock()
        self._closed = False
        self._tmp_root: Path | None = None
        if self.is_memory:
            self._tmp_root = Path(tempfile.mkdtemp(prefix="deskloop-frames-"))
            self.root = self._tmp_root
        else:
            db_path = Path(self.path)
            self.root = db_path.parent
            if db_path.is_dir():
                raise StoreError(f"{self.path}: is a directory, not a database file")
            try:
                self.root.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(
                    f"{self.path}: cannot create its directory {self.root}: {exc.strerror or exc}"
                ) from None
        self.frames = FrameDir(self.root / "frames", self.root)
        self._conn: sqlite3.Connection | None = None
        try:
            self._conn = self._open()
            self.recover_interrupted()
        except BaseException:
            self.close()
            raise

    @classmethod
    def memory(cls) -> Store:
        return cls(MEMORY)

    def _open(self) -> sqlite3.Connection:
        try:
            # isolation_level=None: no implicit transactions; every transaction in
            # this class is an explicit BEGIN IMMEDIATE ... COMMIT.
            conn = sqlite3.connect(
                self.path,
                isolation_level=None,
                check_same_thread=False,
                timeout=BUSY_TIMEOUT_SECONDS,
            )
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot open the database: {exc}") from None
        try:
            conn.execute("PRAGMA foreign_keys = ON")
            if not self.is_memory:
                mode = _switch_to_wal(conn)
                if mode != "wal":
                    raise StoreError(f"{self.path}: cannot use WAL journal mode (got {mode!r})")
            conn.execute("PRAGMA synchronous = NORMAL")
            migrate(Database(conn, execute_plugins=False))
        except sqlite3.Error as exc:
            conn.close()
            raise StoreError(f"{self.path}: cannot open the database: {exc}") from None
        except BaseException:
            conn.close()
            raise
        return conn

    # -- lifecycle -----------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._conn is not None:
                self._conn.close()
            if self._tmp_root is not None:
                shutil.rmtree(self._tmp_root, ignore_errors=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({self.path!r})"

    @contextmanager
    def _op(self, doing: str) -> Iterator[sqlite3.Connection]:
        """Hold the lock and turn sqlite errors into a StoreError naming the database."""
        with self._lock:
            if self._closed or self._conn is None:
                raise StoreError(f"{self.path}: {doing}: the store is closed")
            try:
                yield self._conn
            except sqlite3.Error as exc:
                raise StoreError(f"{self.path}: {doing} failed: {exc}") from None

    @contextmanager
    def _write(self, doing: str) -> Iterator[sqlite3.Connection]:
        """One committed transaction; rolled back if anything in the block raises."""
        with self._op(doing) as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                if conn.in_transaction:
                    conn.rollback()
                raise
            conn.execute("COMMIT")

    def _rows(self, doing: str, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self._op(doing) as conn:
            cursor = conn.cursor()
            cursor.row_factory = sqlite3.Row
            return cursor.execute(sql, params).fetchall()

    # -- writes (the runner) -------------------------------------------------

    def start_episode(
        self,
        *,
        task_id: str,
        task_path: str | Path,
        task_sha256: str,
        app: str,
        level: str,
        interactive: bool,
        agent: str,
        user_mode: UserMode,
        backend: str,
        config: Mapping[str, Any] | None = None,
        batch_id: str | None = None,
        started_at: Timestamp | None = None,
    ) -> int:
        """Record a new running episode owned by this process; return its id."""
        config_json = _json(dict(config or {}), f"config of the {task_id} episode")
        with self._write(f"starting an episode of {task_id}") as conn:
            cursor = conn.execute(
                """INSERT INTO episodes (task_id, task_path, task_sha256, app, level,
                       interactive, agent, user_mode, backend, started_at, pid, hostname,
                       runner_start, config, batch_id)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                (
                    task_id,
                    str(task_path),
                    task_sha256,
                    app,
                    level,
                    int(interactive),
                    agent,
                    user_mode,
                    backend,
                    _iso(started_at),
                    os.getpid(),
                    socket.gethostname(),
                    _process_identity(os.getpid()),
                    config_json,
                    batch_id,
                ),
            )
            assert cursor.lastrowid is not None
            return cursor.lastrowid

    def init_phases(self, episode_id: int, phases: Sequence[Mapping[str, Any]]) -> None:
        """Record the task's phases, all pending. Each: message, trigger (JSON), kind (or None)."""
        rows = []
        for idx, phase in enumerate(phases):
            what = f"phase {idx} of episode {episode_id}"
            rows.append(
                (
                    episode_id,
                    idx,
                    _required(phase, "message", what),
                    _json(_required(phase, "trigger", what), f"trigger of {what}"),
                    phase.get("kind"),
                )
            )
        with self._write(f"recording the phases of episode {episode_id}") as conn:
            conn.executemany(
                "INSERT INTO phases (episode_id, idx, message, trigger, kind)"
                " VALUES (?, ?, ?, ?, ?)",
                rows,
            )

    def record_message(
        self,
        episode_id: int,
        *,
        role: Role,
        kind: MessageKind,
        text: str,
        step: int,
        phase_index: int | None = None,
        source: MessageSource,
        created_at: Timestamp | None = None,
    ) -> int:
        """Append a message to the episode's conversation; return its id."""
        with self._write(f"recording a {role} {kind} message in episode {episode_id}") as conn:
            cursor = conn.execute(
                """INSERT INTO messages (episode_id, idx, role, kind, text, step, phase_index,
                       source, created_at)
                   SELECT ?, COALESCE(MAX(idx) + 1, 0), ?, ?, ?, ?, ?, ?, ?
                   FROM messages WHERE episode_id = ?""",
                (
                    episode_id,
                    role,
                    kind,
                    text,
                    step,
                    phase_index,
                    source,
                    _iso(created_at),
                    episode_id,
                ),
            )
            assert cursor.lastrowid is not None
            return cursor.lastrowid

    def record_step(
        self,
        episode_id: int,
        *,
        idx: int,
        action: Mapping[str, Any],
        kind: str,
        description: str,
        started_at: Timestamp,
        agent_seconds: float,
        act_seconds: float,
        settle_seconds: float,
        frame: str | None,
        phase_index: int | None,
        active_message_id: int | None,
        error: str | None = None,
        agent_info: Mapping[str, Any] | None = None,
    ) -> None:
        """Record one step. `action` is app.core.actions.action_to_dict's form (or, for a
        rejected action, whatever the agent sent); `frame` is save_frame's path;
        `agent_info` is what the agent reported about the step (JSON)."""
        action_json = _json(dict(action), f"action of step {idx} of episode {episode_id}")
        info_json = (
            None
            if agent_info is None
            else _json(dict(agent_info), f"agent_info of step {idx} of episode {episode_id}")
        )
        with self._write(f"recording step {idx} of episode {episode_id}") as conn:
            conn.execute(
                """INSERT INTO steps (episode_id, idx, action, kind, description, started_at,
                       agent_seconds, act_seconds, settle_seconds, frame, phase_index,
                       active_message_id, error, agent_info)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                (
                    episode_id,
                    idx,
                    action_json,
                    kind,
                    description,
                    _iso(started_at),
                    agent_seconds,
                    act_seconds,
                    settle_seconds,
                    frame,
                    phase_index,
                    active_message_id,
                    error,
                    info_json,
                ),
            )

    def save_frame(self, episode_id: int, name: str | int, png: bytes) -> str:
        """Write a PNG (see frames.encode_png) as frame `name` (a step index or 'final').

        Returns its path relative to the database's directory, for `record_step`; a
        frame identical to one already saved in this episode returns that one's path.
        """
        with self._lock:
            return self.frames.save(episode_id, name, png)

    def frame_path(self, relative: str) -> Path:
        """The file of a frame path stored in a step (or an episode's final_frame)."""
        return self.frames.resolve(relative)

    def mark_phase_delivered(
        self, episode_id: int, idx: int, step: int, delivered_at: Timestamp | None = None
    ) -> None:
        """Mark the pending phase `idx` delivered at `step`; phases go strictly in order."""
        doing = f"delivering phase {idx} of episode {episode_id}"
        with self._write(doing) as conn:
            cursor = conn.execute(
                """UPDATE phases SET status = 'delivered', delivered_step = ?, delivered_at = ?
                   WHERE episode_id = ? AND idx = ? AND status = 'pending'
                     AND NOT EXISTS (SELECT 1 FROM phases AS earlier
                                     WHERE earlier.episode_id = phases.episode_id
                                       AND earlier.idx < phases.idx
                                       AND earlier.status = 'pending')""",
                (step, _iso(delivered_at), episode_id, idx),
            )
            if cursor.rowcount == 1:
                return
            row = conn.execute(
                "SELECT status FROM phases WHERE episode_id = ? AND idx = ?", (episode_id, idx)
            ).fetchone()
        if row is None:
            raise StoreError(f"{self.path}: {doing}: episode {episode_id} has no phase {idx}")
        if row[0] != "pending":
            raise StoreError(f"{self.path}: {doing}: the phase is already {row[0]}")
        raise StoreError(f"{self.path}: {doing}: an earlier phase is still pending")

    def finish_episode(
        self,
        episode_id: int,
        *,
        status: EpisodeStatus,
        end_reason: EndReason,
        error: str | None = None,
        steps: int,
        final_frame: str | None = None,
        ended_at: Timestamp | None = None,
    ) -> None:
        """End a running episode; its phases still pending become never_delivered."""
        doing = f"finishing episode {episode_id}"
        if status == "running":
            raise StoreError(f"{self.path}: {doing}: status must be 'finished' or 'error'")
        with self._write(doing) as conn:
            cursor = conn.execute(
                """UPDATE episodes SET status = ?, end_reason = ?, error = ?, steps = ?,
                       final_frame = ?, ended_at = ?
                   WHERE id = ? AND status = 'running'""",
                (status, end_reason, error, steps, final_frame, _iso(ended_at), episode_id),
            )
            if cursor.rowcount == 1:
                conn.execute(
                    "UPDATE phases SET status = 'never_delivered'"
                    " WHERE episode_id = ? AND status = 'pending'",
                    (episode_id,),
                )
                # No more steps will come: the dedupe index of its frames can go.
                self.frames.forget(episode_id)
                return
            row = conn.execute("SELECT status FROM episodes WHERE id = ?", (episode_id,)).fetchone()
        if row is None:
            raise StoreError(f"no episode {episode_id} in {self.path}")
        raise StoreError(f"{self.path}: {doing}: the episode already ended ({row[0]})")

    def record_score(
        self,
        episode_id: int,
        *,
        passed: bool,
        score: float,
        checks: Sequence[Mapping[str, Any]],
    ) -> None:
        """Record the evaluation, replacing any earlier one, in one transaction.

        Each check: path, name, passed, score, and optionally params (JSON), weight
        (1.0), required (True), evidence (''), phase (None). Checks recorded per phase
        (`record_phase_checks`) are kept.
        """
        rows = self._check_rows(episode_id, checks)
        doing = f"recording the score of episode {episode_id}"
        with self._write(doing) as conn:
            cursor = conn.execute(
                "UPDATE episodes SET passed = ?, score = ? WHERE id = ?",
                (int(passed), score, episode_id),
            )
            if cursor.rowcount != 1:
                raise StoreError(f"no episode {episode_id} in {self.path}")
            conn.execute("DELETE FROM checks WHERE episode_id = ? AND phase IS NULL", (episode_id,))
            self._insert_checks(conn, episode_id, rows)

    def record_phase_checks(
        self, episode_id: int, phase: int, checks: Sequence[Mapping[str, Any]]
    ) -> None:
        """Record the optional checks of phase `phase`, evaluated when it was delivered.

        They are kept apart from the final score (their `phase` column is set) and
        replace only earlier checks of the same phase. Each check as in `record_score`.
        """
        rows = self._check_rows(episode_id, [{**check, "phase": phase} for check in checks])
        with self._write(f"recording the checks of phase {phase} of episode {episode_id}") as conn:
            found = conn.execute("SELECT 1 FROM episodes WHERE id = ?", (episode_id,)).fetchone()
            if found is None:
                raise StoreError(f"no episode {episode_id} in {self.path}")
            conn.execute(
                "DELETE FROM checks WHERE episode_id = ? AND phase = ?", (episode_id, phase)
            )
            self._insert_checks(conn, episode_id, rows)

    @staticmethod
    def _insert_checks(
        conn: sqlite3.Connection, episode_id: int, rows: list[tuple[Any, ...]]
    ) -> None:
        # Final and per-phase checks share the table: new rows go after those kept.
        start = conn.execute(
            "SELECT COALESCE(MAX(idx) + 1, 0) FROM checks WHERE episode_id = ?", (episode_id,)
        ).fetchone()[0]
        conn.executemany(
            """INSERT INTO checks (episode_id, idx, path, name, params, weight, required,
                   passed, score, evidence, phase)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            [(row[0], start + row[1], *row[2:]) for row in rows],
        )

    def _check_rows(
        self, episode_id: int, checks: Sequence[Mapping[str, Any]]
    ) -> list[tuple[Any, ...]]:
        rows = []
        for idx, check in enumerate(checks):
            what = f"check {idx} of episode {episode_id}"
            rows.append(
                (
                    episode_id,
                    idx,
                    _required(check, "path", what),
                    _required(check, "name", what),
                    _json(check.get("params", {}), f"params of {what}"),
                    float(check.get("weight", 1.0)),
                    int(bool(check.get("required", True))),
                    int(bool(_required(check, "passed", what))),
                    float(_required(check, "score", what)),
                    str(check.get("evidence", "")),
                    check.get("phase"),
                )
            )
        return rows

    # -- batches (app.batch) ---------------------------------------------------

    def create_batch(
        self, batch_id: str, suite: Mapping[str, Any], created_at: Timestamp | None = None
    ) -> None:
        """Record a new batch and its suite (JSON)."""
        suite_json = _json(dict(suite), f"suite of batch {batch_id}")
        with self._write(f"recording batch {batch_id}") as conn:
            found = conn.execute("SELECT 1 FROM batches WHERE id = ?", (batch_id,)).fetchone()
            if found is not None:
                raise StoreError(f"{self.path}: batch {batch_id} already exists")
            conn.execute(
                "INSERT INTO batches (id, created_at, suite) VALUES (?, ?, ?)",
                (batch_id, _iso(created_at), suite_json),
            )

    def get_batch(self, batch_id: str) -> BatchRecord:
        rows = self._rows(
            f"reading batch {batch_id}", "SELECT * FROM batches WHERE id = ?", [batch_id]
        )
        if not rows:
            known = [b.id for b in self.list_batches()]
            close = difflib.get_close_matches(batch_id, known, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise StoreError(f"no batch {batch_id!r} in {self.path}{hint}")
        return _batch(rows[0])

    def list_batches(self) -> list[BatchRecord]:
        """Every batch, newest first."""
        rows = self._rows("listing batches", "SELECT * FROM batches ORDER BY created_at DESC")
        return [_batch(row) for row in rows]

    def tag_batch_slot(self, episode_id: int, *, agent: str, repeat: int, attempt: int) -> None:
        """Record which slot of its batch a running episode fills (once, while running)."""
        doing = f"recording the batch slot of episode {episode_id}"
        with self._write(doing) as conn:
            cursor = conn.execute(
                """UPDATE episodes SET batch_agent = ?, batch_repeat = ?, batch_attempt = ?
                   WHERE id = ? AND status = 'running' AND batch_id IS NOT NULL
                     AND batch_repeat IS NULL""",
                (agent, repeat, attempt, episode_id),
            )
            if cursor.rowcount != 1:
                raise StoreError(
                    f"{self.path}: {doing}: it is not a running, untagged batch episode"
                )

    def recover_interrupted(self) -> list[int]:
        """Mark episodes left 'running' by a runner that died on this host as errors.

        Episodes of live runners, and of other hosts (whose processes this host
        cannot see), are left alone. Returns the ids marked.
        """
        # Read first, so opening a database with nothing to recover (the usual case,
        # and every read-only viewer) never takes the write lock.
        with self._op("looking for interrupted episodes") as conn:
            running = conn.execute(
                "SELECT id, pid, runner_start FROM episodes"
                " WHERE status = 'running' AND hostname = ?",
                (socket.gethostname(),),
            ).fetchall()
        dead = [
            (episode_id, pid) for episode_id, pid, start in running if not _runner_alive(pid, start)
        ]
        if not dead:
            return []
        recovered: list[int] = []
        with self._write("recovering interrupted episodes") as conn:
            for episode_id, pid in dead:
                # ended_at is the last thing the runner recorded, so durations stay
                # honest however long after the crash the store is reopened. An
                # interrupted episode is never a pass, even if it was scored early.
                cursor = conn.execute(
                    """UPDATE episodes SET status = 'error', end_reason = 'error', error = :error,
                           passed = CASE WHEN passed = 1 THEN 0 ELSE passed END,
                           steps = (SELECT COUNT(*) FROM steps WHERE episode_id = :id),
                           ended_at = MAX(started_at,
                               COALESCE((SELECT MAX(started_at) FROM steps
                                         WHERE episode_id = :id), ''),
                               COALESCE((SELECT MAX(created_at) FROM messages
                                         WHERE episode_id = :id), ''))
                       WHERE id = :id AND status = 'running'""",
                    {
                        "id": episode_id,
                        "error": f"interrupted: runner process {pid} ended without "
                        "finishing the episode",
                    },
                )
                if cursor.rowcount == 0:
                    continue  # another process recovered it in the meantime
                conn.execute(
                    "UPDATE phases SET status = 'never_delivered'"
                    " WHERE episode_id = ? AND status = 'pending'",
                    (episode_id,),
                )
                recovered.append(episode_id)
        return recovered

    # -- queries (CLI, TUI, reports) -----------------------------------------

    def list_episodes(
        self,
        task_id: str | None = None,
        status: EpisodeStatus | None = None,
        agent: str | None = None,
        batch_id: str | None = None,
        limit: int | None = 100,
    ) -> list[EpisodeRecord]:
        """Episodes matching every filter given, newest first; limit=None for all."""
        where: list[str] = []
        params: list[Any] = []
        for column, value in (
            ("task_id", task_id),
            ("status", status),
            ("agent", agent),
            ("batch_id", batch_id),
        ):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        sql = "SELECT * FROM episodes"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id DESC LIMIT ?"
        # SQLite reads a negative LIMIT as no limit.
        rows = self._rows("listing episodes", sql, [*params, -1 if limit is None else limit])
        return [_episode(row) for row in rows]

    def get_episode(self, episode_id: int) -> EpisodeRecord:
        rows = self._rows(
            f"reading episode {episode_id}", "SELECT * FROM episodes WHERE id = ?", [episode_id]
        )
        if not rows:
            raise StoreError(f"no episode {episode_id} in {self.path}")
        return _episode(rows[0])

    def steps(self, episode_id: int) -> list[StepRecord]:
        rows = self._children("steps", episode_id, "idx")
        return [
            StepRecord(
                episode_id=row["episode_id"],
                idx=row["idx"],
                action=json.loads(row["action"]),
                kind=row["kind"],
                description=row["description"],
                started_at=_parse_time(row["started_at"]),
                agent_seconds=row["agent_seconds"],
                act_seconds=row["act_seconds"],
                settle_seconds=row["settle_seconds"],
                frame=row["frame"],
                phase_index=row["phase_index"],
                active_message_id=row["active_message_id"],
                error=row["error"],
                agent_info=None if row["agent_info"] is None else json.loads(row["agent_info"]),
            )
            for row in rows
        ]

    def messages(self, episode_id: int) -> list[MessageRecord]:
        rows = self._children("messages", episode_id, "idx")
        return [
            MessageRecord(
                id=row["id"],
                episode_id=row["episode_id"],
                idx=row["idx"],
                role=cast(Role, row["role"]),
                kind=cast(MessageKind, row["kind"]),
                text=row["text"],
                step=row["step"],
                phase_index=row["phase_index"],
                source=cast(MessageSource, row["source"]),
                created_at=_parse_time(row["created_at"]),
            )
            for row in rows
        ]

    def phases(self, episode_id: int) -> list[PhaseRecord]:
        rows = self._children("phases", episode_id, "idx")
        return [
            PhaseRecord(
                episode_id=row["episode_id"],
                idx=row["idx"],
                message=row["message"],
                trigger=json.loads(row["trigger"]),
                kind=cast(PhaseKind | None, row["kind"]),
                status=cast(PhaseStatus, row["status"]),
                delivered_step=row["delivered_step"],
                delivered_at=None
                if row["delivered_at"] is None
                else _parse_time(row["delivered_at"]),
            )
            for row in rows
        ]

    def checks(self, episode_id: int) -> list[CheckRecord]:
        rows = self._children("checks", episode_id, "idx")
        return [
            CheckRecord(
                episode_id=row["episode_id"],
                idx=row["idx"],
                path=row["path"],
                name=row["name"],
                params=json.loads(row["params"]),
                weight=row["weight"],
                required=bool(row["required"]),
                passed=bool(row["passed"]),
                score=row["score"],
                evidence=row["evidence"],
                phase=row["phase"],
            )
            for row in rows
        ]

    def _children(self, table: str, episode_id: int, order: str) -> list[sqlite3.Row]:
        doing = f"reading the {table} of episode {episode_id}"
        with self._op(doing) as conn:
            found = conn.execute("SELECT 1 FROM episodes WHERE id = ?", (episode_id,)).fetchone()
            if found is None:
                raise StoreError(f"no episode {episode_id} in {self.path}")
            return self._rows(
                doing, f"SELECT * FROM {table} WHERE episode_id = ? ORDER BY {order}", [episode_id]
            )

    def integrity_ok(self) -> bool:
        """True when SQLite's integrity check and foreign key check both find nothing."""
        with self._op("checking integrity") as conn:
            result = conn.execute("PRAGMA integrity_check").fetchall()
            foreign = conn.execute("PRAGMA foreign_key_check").fetchall()
        return result == [("ok",)] and not foreign

    def applied_migrations(self) -> list[str]:
        """Names of the schema migrations this database has applied, in order."""
        with self._op("reading the applied migrations") as conn:
            return applied_migrations(Database(conn, execute_plugins=False))


def _batch(row: sqlite3.Row) -> BatchRecord:
    return BatchRecord(
        id=row["id"], created_at=_parse_time(row["created_at"]), suite=json.loads(row["suite"])
    )


def _episode(row: sqlite3.Row) -> EpisodeRecord:
    return EpisodeRecord(
        id=row["id"],
        task_id=row["task_id"],
        task_path=row["task_path"],
        task_sha256=row["task_sha256"],
        app=row["app"],
        level=row["level"],
        interactive=bool(row["interactive"]),
        agent=row["agent"],
        user_mode=cast(UserMode, row["user_mode"]),
        backend=row["backend"],
        status=cast(EpisodeStatus, row["status"]),
        end_reason=cast(EndReason | None, row["end_reason"]),
        error=row["error"],
        passed=_opt_bool(row["passed"]),
        score=row["score"],
        steps=row["steps"],
        started_at=_parse_time(row["started_at"]),
        ended_at=None if row["ended_at"] is None else _parse_time(row["ended_at"]),
        pid=row["pid"],
        hostname=row["hostname"],
        config=json.loads(row["config"]),
        batch_id=row["batch_id"],
        final_frame=row["final_frame"],
        batch_agent=row["batch_agent"],
        batch_repeat=row["batch_repeat"],
        batch_attempt=row["batch_attempt"],
    )
