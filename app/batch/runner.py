"""Running a batch: `start_batch` records a new one, `resume_batch` takes up a recorded
one, and `BatchRunner.run` runs its slots without a finished episode.

N workers take slots from one queue. Each try of a slot gets a desktop from the run's
`DesktopPool`, runs one episode on it under the batch's time limit, and tags the episode
with its slot (`batch_agent`, `batch_repeat`, `batch_attempt`) at its first event, while
it is still running. A try that ends in an infrastructure error (`app.batch.retry`, from
the error kind the episode recorded) is retried on a fresh desktop, up to `retries` more
times.
"""

from __future__ import annotations

import asyncio
import secrets
import sys
from collections import deque
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from app.agents.base import Agent
from app.agents.spec import parse_agent_spec
from app.batch.hosts import Host
from app.batch.options import BatchOptions
from app.batch.pool import DesktopFactory, DesktopPool, Lease, pool_hosts
from app.batch.progress import Progress
from app.batch.retry import TimeLimitExceeded, failed_at_startup, is_retried
from app.batch.warm import Ready, WarmStarts
from app.batch.warm import discard as discard_warm
from app.core.errors import DeskLoopError, StoreError, TaskError, describe_error
from app.core.vocabulary import ErrorKind
from app.episode.control import RunOptions
from app.episode.events import EpisodeResult, RunnerEvent, StepEvent
from app.episode.launch import (
    LLM_USER_CACHE,
    Episode,
    build_agent,
    launch,
    make_spec_desktop,
    make_user,
    task_image,
)
from app.episode.prepare import PreparedStart
from app.metrics.slots import Slot, SlotRow, batch_table
from app.store import EpisodeRecord, Store
from app.tasks.loader import load_task
from app.tasks.model import Task
from app.users.llm import LLMUser
from app.users.simulated import User

if TYPE_CHECKING:
    from app.agents.adapters import ModelConfig
    from app.batch.ray_nodes import RayNodes

# Setup and scoring come on top of the task's own time budget.
DEFAULT_TIME_MARGIN = 300.0

AgentFactory = Callable[[str, Task, "ModelConfig | None"], Agent]
"""Builds a slot's agent from its spec as the batch records it (`build_agent`; tests
hand in agents of their own, under names of their own)."""
UserFactory = Callable[[Task], User]


def new_batch_id() -> str:
    return datetime.now(UTC).strftime("b%Y%m%d-%H%M%S-") + secrets.token_hex(2)


