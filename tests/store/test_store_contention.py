"""The store under contention: another process holding the database's write lock
(a second runner, someone's `sqlite3` shell mid-transaction) never aborts an episode.

The other process is real: `LockHolder` runs a Python child that takes `BEGIN
EXCLUSIVE` when the test says so and commits when told, through its stdin; the test
waits on what the store reports, never on a guess of how long a wait takes.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import app.store.base as store_base
from app.agents.base import Observation
from app.core.actions import Action, Done, Move
from app.core.errors import StoreError
from app.episode.runner import EpisodeRunner
from app.store import LockWait, Store
from app.tasks.loader import load_task
from app.users.simulated import SimulatedUser
from tests.still_desktop import QuietAgent, StillDesktop
from tests.store.helpers import new_episode

REPO = Path(__file__).resolve().parents[2]
# Past both of the old failures: a write gave up after 5 s, its episode's end after 10.
LONG_WAIT = 11.0

HOLDER = """\
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
for line in sys.stdin:
    if line.strip() == "lock":
        conn.execute("BEGIN EXCLUSIVE")
    elif line.strip() == "release":
        conn.execute("COMMIT")
    print(line.strip() + "ed", flush=True)
"""


class LockHolder:
    """Another process that takes and releases the database's write lock on request."""

    def __init__(self, db: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(db)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.pid = self.proc.pid

    def _say(self, command: str) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline().strip() == command + "ed"

    def lock(self) -> None:
        """Returns once the other process holds the lock."""
        self._say("lock")

    def release(self) -> None:
        self._say("release")

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=10)


@contextmanager
def lock_holder(db: Path) -> Iterator[LockHolder]:
    holder = LockHolder(db)
    try:
        yield holder
    finally:
        if holder.proc.poll() is None:
            holder.proc.kill()
        holder.proc.wait()


class Reports:
    """The store's lock-wait reports, and a way to wait for one that waited long enough."""

    def __init__(self) -> None:
        self.seen: list[LockWait] = []
        self._changed = threading.Condition()

    def __call__(self, wait: LockWait) -> None:
        with self._changed:
            self.seen.append(wait)
            self._changed.notify_all()

    def wait_for(self, waited: float, timeout: float = 60.0) -> LockWait:
        with self._changed:
            found = self._changed.wait_for(
                lambda: any(w.waited >= waited for w in self.seen), timeout
            )
            assert found, f"no report of a wait of {waited} s; saw {self.seen}"
            return self.seen[-1]


@pytest.fixture
def often(monkeypatch: pytest.MonkeyPatch) -> None:
    """Report every second after the first report (30 s in use), so a test can see
    the wait pass LONG_WAIT."""
    monkeypatch.setattr(store_base, "LOCK_REPORT_EVERY_SECONDS", 1.0)


def test_a_write_waits_for_the_lock_as_long_as_it_is_held(tmp_path: Path, often: None) -> None:
    db = tmp_path / "lab.db"
    reports = Reports()
    with Store(db, on_lock_wait=reports) as store, lock_holder(db) as holder:
        episode = new_episode(store)
        holder.lock()
        written: list[int] = []
        writer = threading.Thread(
            target=lambda: written.append(
                store.record_message(
                    episode, role="agent", kind="question", text="kept", step=0, source="agent"
                )
            )
        )
        writer.start()
        report = reports.wait_for(LONG_WAIT)
        assert writer.is_alive() and not written
        # The report names the database, the write and the process holding the lock.
        assert report.path == str(db) and report.holders == (holder.pid,)
        assert report.doing == f"recording a agent question message in episode {episode}"
        assert str(db) in report.describe() and f"pid {holder.pid}" in report.describe()
        holder.release()
        writer.join(timeout=10)
        assert not writer.is_alive()
        assert [m.id for m in store.messages(episode)] == written
        holder.close()


