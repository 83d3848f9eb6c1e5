"""Batch runs: suites, slots, retries on a fresh desktop, time limits, and a real
GIMP batch killed with SIGKILL halfway and resumed to the same final table."""

from __future__ import annotations

import asyncio
import io
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Literal

import pytest

from app.agents.adapters.deskloop import DeskLoopConfig
from app.agents.base import Agent, Observation
from app.batch import (
    BatchOptions,
    DesktopSpec,
    load_suite,
    resolve_tasks,
    resume_batch,
    start_batch,
)
from app.batch.progress import Progress
from app.batch.retry import TimeLimitExceeded, is_retried
from app.core.actions import Action, Ask, Done, Type
from app.core.errors import (
    ActionError,
    AgentError,
    AgentRefused,
    AgentUnavailable,
    DeskLoopError,
    DesktopError,
    EndpointRefused,
    EndpointUnavailable,
    FileTooLarge,
    GuestError,
    MalformedAction,
    StoreError,
    TaskError,
    VNCError,
    error_kind,
)
from app.core.vocabulary import ERROR_KINDS, ErrorKind
from app.desktops.base import Desktop
from app.episode.judge import JudgeConfig
from app.episode.launch import make_spec_desktop
from app.metrics.report import write_jsonl
from app.metrics.slots import Slot, batch_table
from app.metrics.summary import summarize
from app.store import Store
from app.tasks.loader import load_task
from app.tasks.model import Task
from app.users.llm import UserError, UserUnavailable
from tests.still_desktop import QuietAgent
from tests.xterm_task import write_xterm_task

REPO = Path(__file__).resolve().parents[2]
DESKLOOP = REPO / ".venv" / "bin" / "deskloop"


# -- suites and slots (no desktop) ----------------------------------------------------


def test_suite_file_and_task_references(tmp_path: Path) -> None:
    suite_file = tmp_path / "suite.yaml"
    suite_file.write_text(
        f"tasks: [gimp-flip-export, '{REPO}/tasks/gimp/gimp-poster-re*.yaml']\n"
        "agents: [reference, null]\nrepeats: 2\n"
    )
    suite = load_suite(suite_file)
    assert suite.agents == ["reference", "null"] and suite.repeats == 2
    tasks = resolve_tasks(suite.tasks, REPO / "tasks")
    assert [t.id for t in tasks] == ["gimp-flip-export", "gimp-poster-resize"]
    folder = resolve_tasks([str(REPO / "tasks" / "gimp"), "gimp-flip-export"], REPO / "tasks")
    assert len({t.id for t in folder}) == len(folder) >= 3  # no duplicates

    bad = tmp_path / "bad.yaml"
    bad.write_text("tasks: [a]\nagents: [null]\nrepeat: 2\n")
    with pytest.raises(TaskError, match=r"unknown key.*repeat"):
        load_suite(bad)
    with pytest.raises(TaskError, match="did you mean gimp-flip-export"):
        resolve_tasks(["gimp-flip-exprot"], REPO / "tasks")
    with pytest.raises(TaskError, match="matches no task"):
        resolve_tasks([str(tmp_path / "none" / "*.yaml")], REPO / "tasks")


# Every error kind, and whether a try that ended in it is retried on a fresh desktop.
RETRIED: dict[ErrorKind, bool] = {
    "desktop": True,
    "vnc": True,
    "guest": True,
    "endpoint": True,
    "agent_unavailable": True,
    "user_unavailable": True,
    "time_limit": True,
    "interrupted": True,
    "agent": False,
    "action": False,
    "task": False,
    "user": False,
    "endpoint_refused": False,
    "check": False,
    "image": False,
    "store": False,
    "other": False,
    "aborted": False,
    "internal": False,
}


def test_every_error_kind_is_decided() -> None:
    assert set(RETRIED) == set(ERROR_KINDS)


@pytest.mark.parametrize("kind", ERROR_KINDS)
def test_each_error_kind_is_retried_or_not(kind: ErrorKind) -> None:
    assert is_retried("error", kind) is RETRIED[kind]
    # Only a try that ended in an error is retried.
    assert not is_retried("finished", kind)