def default_user_factory(options: BatchOptions, root: Path) -> UserFactory:
    def make(task: Task) -> User:
        # No person: nobody would be there to answer a batch's episodes.
        return make_user(
            options.user,
            task,
            cache_dir=root / LLM_USER_CACHE,
            llm=options.llm_user,
            choices=("simulated", "llm"),
        )

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
        self._agent_factory = agent_factory or _build_agent
        self._user_factory = user_factory or default_user_factory(options, store.root)
        self._log = log or (lambda text: None)
        self._progress_stream = progress_stream
        self.pool = DesktopPool(
            options.backend, pool_hosts(options), desktop_factory or make_spec_desktop, self._log
        )
        self.warm = WarmStarts(self.pool, options.warm, self._task_of, self._log)
        self.extra_config: dict[str, Any] = {}
        """Added to each episode's recorded config (a Ray node names itself)."""
        self.on_step: Callable[[int], None] | None = None
        """Called with the episode's id after each step is recorded (a Ray node
        streams the episode back to its driver)."""
        self.remote: RayNodes | None = None
        """The Ray cluster whose nodes run the tries (options.ray), once joined."""

    @property
    def desktops_made(self) -> int:
        return len(self.pool.made)

    @property
    def host_failures(self) -> dict[str, list[str]]:
        """Desktops that failed at start-up in this run, by host: their errors."""
        return self.pool.failures

    def pending(self) -> list[tuple[Slot, int]]:
        """Slots with no finished episode, each with its next attempt number."""
        rows = batch_table(self.store, self.batch_id)
        return [(row.slot, row.attempts) for row in rows if row.status != "finished"]

    async def run(self) -> list[SlotRow]:
        await self.store.off_loop(self._refuse_if_running)
        rows = await self.store.off_loop(batch_table, self.store, self.batch_id)
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
        queue = deque(pending)
        progress.show()
        if self.options.ray is not None and self.remote is None:
            from app.batch.ray_nodes import RayNodes  # imports Ray: only when asked

            self.remote = RayNodes(self.options.ray, self._log)
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
            await self.warm.close()
            await self.pool.close()
            if self.remote is not None:
                self.remote.close()
                self.remote = None
        return await self.store.off_loop(batch_table, self.store, self.batch_id)

    def _refuse_if_running(self) -> None:
        # Opening the store already marked episodes of dead runners on this host.
        for record in self.store.list_episodes(
            batch_id=self.batch_id, status="running", limit=None
        ):
            raise DeskLoopError(
                f"batch {self.batch_id} is still running: episode {record.id} belongs to "
                f"process {record.pid} on {record.hostname}; stop it before resuming"
            )

    def _task_of(self, slot: Slot) -> tuple[Task, str | None]:
        task = self.tasks[slot.task_id]
        return task, task_image(self.options.backend, task)

    async def _worker(self, queue: deque[tuple[Slot, int]]) -> None:
        while queue:
            slot, attempt = queue.popleft()
            warm = self.warm.take(slot)
            # The next slots' desktops are set up while this one runs.
            self.warm.fill(upcoming for upcoming, _ in queue)
            await self._run_slot(slot, attempt, warm)

    async def _run_slot(
        self, slot: Slot, attempt: int, warm: asyncio.Task[Ready] | None = None
    ) -> None:
        """Run one slot with its retries, each try on a desktop from the pool; the
        first on the desktop `warm` prepared for it, if there is one."""
        progress = self._progress
        task, image = self._task_of(slot)
        failed_on: set[int] = set()
        last: EpisodeResult | None = None
        for try_index in range(self.options.retries + 1):
            if try_index:
                progress.retry()
            if self.remote is not None:
                # On a Ray node that offers a desktop; a retry goes where Ray places it.
                # Waiting until a node starts it (Ray queues it while none has one free).
                ran = False

                def started() -> None:
                    nonlocal ran
                    ran = True
                    progress.waiting -= 1
                    progress.running += 1
                    progress.show()

                progress.waiting += 1
                progress.show()
                try:
                    last = await self.remote.run_try(self, task, slot, attempt + try_index, started)
                finally:
                    if ran:
                        progress.running -= 1
                    else:
                        progress.waiting -= 1
                if not is_retried(last.status, last.error_kind):
                    break
                self._log(f"{slot}: {last.error}; " + (
                    "retrying" if try_index < self.options.retries else "no retries left"
                ))  # fmt: skip
                continue
            ready = await self._warm_start(task, warm) if warm and not try_index else None
            prepared = None
            if ready is not None:
                lease, prepared = ready
            else:
                lease = await self.pool.acquire(image, failed_on)
            progress.running += 1
            progress.show()
            try:
                last = await self.run_try(task, slot, attempt + try_index, lease, prepared)
            except BaseException:
                # Cancelled (or the store failed): the desktop is closed with the pool.
                self.pool.give_back(lease, host_ok=False)
                raise
            finally:
                progress.running -= 1
            if not is_retried(last.status, last.error_kind):
                self.pool.give_back(lease)
                break
            # A fresh desktop for the retry, on another host where one has room: the
            # old desktop, or its host, may be what failed.
            where = lease.where(self.options.backend)
            startup = failed_at_startup(last.status, last.steps, last.error_kind)
            await self.pool.discard(lease, host_error=last.error if startup else None)
            failed_on.add(lease.host)
            if startup:
                progress.host_failed(where)
            if try_index < self.options.retries:
                self._log(f"{slot}: {last.error} (on {where}); retrying on a fresh desktop")
            else:
                self._log(f"{slot}: {last.error} (on {where}); no retries left")
        assert last is not None
        progress.finished(last.status, last.passed)

    async def _warm_start(self, task: Task, warm: asyncio.Task[Ready]) -> Ready | None:
        """The desktop prepared for a slot, once ready; None (it is closed) when it
        is not ready within the episode's time limit, and the slot's first try
        starts on a desktop of its own."""
        limit = self.options.time_limit or task.budget.seconds + DEFAULT_TIME_MARGIN
        try:
            done, _ = await asyncio.wait({warm}, timeout=limit)
        except BaseException:
            await discard_warm(self.pool, warm)  # cancelled: nobody will take it now
            raise
        if not done:
            self._log(f"{task.id}: its warm desktop was not ready in {limit:g} s; closing it")
            await discard_warm(self.pool, warm)
            return None
        return warm.result()

    async def run_try(
        self,
        task: Task,
        slot: Slot,
        attempt: int,
        lease: Lease,
        prepared: PreparedStart | None = None,
    ) -> EpisodeResult:
        """Run one try of `slot` on the desktop `lease` lent (or a Ray node's own),
        recorded in this runner's store and tagged with its slot; on the desktop as
        `prepared` left it, if it was brought to the task's start state ahead."""
        agent = self._agent_factory(slot.agent, task, self.options.openai)
        user = self._user_factory(task)
        placement: dict[str, Any] = {"desktop": lease.desktop.info().name, **self.extra_config}
        if self.options.backend == "libvirt":
            placement["libvirt_uri"] = lease.where(self.options.backend)
        if isinstance(user, LLMUser):
            # Only the words of the phases change; their triggers stay the task's.
            task, wordings = await user.phrase_phases()
            if wordings:
                placement["phase_wording"] = [wording.as_json() for wording in wordings]
        limit = self.options.time_limit or task.budget.seconds + DEFAULT_TIME_MARGIN
        window: asyncio.Timeout | None = None
        tagging: asyncio.Future[None] | None = None

        def tag(episode_id: int) -> asyncio.Future[None]:
            return self.store.off_loop(
                self.store.tag_batch_slot,
                episode_id,
                agent=slot.agent,
                repeat=slot.repeat,
                attempt=attempt,
            )

        def cancel_reason() -> DeskLoopError | None:
            # The runner runs in this task, so a cancellation it sees is the window's
            # when the window has expired, and a Ctrl-C (an abort) otherwise.
            expired = window is not None and window.expired()
            return TimeLimitExceeded(limit) if expired else None

        def on_event(event: RunnerEvent) -> None:
            nonlocal tagging
            if self.on_step is not None and isinstance(event, StepEvent) and tagging is not None:
                self.on_step(episode.episode_id or -1)
            if tagging is None and episode.episode_id is not None:
                # An event handler cannot await: the tag is handed to the store's
                # thread now, ahead of the runner's next write (the episode may end
                # at once), and awaited when the episode has ended.
                tagging = tag(episode.episode_id)

        episode = launch(
            task,
            self.store,
            backend=self.options.backend,
            agent=agent,
            user=user,
            desktop=lease.desktop,
            options=RunOptions(
                batch_id=self.batch_id,
                store_frames=self.options.store_frames,
                extra_config=placement,
                cancel_reason=cancel_reason,
                judge=self.options.judge,
            ),
            on_event=on_event,
            prepared=prepared,
        )
        try:
            try:
                # asyncio.timeout, not wait_for: the runner runs in this task, so
                # cancel_reason can ask the window whether it expired when the runner
                # records the cancellation (and 3.11's wait_for can swallow a Ctrl-C).
                async with asyncio.timeout(limit) as window:
                    result = await episode.run()
            except TimeoutError:
                return await self._timed_out(episode, task, limit)
            except StoreError:
                raise
            except DeskLoopError as exc:
                # Raised outside the runner's own handling (closing the agent, say).
                episode_id = episode.episode_id if episode.episode_id is not None else -1
                result = EpisodeResult(
                    episode_id,
                    task.id,
                    "error",
                    "error",
                    None,
                    None,
                    0,
                    describe_error(exc),
                    error_kind=exc.kind,
                )
        finally:
            # Written on the store's thread even when this task was cancelled meanwhile
            # (off_loop runs a call to its end); awaited so that a failed tag raises.
            if tagging is not None:
                await tagging
        if tagging is None and result.episode_id >= 0:
            # No event came before the end (cannot happen with today's runner, which
            # reports the reset first); tag now so the slot is not run again.
            await tag(result.episode_id)
        return result

    async def _timed_out(self, episode: Episode, task: Task, limit: float) -> EpisodeResult:
        """The result of a try that ran past the batch's time limit."""
        episode_id = episode.episode_id if episode.episode_id is not None else -1
        timed_out = TimeLimitExceeded(limit)
        error, steps = str(timed_out), 0
        kind: ErrorKind = timed_out.kind
        if episode_id >= 0:
            record = await self.store.off_loop(self.store.get_episode, episode_id)
            if record.status == "finished":
                # The limit struck after the episode was recorded as finished
                # (closing the agent): the finished record stands.
                return _result_of(record)
            # What the runner recorded (the limit, where it struck), if it could.
            error, kind = record.error or error, record.error_kind or kind
            steps = record.steps
        return EpisodeResult(
            episode_id, task.id, "error", "error", None, None, steps, error, error_kind=kind
        )