def test_a_stopping_process_gives_up_its_waits(tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    with Store(db, on_lock_wait=lambda wait: None) as store, lock_holder(db) as holder:
        episode = new_episode(store)
        holder.lock()
        store.stop_waiting(0.5)
        start = time.monotonic()
        with pytest.raises(StoreError, match=f"pid {holder.pid} holds: this process is stopping"):
            store.finish_episode(episode, status="error", end_reason="aborted", steps=0)
        assert time.monotonic() - start < 3.0  # not SQLite's 5 s busy timeout
        assert store.gave_up
        # A later deadline does not lift an earlier one.
        store.stop_waiting(60.0)
        with pytest.raises(StoreError, match="stopping"):
            new_episode(store)
        holder.release()
        assert store.get_episode(episode).status == "running"
        holder.close()


class LockingAgent(QuietAgent):
    """Moves the pointer `moves` times, then says DONE; before its answer at step
    `lock_at`, another process takes the store's write lock."""

    name = "locking"

    def __init__(self, holder: LockHolder, moves: int, lock_at: int) -> None:
        self.holder, self.moves, self.lock_at = holder, moves, lock_at
        self.steps = 0

    async def decide(self, observation: Observation) -> Action:
        if self.steps == self.lock_at:
            await asyncio.to_thread(self.holder.lock)
        self.steps += 1
        return Move(10, 10) if self.steps <= self.moves else Done()


TASK = """\
id: contended
app: gimp
level: L1
title: Move and say DONE
instruction: Move the pointer, then say DONE.
budget: {steps: 10, seconds: 8}
phases:
  - message: Keep going.
    trigger: {step_count: 3}
evaluate:
  all:
    - {check: file_exists, path: ~/never.txt}
"""


async def test_an_episode_outlasts_another_process_holding_the_lock(
    tmp_path: Path, often: None
) -> None:
    task_file = tmp_path / "tasks" / "gimp" / "contended.yaml"
    task_file.parent.mkdir(parents=True)
    task_file.write_text(TASK)
    task = load_task(task_file)
    db = tmp_path / "lab.db"
    reports = Reports()
    with Store(db, on_lock_wait=reports) as store, lock_holder(db) as holder:
        agent = LockingAgent(holder, moves=4, lock_at=2)
        runner = EpisodeRunner(task, StillDesktop(), agent, SimulatedUser(), store, backend="local")
        episode = asyncio.ensure_future(runner.run())
        report = await asyncio.to_thread(reports.wait_for, LONG_WAIT)
        assert report.doing == f"recording step 2 of episode {runner.episode_id}"
        assert not episode.done()
        await asyncio.to_thread(holder.release)
        result = await episode
        holder.close()
        # The wait (longer than the task's 8 s budget) was the store's, not the agent's.
        assert (result.status, result.end_reason, result.error) == ("finished", "done", None)
        assert result.steps == 5 and result.passed is False
        record = store.get_episode(result.episode_id)
        assert record.status == "finished" and record.score == 0.0
        assert [s.idx for s in store.steps(result.episode_id)] == [0, 1, 2, 3, 4]
        assert [s.kind for s in store.steps(result.episode_id)][-1] == "done"
        assert [(m.kind, m.step) for m in store.messages(result.episode_id)] == [
            ("instruction", 0),
            ("interruption", 3),
            ("done", 5),
        ]
        assert [p.status for p in store.phases(result.episode_id)] == ["delivered"]


# -- a real `deskloop run` ---------------------------------------------------------------

RUN_TASK = """\
id: contended-run
app: gimp
level: L1
title: Move the pointer about
instruction: Move the pointer, then say DONE.
budget: {steps: 60, seconds: 300}
evaluate:
  all:
    - {check: file_exists, path: ~/never.txt}
"""
MOVES = 40


class Stderr:
    """A child's stderr lines as they come, and a way to wait for one."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._proc = proc
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self._proc.stderr is not None
        for line in self._proc.stderr:
            with self._changed:
                self.lines.append(line)
                self._changed.notify_all()

    def wait_for(self, text: str, timeout: float = 60.0) -> str:
        with self._changed:
            found = self._changed.wait_for(
                lambda: any(text in line for line in self.lines), timeout
            )
            assert found, f"no stderr line with {text!r}:\n{''.join(self.lines)}"
            return next(line for line in self.lines if text in line)


def stdout_of(proc: subprocess.Popen[str], timeout: float) -> str:
    """The child's stdout once it exits. Not `communicate()`: that reads stderr too,
    racing the `Stderr` reader for the last lines."""
    proc.wait(timeout=timeout)
    assert proc.stdout is not None
    return proc.stdout.read()


def contended_files(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The task, the scripted agent's MOVES moves and then done, and the database path."""
    task = tmp_path / "tasks" / "gimp" / "contended-run.yaml"
    task.parent.mkdir(parents=True)
    task.write_text(RUN_TASK)
    script = tmp_path / "moves.yaml"
    script.write_text("".join(f"- move: [{10 + i}, 10]\n" for i in range(MOVES)) + "- done\n")
    return task, script, tmp_path / "lab.db"


def deskloop(db: Path, *args: str) -> subprocess.Popen[str]:
    """`deskloop --db <db> <args>` as a child process, its output piped."""
    return subprocess.Popen(
        [sys.executable, "-m", "app.cli", "--db", str(db), *args],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def start_run(tmp_path: Path) -> tuple[subprocess.Popen[str], Path]:
    task, script, db = contended_files(tmp_path)
    return deskloop(db, "run", str(task), "--agent", f"scripted:{script}", "--json"), db


def wait_for_steps(db: Path, proc: subprocess.Popen[str], count: int) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if db.exists():
            with Store(db) as store:
                episodes = store.list_episodes()
                if episodes and len(store.steps(episodes[0].id)) >= count:
                    return
        time.sleep(0.05)
    raise AssertionError(f"the run did not record {count} steps (exit {proc.poll()})")


@contextmanager
def killed_if_running(proc: subprocess.Popen[str]) -> Iterator[None]:
    """Kills the child on the way out if it still runs, so a failed test leaves none."""
    try:
        yield
    finally:
        if proc.poll() is None:
            proc.kill()


@contextmanager
def locked_once_stepping(
    db: Path, proc: subprocess.Popen[str], stderr: Stderr
) -> Iterator[tuple[LockHolder, str]]:
    """Once the child has recorded 2 steps, another process holds the write lock; it is
    released when the block ends. Yields the holder and the child's line reporting it."""
    wait_for_steps(db, proc, 2)
    with lock_holder(db) as holder:
        holder.lock()
        yield holder, stderr.wait_for("holds the database's write lock")
        holder.release()
        holder.close()


@pytest.mark.desktop
def test_a_run_outlasts_a_lock_and_prints_its_json_line(tmp_path: Path) -> None:
    proc, db = start_run(tmp_path)
    stderr = Stderr(proc)
    with killed_if_running(proc):
        with locked_once_stepping(db, proc, stderr) as (holder, line):
            assert str(db) in line and f"pid {holder.pid}" in line
            assert proc.poll() is None
        out = stdout_of(proc, timeout=120)
    assert proc.returncode == 1, "".join(stderr.lines)  # finished, not passed
    payload = json.loads(out.strip().splitlines()[-1])
    assert (payload["status"], payload["end_reason"], payload["error"]) == (
        "finished", "done", None,
    )  # fmt: skip
    assert payload["steps"] == MOVES + 1
    # Progress goes to stderr with --json too.
    assert any("[contended-run] step 0: " in line for line in stderr.lines)
    with Store(db) as store:
        (episode,) = store.list_episodes()
        assert episode.status == "finished" and episode.steps == MOVES + 1
        assert [s.idx for s in store.steps(episode.id)] == list(range(MOVES + 1))


@pytest.mark.desktop
def test_a_run_stopped_while_locked_prints_its_line_and_is_recovered(tmp_path: Path) -> None:
    proc, db = start_run(tmp_path)
    stderr = Stderr(proc)
    with killed_if_running(proc), locked_once_stepping(db, proc, stderr):
        # The first signal gives the end 10 s to be written; the second stops now.
        proc.send_signal(signal.SIGTERM)
        proc.send_signal(signal.SIGTERM)
        out = stdout_of(proc, timeout=30)
        assert proc.returncode == 130, "".join(stderr.lines)
        payload = json.loads(out.strip().splitlines()[-1])
        # The end was not written: the database still says running, and why.
        assert payload["status"] == "running" and payload["episode"] is not None
        assert "marked interrupted" in payload["error"]
        stderr.wait_for("interrupted before the episode's end could be recorded")
    with Store(db) as store:  # the runner has exited: opening recovers its episode
        episode = store.get_episode(payload["episode"])
        assert (episode.status, episode.error_kind) == ("error", "interrupted")
        assert len(store.steps(episode.id)) >= 2


@pytest.mark.desktop
def test_a_batch_keeps_its_slots_through_another_process_holding_the_lock(
    tmp_path: Path,
) -> None:
    # A real `batch run` of two repeats on the local backend; another process takes the
    # write lock after the first steps and holds it past both old failure points (5 s,
    # 10 s). Nothing is aborted or retried: each slot ends with one finished episode.
    task, script, db = contended_files(tmp_path)
    proc = deskloop(
        db, "batch", "run", "--task", str(task), "--agent", f"scripted:{script}",
        "--repeats", "2", "--batch-id", "contended",
    )  # fmt: skip
    stderr = Stderr(proc)
    with killed_if_running(proc):
        with locked_once_stepping(db, proc, stderr):
            waited = stderr.wait_for("has waited")
            assert proc.poll() is None, waited
            # Past the old 10 s abort, still waiting; then the lock goes.
            with pytest.raises(subprocess.TimeoutExpired):
                proc.wait(timeout=12)
        stdout_of(proc, timeout=300)
    assert proc.returncode in (0, 1), "".join(stderr.lines)  # finished (the task fails)
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT batch_repeat, batch_attempt, status, error FROM episodes"
            " WHERE batch_id = 'contended' ORDER BY batch_repeat, batch_attempt"
        ).fetchall()
    assert rows == [(0, 0, "finished", None), (1, 0, "finished", None)], rows
