"""Batch runs: a suite of tasks × agents × repeats over a pool of desktops.

A *slot* is one (task, agent spec, repeat index) of the suite. Slots are handed to
N workers, each owning one desktop of the chosen backend (made by
`app.desktops.factory.make_desktop`, so any backend plugs in) and reusing it
across episodes: the runner resets it before every episode.

Crash safety comes from the store. A batch records its suite (the `batches`
table) and every episode records its slot (`batch_agent`, `batch_repeat`,
`batch_attempt`) while it is still running. `resume` reruns exactly the slots
without a finished episode; finished episodes are never touched, and a unique
index makes a second finished episode for one slot impossible. So a batch killed
with SIGKILL and resumed ends with the same table as one that ran through.

An episode that ends in an infrastructure error (the desktop, VNC, the guest
channel, an unavailable model endpoint, the batch's time limit) is retried on a
fresh desktop, up to `retries` more times; every try stays recorded. Errors that
would repeat (a broken script, a refused request) are not retried.
"""

from __future__ import annotations

import asyncio
import glob
import json
import secrets
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import yaml

from app.agents.base import Agent
from app.agents.factory import make_agent
from app.agents.openai import OpenAIConfig
from app.desktops.base import Desktop
from app.desktops.factory import make_desktop
from app.errors import (
    AgentUnavailable,
    DeskLoopError,
    DesktopError,
    GuestError,
    StoreError,
    TaskError,
    VNCError,
)
from app.llm_user import LLMUser, LLMUserConfig, UserUnavailable
from app.runner import EpisodeResult, EpisodeRunner, RunnerEvent, RunOptions
from app.store import EpisodeRecord, Store
from app.tasks.loader import find_task, load_task, task_files
from app.tasks.model import Task
from app.users import SimulatedUser, User

INFRASTRUCTURE_TITLES = tuple(
    cls.title for cls in (DesktopError, VNCError, GuestError, AgentUnavailable, UserUnavailable)
)
# Setup and scoring come on top of the task's own time budget.
DEFAULT_TIME_MARGIN = 300.0


# -- the suite ------------------------------------------------------------------------


@dataclass(frozen=True)
class Suite:
    """What to run: task references (ids, files, folders, globs) × agents × repeats."""

    tasks: list[str]
    agents: list[str]
    repeats: int = 1

    def __post_init__(self) -> None:
        if not self.tasks:
            raise TaskError("a batch needs at least one task")
        if not self.agents:
            raise TaskError("a batch needs at least one agent")
        if self.repeats < 1:
            raise TaskError(f"repeats must be at least 1, got {self.repeats}")


