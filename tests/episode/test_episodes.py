"""Whole episodes on a real local desktop with the real GIMP.

An interactive GIMP task's phases and messages as recorded, and the crash path:
SIGKILL mid-episode leaves a sound database with the steps recorded so far and no
desktop process behind. (The library sample's proofs: tests/tasks/test_library_sample.py.)
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from app.agents.factory import make_agent
from app.core.procfs import all_pids, process_environ
from app.desktops.local.desktop import LocalDesktop
from app.desktops.local.reaper import OWNER_PID_ENV
from app.episode.events import EpisodeResult
from app.episode.runner import EpisodeRunner
from app.store import Store
from app.tasks.loader import load_task
from app.users.simulated import SimulatedUser
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
GIMP_TASKS = sorted((ROOT / "tasks" / "gimp").glob("*.yaml"))

pytestmark = pytest.mark.desktop


async def run(task_path: Path, agent_spec: str, store: Store) -> EpisodeResult:
    task = load_task(task_path)
    async with LocalDesktop() as desktop:
        runner = EpisodeRunner(
            task, desktop, make_agent(agent_spec, task), SimulatedUser(), store, backend="local"
        )
        return await runner.run()


async def test_interactive_task_records_phases_and_messages(tmp_path: Path) -> None:
    task_path = ROOT / "tasks" / "gimp" / "gimp-badge-interactive.yaml"
    with Store(tmp_path / "db.sqlite") as store:
        result = await run(task_path, "reference", store)
        assert result.passed, result.error
        phases = store.phases(result.episode_id)
        assert [p.status for p in phases] == ["delivered"] * 3
        assert phases[0].delivered_step == 3  # step_count: 3
        messages = store.messages(result.episode_id)
        kinds = [(m.role, m.kind) for m in messages]
        assert kinds == [
            ("user", "instruction"),
            ("user", "interruption"),
            ("agent", "question"),
            ("user", "answer"),
            ("agent", "done"),
            ("user", "feedback"),
            ("agent", "done"),
        ]
        # The answer arrived at the ASK's step; the feedback at the first DONE's.
        question, answer = messages[2], messages[3]
        assert question.step == answer.step
        steps = store.steps(result.episode_id)
        ask_step = next(s for s in steps if s.kind == "ask")
        assert answer.step == ask_step.idx + 1


def _runner_pids_left(owner_pid: int) -> list[int]:
    return [pid for pid in all_pids() if process_environ(pid).get(OWNER_PID_ENV) == str(owner_pid)]


def _steps_in(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db) as conn:
            row = conn.execute("SELECT count(*) FROM steps").fetchone()
            return int(row[0])
    except sqlite3.OperationalError:
        return 0


def test_sigkill_mid_episode_loses_nothing_recorded(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    task = ROOT / "tasks" / "gimp" / "gimp-badge-interactive.yaml"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "app.cli",
            "--db",
            str(db),
            "run",
            str(task),
            "--agent",
            "reference",
            "--json",
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: _steps_in(db) >= 4 or proc.poll() is not None, "4 recorded steps", 180)
        assert proc.poll() is None, "the run ended before it could be killed"
        assert _runner_pids_left(proc.pid), "the desktop's processes carry the owner marker"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    wait_until(lambda: not _runner_pids_left(proc.pid), "the desktop processes to be reaped", 30)
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    with Store(db) as store:  # opening recovers the interrupted episode
        (episode,) = store.list_episodes()
        assert episode.status == "error"
        assert episode.error is not None and "interrupted" in episode.error
        steps = store.steps(episode.id)
        assert len(steps) >= 4
        assert [s.idx for s in steps] == list(range(len(steps)))


def test_sigterm_records_aborted_episode_and_closes_desktop(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    task = ROOT / "tasks" / "gimp" / "gimp-badge-interactive.yaml"
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "--db", str(db), "run", str(task)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: _steps_in(db) >= 2 or proc.poll() is not None, "2 steps", 180)
        assert proc.poll() is None, "the run ended before it could be stopped"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
    # Closed by DeskLoop itself, not only by the watchdog.
    assert not _runner_pids_left(proc.pid)
    with Store(db) as store:
        (episode,) = store.list_episodes()
        assert episode.status == "error" and episode.end_reason == "aborted"
        assert episode.error is not None and "aborted" in episode.error
        assert len(store.steps(episode.id)) >= 2


def test_cli_run_json_last_line(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "app.cli",
            "--db",
            str(db),
            "run",
            "gimp-flip-export",
            "--agent",
            "null",
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 1, out.stderr  # the task did not pass
    payload = json.loads(out.stdout.strip().splitlines()[-1])
    assert payload["task"] == "gimp-flip-export"
    assert payload["status"] == "finished"
    assert payload["passed"] is False and payload["score"] == 0.0
    assert isinstance(payload["episode"], int)
