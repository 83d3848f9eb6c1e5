"""Whole episodes on a real local desktop with the real GIMP.

Each shipped GIMP task: its reference solution (a GUI demonstration replayed over
VNC) scores 1 and the null agent scores 0; the store holds what happened. Also
the crash path: SIGKILL mid-episode leaves a sound database with the steps
recorded so far and no desktop process behind.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
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
from tests.episode_story import episode_story
from tests.library_sample import sample_paths

ROOT = Path(__file__).resolve().parent.parent
GIMP_TASKS = sorted((ROOT / "tasks" / "gimp").glob("*.yaml"))

pytestmark = pytest.mark.desktop


async def run(task_path: Path, agent_spec: str, store: Store) -> EpisodeResult:
    task = load_task(task_path)
    async with LocalDesktop() as desktop:
        runner = EpisodeRunner(
            task, desktop, make_agent(agent_spec, task), SimulatedUser(), store, backend="local"
        )
        return await runner.run()


@pytest.mark.parametrize("task_path", sample_paths("gimp"), ids=lambda p: p.stem)
async def test_reference_solution_scores_one(task_path: Path, tmp_path: Path) -> None:
    with Store(tmp_path / "db.sqlite") as store:
        result = await run(task_path, "reference", store)
        story = episode_story(store, result)
        assert result.status == "finished", story
        assert result.end_reason == "done", story
        assert result.passed is True and result.score == pytest.approx(1.0), story
        stored = store.get_episode(result.episode_id)
        assert stored.passed is True and stored.steps == result.steps
        steps = store.steps(result.episode_id)
        assert [s.idx for s in steps] == list(range(result.steps))
        assert steps[-1].kind == "done"
        # Each step references a PNG frame that exists on disk.
        for step in steps:
            assert step.frame is not None
            assert store.frame_path(step.frame).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert all(c.passed for c in store.checks(result.episode_id))
        # An honest reference works through the GUI: no integrity flag (issue 17).
        flags, checked = store.flags(result.episode_id)
        assert flags == [] and checked, story
        assert store.get_archive(result.episode_id) is not None


@pytest.mark.parametrize("task_path", sample_paths("gimp"), ids=lambda p: p.stem)
async def test_null_agent_scores_zero(task_path: Path, tmp_path: Path) -> None:
    with Store(tmp_path / "db.sqlite") as store:
        result = await run(task_path, "null", store)
        assert result.status == "finished" and result.end_reason == "done"
        assert result.passed is False and result.score == pytest.approx(0.0)
        # One DONE, plus one more for each phase a DONE delivers (agent_done / any).
        assert result.steps <= 1 + len(load_task(task_path).phases)


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


def _wait_for(condition: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


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
        _wait_for(lambda: _steps_in(db) >= 4 or proc.poll() is not None, 180, "4 recorded steps")
        assert proc.poll() is None, "the run ended before it could be killed"
        assert _runner_pids_left(proc.pid), "the desktop's processes carry the owner marker"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    _wait_for(lambda: not _runner_pids_left(proc.pid), 30, "the desktop processes to be reaped")
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
        _wait_for(lambda: _steps_in(db) >= 2 or proc.poll() is not None, 180, "2 steps")
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