def load_suite(path: Path | str) -> Suite:
    """A suite file: YAML with `tasks:` (list), `agents:` (list), `repeats:` (int)."""
    where = Path(path)
    try:
        raw = yaml.safe_load(where.read_text())
    except OSError as exc:
        raise TaskError(f"{where}: cannot read the suite: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise TaskError(f"{where}: not valid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise TaskError(f"{where}: a suite is a mapping with tasks, agents, repeats")
    unknown = set(raw) - {"tasks", "agents", "repeats"}
    if unknown:
        raise TaskError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    tasks, agents = raw.get("tasks", []), raw.get("agents", [])
    if isinstance(agents, list):
        # YAML reads a bare `null` as nothing; in an agent list it can only mean the
        # null agent.
        agents = ["null" if agent is None else agent for agent in agents]
    for name, value in (("tasks", tasks), ("agents", agents)):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise TaskError(f"{where}: {name} must be a list of strings")
    repeats = raw.get("repeats", 1)
    if isinstance(repeats, bool) or not isinstance(repeats, int):
        raise TaskError(f"{where}: repeats must be an integer, got {repeats!r}")
    # Task references in a suite file are relative to the file's folder.
    base = where.parent
    resolved = [
        str(base / ref) if not Path(ref).is_absolute() and _looks_like_path(ref) else ref
        for ref in tasks
    ]
    return Suite(resolved, agents, repeats)


def _looks_like_path(ref: str) -> bool:
    return "/" in ref or ref.endswith((".yaml", ".yml")) or any(c in ref for c in "*?[")


def resolve_tasks(refs: Sequence[str], tasks_dir: Path | str) -> list[Task]:
    """Tasks for references: a glob, a task file, a folder of tasks, or an id."""
    tasks: list[Task] = []
    seen: set[str] = set()
    for ref in refs:
        if any(c in ref for c in "*?["):
            paths = sorted(Path(p) for p in glob.glob(ref, recursive=True))
            paths = [p for p in paths if p.suffix in (".yaml", ".yml") and p.is_file()]
            if not paths:
                raise TaskError(f"task pattern {ref!r} matches no task file")
            found = [load_task(p) for p in paths]
        elif Path(ref).is_dir():
            found = [load_task(p) for p in task_files(ref)]
        else:
            found = [find_task(ref, [tasks_dir])]
        for task in found:
            if task.id not in seen:
                seen.add(task.id)
                tasks.append(task)
    return tasks


@dataclass(frozen=True)
class Slot:
    task_id: str
    agent: str
    repeat: int

    def __str__(self) -> str:
        return f"{self.task_id} × {self.agent} #{self.repeat}"


@dataclass(frozen=True)
class BatchOptions:
    backend: str = "local"
    concurrency: int = 1
    time_limit: float | None = None
    """Wall-clock seconds per episode (setup to score); None: task budget + 300 s."""
    retries: int = 2
    """Extra tries of a slot after an infrastructure error, in one run."""
    openai: OpenAIConfig | None = None
    user: str = "simulated"
    """simulated | llm (app.llm_user, configured by `llm_user`)."""
    llm_user: dict[str, Any] | None = None
    store_frames: bool = True

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise DeskLoopError(f"concurrency must be at least 1, got {self.concurrency}")
        if self.retries < 0:
            raise DeskLoopError(f"retries must be >= 0, got {self.retries}")
        if self.time_limit is not None and self.time_limit <= 0:
            raise DeskLoopError(f"time limit must be positive, got {self.time_limit}")

    def to_json(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "time_limit": self.time_limit,
            "retries": self.retries,
            "openai": None if self.openai is None else asdict(self.openai),
            "user": self.user,
            "llm_user": self.llm_user,
            "store_frames": self.store_frames,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], concurrency: int) -> BatchOptions:
        openai = data.get("openai")
        return cls(
            backend=data.get("backend", "local"),
            concurrency=concurrency,
            time_limit=data.get("time_limit"),
            retries=data.get("retries", 2),
            openai=None if openai is None else OpenAIConfig(**openai),
            user=data.get("user", "simulated"),
            llm_user=data.get("llm_user"),
            store_frames=data.get("store_frames", True),
        )


def new_batch_id() -> str:
    return datetime.now(UTC).strftime("b%Y%m%d-%H%M%S-") + secrets.token_hex(2)


def is_infrastructure_error(error: str | None) -> bool:
    """Whether an episode's recorded error is one a fresh desktop may cure."""
    if not error:
        return False
    text = error.removeprefix("scoring failed: ")
    return text.startswith(INFRASTRUCTURE_TITLES) or text.startswith(
        ("batch time limit", "interrupted:")
    )


# -- the table ------------------------------------------------------------------------


@dataclass(frozen=True)
class SlotRow:
    slot: Slot
    episode: EpisodeRecord | None
    """The slot's finished episode, else its latest try, else None (never run)."""
    attempts: int

    @property
    def status(self) -> str:
        return "pending" if self.episode is None else self.episode.status

    def key(self) -> tuple[Any, ...]:
        """What must be equal between two runs of the same batch (no ids, no times)."""
        e = self.episode
        return (
            self.slot.task_id,
            self.slot.agent,
            self.slot.repeat,
            None if e is None else (e.status, e.end_reason, e.passed, e.score, e.steps),
        )


def suite_slots(suite: dict[str, Any]) -> list[Slot]:
    """The slots of a recorded suite, in run order (repeat, task, agent)."""
    return [
        Slot(task["id"], agent, repeat)
        for repeat in range(suite["repeats"])
        for task in suite["tasks"]
        for agent in suite["agents"]
    ]