def test_an_error_of_unknown_kind_is_not_retried() -> None:
    # An episode recorded before kinds were, in words migration 0005 could not place.
    assert not is_retried("error", None)


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (DesktopError("did not start"), "desktop"),
        (VNCError("no frame"), "vnc"),
        (GuestError("timed out"), "guest"),
        (FileTooLarge("too big", size=9, limit=8), "guest"),
        (EndpointUnavailable("HTTP 503"), "endpoint"),
        (AgentUnavailable("HTTP 503"), "agent_unavailable"),
        (UserUnavailable("HTTP 503"), "user_unavailable"),
        (TimeLimitExceeded(30), "time_limit"),
        (AgentError("scripted agent file x not found"), "agent"),
        (MalformedAction("no tool call"), "agent"),
        (ActionError("unknown key"), "action"),
        (AgentRefused("HTTP 401"), "endpoint_refused"),
        (EndpointRefused("HTTP 404"), "endpoint_refused"),
        (UserError("no text"), "user"),
        (TaskError("bad"), "task"),
        (StoreError("disk I/O error"), "store"),
        (DeskLoopError("unknown user"), "other"),
        (KeyError("frame"), "internal"),  # not raised on purpose: a bug
    ],
)
def test_each_error_says_its_kind_and_whether_it_is_infrastructure(
    error: BaseException, kind: ErrorKind
) -> None:
    assert error_kind(error) == kind
    if isinstance(error, DeskLoopError):
        assert error.infrastructure is RETRIED[kind]
        assert error.of_the_desktop is (kind in ("desktop", "vnc", "guest"))
        assert error.agents_own is (kind in ("agent", "action"))


def test_the_time_limit_error_reads_as_before() -> None:
    assert str(TimeLimitExceeded(30)) == "batch time limit of 30 s exceeded"
    assert str(TimeLimitExceeded(2.5)) == "batch time limit of 2.5 s exceeded"


def test_progress_line_counts_and_eta() -> None:
    stream = io.StringIO()
    progress = Progress(total=4, already=1, stream=stream)
    progress.finished("finished", True)
    progress.finished("error", None)
    progress.retry()
    line = progress.line()
    assert "3/4 done" in line and "1 passed" in line and "1 errored" in line
    assert "1 retried" in line and "ETA" in line and "ETA ?" not in line
    assert stream.getvalue().count("\n") == 3  # not a terminal: a line per change
    assert "waiting for a desktop" not in line  # said only while a try waits
    progress.waiting = 2
    assert "0 running · 2 waiting for a desktop · ETA" in progress.line()


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_on_a_terminal_is_a_bar_with_the_log_above_it() -> None:
    stream, stderr = _Terminal(), sys.stderr
    progress = Progress(total=2, stream=stream)
    progress.show()
    print("host qemu:///system works again", file=sys.stderr)  # a log line meanwhile
    progress.finished("finished", True)
    progress.close()
    out = stream.getvalue()
    # rich's bar, not the plain line; the log line went through the bar's console.
    assert "━" in out and "[#" not in out and "1/2 done · 1 passed" in out
    assert "host qemu:///system works again" in out
    assert sys.stderr is stderr  # the bar gave stderr back


def _task(tmp_path: Path) -> Task:
    return load_task(write_xterm_task(tmp_path))


def test_slots_resume_and_the_one_finished_episode_rule(tmp_path: Path) -> None:
    task = _task(tmp_path)
    store = Store.memory()
    runner = start_batch(store, [task], ["null"], 2, BatchOptions(), batch_id="batch-one")
    assert [slot for slot, _ in runner.pending()] == [
        Slot("xterm-proof", "null", 0),
        Slot("xterm-proof", "null", 1),
    ]

    def episode(repeat: int, attempt: int, status: Literal["finished", "error"]) -> int:
        eid = store.start_episode(
            task_id=task.id,
            task_path=str(task.source),
            task_sha256=task.sha256,
            app="gimp",
            level="L1",
            interactive=False,
            agent="null",
            user_mode="simulated",
            backend="local",
            batch_id="batch-one",
        )
        store.tag_batch_slot(eid, agent="null", repeat=repeat, attempt=attempt)
        store.finish_episode(
            eid,
            status=status,
            end_reason="done" if status == "finished" else "error",
            steps=1,
        )
        return eid

    episode(0, 0, "error")
    first = episode(0, 1, "finished")
    pending = runner.pending()
    assert pending == [(Slot("xterm-proof", "null", 1), 0)]
    rows = batch_table(store, "batch-one")
    assert rows[0].episode is not None and rows[0].episode.id == first and rows[0].attempts == 2
    assert rows[1].status == "pending"
    # A second finished episode for a slot is refused by the database itself.
    with pytest.raises(StoreError, match="UNIQUE"):
        episode(0, 2, "finished")
    with pytest.raises(StoreError, match="already exists"):
        start_batch(store, [task], ["null"], 1, BatchOptions(), batch_id="batch-one")
    with pytest.raises(StoreError, match="did you mean batch-one"):
        resume_batch(store, "batch-onw")
    with pytest.raises(DeskLoopError, match="unknown agent"):
        start_batch(store, [task], ["nobody"], 1, BatchOptions())
    resumed = resume_batch(store, "batch-one", concurrency=3)
    assert resumed.options.concurrency == 3 and resumed.pending() == pending
    # A task edited since the batch began would make results incomparable.
    source = Path(task.source)
    source.write_text(source.read_text().replace("proof.txt", "p.txt"))
    with pytest.raises(TaskError, match="changed since batch batch-one"):
        resume_batch(store, "batch-one")
    store.close()