def _build_agent(spec: str, task: Task, openai: ModelConfig | None) -> Agent:
    """A slot's agent; no person: nobody would be there to drive a batch's desktops."""
    return build_agent(parse_agent_spec(spec), task, openai=openai)


def _result_of(record: EpisodeRecord) -> EpisodeResult:
    return EpisodeResult(
        record.id,
        record.task_id,
        record.status,
        record.end_reason,
        record.passed,
        record.score,
        record.steps,
        record.error,
        error_kind=record.error_kind,
    )


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
    factory: AgentFactory = kwargs.get("agent_factory") or _build_agent
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
    store: Store,
    batch_id: str,
    *,
    concurrency: int | None = None,
    hosts: Sequence[Host] | None = None,
    ray: str | None = None,
    **kwargs: Any,
) -> BatchRunner:
    """The runner of a recorded batch, for its slots without a finished episode.

    `hosts` replaces the batch's recorded pool of libvirt URIs (a host moved, or
    more capacity); `concurrency` defaults to the pool's total capacity, else 1.

    Raises:
        DeskLoopError: concurrency above the pool's capacity.
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
    options = BatchOptions.from_json(suite.get("options", {}), concurrency, hosts, ray)
    return BatchRunner(store, batch_id, tasks, suite, options, **kwargs)