def batch_table(store: Store, batch_id: str) -> list[SlotRow]:
    suite = store.get_batch(batch_id).suite
    by_slot: dict[Slot, list[EpisodeRecord]] = {}
    for record in store.list_episodes(batch_id=batch_id, limit=None):
        if record.batch_agent is None or record.batch_repeat is None:
            continue  # killed before it was tagged: an error try of an unknown slot
        slot = Slot(record.task_id, record.batch_agent, record.batch_repeat)
        by_slot.setdefault(slot, []).append(record)
    rows = []
    for slot in suite_slots(suite):
        tries = sorted(by_slot.get(slot, []), key=lambda r: r.id)
        finished = [r for r in tries if r.status == "finished"]
        chosen = finished[0] if finished else (tries[-1] if tries else None)
        rows.append(SlotRow(slot, chosen, len(tries)))
    return rows


# -- progress -------------------------------------------------------------------------


@dataclass
class Progress:
    """A one-line progress bar on a terminal; one line per change elsewhere."""

    total: int
    already: int = 0
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    passed: int = 0
    failed: int = 0
    errored: int = 0
    retried: int = 0
    running: int = 0
    started: float = field(default_factory=time.monotonic)
    _done_here: int = 0

    @property
    def done(self) -> int:
        return self.already + self._done_here

    def finished(self, row_status: str, passed: bool | None) -> None:
        self._done_here += 1
        if row_status == "error":
            self.errored += 1
        elif passed:
            self.passed += 1
        else:
            self.failed += 1
        self.show()

    def retry(self) -> None:
        self.retried += 1
        self.show()

    def eta(self) -> str:
        remaining = self.total - self.done
        if remaining <= 0:
            return "0s"
        if not self._done_here:
            return "?"
        seconds = (time.monotonic() - self.started) / self._done_here * remaining
        return _duration(seconds)

    def line(self) -> str:
        width = 24
        filled = round(width * self.done / self.total) if self.total else width
        bar = "#" * filled + "-" * (width - filled)
        return (
            f"[{bar}] {self.done}/{self.total} done · {self.passed} passed · "
            f"{self.failed} failed · {self.errored} errored · {self.retried} retried · "
            f"{self.running} running · ETA {self.eta()}"
        )

    def show(self) -> None:
        if self.stream.isatty():
            self.stream.write("\r\x1b[2K" + self.line())
        else:
            self.stream.write(self.line() + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.stream.isatty():
            self.stream.write("\n")
            self.stream.flush()


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


# -- running --------------------------------------------------------------------------

AgentFactory = Callable[[str, Task, OpenAIConfig | None], Agent]
UserFactory = Callable[[Task], User]
DesktopFactory = Callable[[str], Desktop]


def default_user_factory(options: BatchOptions, root: Path) -> UserFactory:
    def make(task: Task) -> User:
        if options.user == "simulated":
            return SimulatedUser()
        if options.user == "llm":
            config = LLMUserConfig.from_json(options.llm_user or {})
            return LLMUser(task, config, cache_dir=root / "llm-user-cache")
        raise DeskLoopError(f"unknown user {options.user!r}; expected simulated or llm")

    return make


class BatchRunner:
    """Runs the pending slots of one batch. Build it with `start_batch` / `resume_batch`."""

    def __init__(
        self,
        store: Store,
        batch_id: str,
        tasks: dict[str, Task],
        suite: dict[str, Any],
        options: BatchOptions,
        *,
        progress_stream: TextIO | None = None,
        agent_factory: AgentFactory | None = None,
        desktop_factory: DesktopFactory | None = None,
        user_factory: UserFactory | None = None,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.store = store
        self.batch_id = batch_id
        self.tasks = tasks
        self.suite = suite
        self.options = options
        self._agent_factory = agent_factory or make_agent
        self._desktop_factory = desktop_factory or make_desktop
        self._user_factory = user_factory or default_user_factory(options, store.root)
        self._log = log or (lambda text: None)
        self._progress_stream = progress_stream
        self.desktops_made = 0

    def pending(self) -> list[tuple[Slot, int]]:
        """Slots with no finished episode, each with its next attempt number."""
        rows = batch_table(self.store, self.batch_id)
        return [(row.slot, row.attempts) for row in rows if row.status != "finished"]

    async def run(self) -> list[SlotRow]:
        self._refuse_if_running()
        rows = batch_table(self.store, self.batch_id)
        pending = [(row.slot, row.attempts) for row in rows if row.status != "finished"]
        progress = Progress(
            len(rows), len(rows) - len(pending), self._progress_stream or sys.stderr
        )
        for row in rows:
            if row.episode is not None and row.status == "finished":
                if row.episode.passed:
                    progress.passed += 1
                else:
                    progress.failed += 1
        self._progress = progress
        queue: asyncio.Queue[tuple[Slot, int]] = asyncio.Queue()
        for item in pending:
            queue.put_nowait(item)
        progress.show()
        workers = [
            asyncio.create_task(self._worker(queue), name=f"batch-worker-{n}")
            for n in range(min(self.options.concurrency, len(pending)))
        ]
        try:
            await asyncio.gather(*workers)
        except BaseException:
            for worker in workers:
                worker.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            raise
        finally:
            progress.close()
        return batch_table(self.store, self.batch_id)

    def _refuse_if_running(self) -> None:
        # Opening the store already marked episodes of dead runners on this host.
        for record in self.store.list_episodes(
            batch_id=self.batch_id, status="running", limit=None
        ):
            raise DeskLoopError(
                f"batch {self.batch_id} is still running: episode {record.id} belongs to "
                f"process {record.pid} on {record.hostname}; stop it before resuming"
            )

    async def _worker(self, queue: asyncio.Queue[tuple[Slot, int]]) -> None:
        # The worker's desktop, reused across its episodes; a list so that _run_slot
        # can replace it and the finally below still closes the current one.
        holder: list[Desktop] = []
        try:
            while True:
                try:
                    slot, attempt = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                await self._run_slot(slot, attempt, holder)
        finally:
            for desktop in holder:
                await desktop.close()

    async def _run_slot(self, slot: Slot, attempt: int, holder: list[Desktop]) -> None:
        """Run one slot with its retries, on the worker's desktop (made on demand)."""
        progress = self._progress
        task = self.tasks[slot.task_id]
        last: EpisodeResult | None = None
        for try_index in range(self.options.retries + 1):
            if try_index:
                progress.retry()
            if not holder:
                holder.append(self._desktop_factory(self.options.backend))
                self.desktops_made += 1
            progress.running += 1
            progress.show()
            try:
                last, infrastructure = await self._run_episode(
                    task, slot, attempt + try_index, holder[0]
                )
            finally:
                progress.running -= 1
            if last.status == "finished" or not infrastructure:
                break
            # A fresh desktop for the retry: the old one may be what failed.
            self._log(f"{slot}: {last.error}; retrying on a fresh desktop")
            await holder.pop().close()
        assert last is not None
        progress.finished(last.status, last.passed)

    async def _run_episode(
        self, task: Task, slot: Slot, attempt: int, desktop: Desktop
    ) -> tuple[EpisodeResult, bool]:
        agent = self._agent_factory(slot.agent, task, self.options.openai)
        runner_box: list[EpisodeRunner] = []
        user = self._user_factory(task)
        bind = getattr(user, "bind_conversation", None)
        tagged = False

        def on_event(event: RunnerEvent) -> None:
            nonlocal tagged
            runner = runner_box[0]
            if not tagged and runner.episode_id is not None:
                tagged = True
                self.store.tag_batch_slot(
                    runner.episode_id, agent=slot.agent, repeat=slot.repeat, attempt=attempt
                )

        runner = EpisodeRunner(
            task,
            desktop,
            agent,
            user,
            self.store,
            backend=self.options.backend,
            options=RunOptions(batch_id=self.batch_id, store_frames=self.options.store_frames),
            on_event=on_event,
        )
        runner_box.append(runner)
        if callable(bind):
            bind(lambda: runner.protocol.conversation if runner.protocol else [])
        limit = self.options.time_limit or task.budget.seconds + DEFAULT_TIME_MARGIN
        try:
            result = await asyncio.wait_for(runner.run(), limit)
        except TimeoutError:
            error = f"batch time limit of {limit:g} s exceeded"
            episode_id = runner.episode_id if runner.episode_id is not None else -1
            steps = runner.protocol.steps if runner.protocol else 0
            return EpisodeResult(
                episode_id, task.id, "error", "error", None, None, steps, error
            ), True
        except StoreError:
            raise
        except DeskLoopError as exc:
            # Raised outside the runner's own handling (closing the agent, say).
            error = f"{exc.title}: {exc}"
            episode_id = runner.episode_id if runner.episode_id is not None else -1
            result = EpisodeResult(episode_id, task.id, "error", "error", None, None, 0, error)
        if not tagged and result.episode_id >= 0:
            # No event came before the end (cannot happen with today's runner, which
            # reports the reset first); tag now so the slot is not run again.
            self.store.tag_batch_slot(
                result.episode_id, agent=slot.agent, repeat=slot.repeat, attempt=attempt
            )
        return result, result.status == "error" and is_infrastructure_error(result.error)


def _task_entry(task: Task) -> dict[str, Any]:
    return {"id": task.id, "path": str(Path(task.source).resolve()), "sha256": task.sha256}


def start_batch(
    store: Store,
    tasks: Sequence[Task],
    agents: Sequence[str],
    repeats: int,
    options: BatchOptions,
    *,
    batch_id: str | None = None,
    **kwargs: Any,
) -> BatchRunner:
    """Record a new batch (its suite and options) and return its runner.

    Raises:
        AgentError: an agent spec cannot be built for one of the tasks (checked for
            every pair before anything runs).
    """
    if not tasks or not agents or repeats < 1:
        raise DeskLoopError("a batch needs tasks, agents and at least one repeat")
    factory: AgentFactory = kwargs.get("agent_factory") or make_agent
    for task in tasks:
        for spec in agents:
            factory(spec, task, options.openai)  # fails early on a bad spec or task
    suite = {
        "tasks": [_task_entry(task) for task in tasks],
        "agents": list(agents),
        "repeats": repeats,
        "options": options.to_json(),
    }
    batch_id = batch_id or new_batch_id()
    store.create_batch(batch_id, suite)
    return BatchRunner(store, batch_id, {t.id: t for t in tasks}, suite, options, **kwargs)


def resume_batch(
    store: Store, batch_id: str, *, concurrency: int | None = None, **kwargs: Any
) -> BatchRunner:
    """The runner of a recorded batch, for its slots without a finished episode.

    Raises:
        StoreError: no such batch.
        TaskError: a task file is gone or changed since the batch began (its results
            would not be comparable).
    """
    suite = store.get_batch(batch_id).suite
    tasks: dict[str, Task] = {}
    for entry in suite["tasks"]:
        task = load_task(entry["path"])
        if task.sha256 != entry["sha256"]:
            raise TaskError(
                f"{entry['path']}: task {entry['id']} changed since batch {batch_id} began; "
                "start a new batch to run the new version"
            )
        tasks[task.id] = task
    options = BatchOptions.from_json(suite.get("options", {}), concurrency or 1)
    return BatchRunner(store, batch_id, tasks, suite, options, **kwargs)


def table_json(rows: Sequence[SlotRow]) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        e = row.episode
        out.append(
            {
                "task": row.slot.task_id,
                "agent": row.slot.agent,
                "repeat": row.slot.repeat,
                "status": row.status,
                "episode": None if e is None else e.id,
                "end_reason": None if e is None else e.end_reason,
                "passed": None if e is None else e.passed,
                "score": None if e is None else e.score,
                "steps": None if e is None else e.steps,
                "attempts": row.attempts,
                "error": None if e is None else e.error,
            }
        )
    return out


def dumps_table(rows: Sequence[SlotRow]) -> str:
    return json.dumps(table_json(rows), indent=2)