def test_options_round_trip_without_the_key() -> None:
    options = BatchOptions(
        backend="local",
        retries=1,
        openai=DeskLoopConfig(model="m", base_url="http://x/v1"),
        judge=JudgeConfig(model="judge-m", base_url="http://j/v1", deadline=30),
    )
    data = options.to_json()
    again = BatchOptions.from_json(data, concurrency=2)
    assert again.openai == options.openai and again.retries == 1 and again.concurrency == 2
    # A resumed batch's episodes ask the judge it was started with.
    assert again.judge == options.judge
    assert "key" not in str(data).replace("api_key_env", "")


# -- retries and time limits on a real desktop ----------------------------------------


class _NeverAgent(QuietAgent):
    name = "never"

    async def decide(self, observation: Observation) -> Action:
        await asyncio.Event().wait()  # never answers: only the time limit ends it
        raise AssertionError("unreachable")


class _FlakyAgent(QuietAgent):
    """Attempt 0: the endpoint is down. Attempt 1: hangs. Attempt 2: does the task."""

    name = "flaky"

    def __init__(self, attempt: int) -> None:
        self.attempt = attempt
        self.turn = 0

    async def decide(self, observation: Observation) -> Action:
        if self.attempt == 0:
            raise AgentUnavailable("model endpoint http://127.0.0.1:9/v1 failed after 4 retries")
        if self.attempt == 1:
            await asyncio.Event().wait()
        self.turn += 1
        return Type("touch ~/proof.txt\n") if self.turn == 1 else Done()


@pytest.mark.desktop
async def test_infrastructure_errors_retry_on_a_fresh_desktop(tmp_path: Path) -> None:
    task = _task(tmp_path)
    store = Store(tmp_path / "db.sqlite")
    made: list[Desktop] = []
    built: list[int] = []

    def agents(spec: str, task: Task, openai: DeskLoopConfig | None) -> Agent:
        built.append(1)
        # The first call is start_batch's check that the spec builds.
        return _FlakyAgent(len(built) - 2)

    def desktops(spec: DesktopSpec) -> Desktop:
        desktop = make_spec_desktop(spec)
        made.append(desktop)
        return desktop

    runner = start_batch(
        store,
        [task],
        ["flaky"],
        1,
        BatchOptions(retries=2, time_limit=25),
        batch_id="retry",
        agent_factory=agents,
        desktop_factory=desktops,
        progress_stream=io.StringIO(),
    )
    (row,) = await runner.run()
    assert row.status == "finished" and row.episode is not None and row.episode.passed
    assert row.attempts == 3 and row.episode.batch_attempt == 2
    tries = sorted(store.list_episodes(batch_id="retry", limit=None), key=lambda r: r.id)
    assert [t.status for t in tries] == ["error", "error", "finished"]
    assert tries[0].error is not None and tries[0].error.startswith("Agent unavailable")
    assert tries[0].error_kind == "agent_unavailable"
    assert tries[1].error == "batch time limit of 25 s exceeded during the episode"
    assert tries[1].error_kind == "time_limit"
    assert tries[1].end_reason == "error"
    assert len(made) == 3 and len({id(d) for d in made}) == 3  # a fresh desktop each retry
    assert all(d.info().state != "running" for d in made)  # every desktop closed
    store.close()


# -- the real thing: GIMP tasks, SIGKILL halfway, resume ------------------------------


def _count(db: Path, batch: str, status: str) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
        row = conn.execute(
            "SELECT COUNT(*) FROM episodes WHERE batch_id = ? AND status = ?", (batch, status)
        ).fetchone()
    return int(row[0])


def _wait_for(condition: Any, timeout: float, what: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the batch exited (rc {proc.returncode}) before {what}")
        try:
            if condition():
                return
        except sqlite3.OperationalError:
            pass  # the database is not created yet
        time.sleep(0.2)  # polling a condition with a bounded deadline
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.desktop
def test_gimp_batch_killed_halfway_resumes_to_the_same_table(tmp_path: Path) -> None:
    db = tmp_path / "sessions" / "deskloop.db"
    batch = "gimp-kill"
    argv = [
        str(DESKLOOP), "--db", str(db), "batch", "run",
        "--task", "gimp-flip-export", "--task", "gimp-poster-resize",
        "--agent", "reference", "--agent", "null",
        "--repeats", "2", "--concurrency", "2", "--batch-id", batch,
    ]  # fmt: skip
    log = (tmp_path / "first.log").open("wb")
    proc = subprocess.Popen(argv, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_for(
            lambda: _count(db, batch, "finished") >= 3 and _count(db, batch, "running") >= 1,
            600,
            "three finished episodes and one running",
            proc,
        )
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
    with sqlite3.connect(db) as conn:
        before = conn.execute(
            "SELECT id, task_id, batch_agent, batch_repeat, score, ended_at FROM episodes"
            " WHERE batch_id = ? AND status = 'finished' ORDER BY id",
            (batch,),
        ).fetchall()
    assert 3 <= len(before) < 8

    resumed = subprocess.run(
        [str(DESKLOOP), "--db", str(db), "batch", "run", "--resume", batch, "--concurrency", "2"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "episode(s) to run" in resumed.stderr and "done" in resumed.stderr

    with Store(db) as store:
        rows = batch_table(store, batch)
        assert len(rows) == 8 and all(row.status == "finished" for row in rows)
        for row in rows:
            assert row.episode is not None
            expected = (True, 1.0) if row.slot.agent == "reference" else (False, 0.0)
            assert (row.episode.passed, row.episode.score) == expected, row
        # Identical across repeats.
        by_repeat = {r: [row.key()[:2] + row.key()[3:] for row in rows if row.slot.repeat == r]
                     for r in (0, 1)}  # fmt: skip
        assert by_repeat[0] == by_repeat[1]
        everything = store.list_episodes(batch_id=batch, limit=None)
        finished = [e for e in everything if e.status == "finished"]
        assert len(finished) == 8  # none lost, none duplicated
        killed = [e for e in everything if e.status == "error"]
        assert killed and all("interrupted" in (e.error or "") for e in killed)
        # The episodes finished before the kill are untouched.
        with sqlite3.connect(db) as conn:
            after = conn.execute(
                "SELECT id, task_id, batch_agent, batch_repeat, score, ended_at FROM episodes"
                " WHERE batch_id = ? AND status = 'finished' AND id <= ? ORDER BY id",
                (batch, before[-1][0]),
            ).fetchall()
        assert after == before

        report = summarize(store, batch)
        by_agent = {g.agent: g for g in report.by_agent}
        assert by_agent["reference"].success_rate == 1.0 and by_agent["reference"].episodes == 4
        assert by_agent["null"].success_rate == 0.0 and by_agent["null"].errors == 0
        jsonl = tmp_path / "export.jsonl"
        assert write_jsonl(store, jsonl, batch) == 8

    import datasets

    loaded = datasets.load_dataset(
        "json", data_files=str(jsonl), split="train", cache_dir=str(tmp_path / "hf")
    )
    assert loaded.num_rows == 8
    reference = [r for r in loaded if r["agent"] == "reference"]
    assert all(r["passed"] and r["actions"] and Path(r["final_frame"]).is_file() for r in reference)


class _AskingAgent(QuietAgent):
    """Asks one question, then does the task."""

    name = "asking"

    def __init__(self) -> None:
        self.script: list[Action] = [Ask("Which file name?"), Type("touch ~/proof.txt\n"), Done()]

    async def decide(self, observation: Observation) -> Action:
        return self.script.pop(0)


@pytest.mark.desktop
async def test_llm_user_answers_are_reused_across_repeats(tmp_path: Path) -> None:
    from tests.fake_openai import FakeEndpoint, text_reply

    task = _task(tmp_path)
    Path(task.source).with_name("xterm-proof.hidden.md").write_text("The file is proof.txt.")
    store = Store(tmp_path / "db.sqlite")
    with FakeEndpoint([text_reply("Call it proof.txt.")]) as endpoint:
        options = BatchOptions(
            user="llm", llm_user={"model": "fake-user", "base_url": endpoint.base_url}
        )
        runner = start_batch(
            store,
            [task],
            ["asking"],
            2,
            options,
            batch_id="llm",
            agent_factory=lambda spec, task, openai: _AskingAgent(),
            progress_stream=io.StringIO(),
        )
        rows = await runner.run()
    assert [row.status for row in rows] == ["finished", "finished"]
    assert len(endpoint.received) == 1  # the second repeat's answer came from the cache
    for row in rows:
        assert row.episode is not None and row.episode.passed
        answers = [m for m in store.messages(row.episode.id) if m.kind == "answer"]
        assert [(a.text, a.source) for a in answers] == [("Call it proof.txt.", "simulated")]
    assert list((tmp_path / "llm-user-cache").rglob("*.json"))
    store.close()
