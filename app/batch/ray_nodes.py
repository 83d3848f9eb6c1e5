"""A batch spread over the nodes of a Ray cluster (`deskloop batch run --ray ADDRESS`).

Each try of a slot runs as one Ray task on a node that offers a free desktop: the
custom resource `deskloop_desktop`, which a node declares when it joins
(`ray start --address ... --resources '{"deskloop_desktop": 2}'`). The node runs the
episode on its own backend (a local desktop, or a VM of its own libvirt), recorded in
a throw-away database there, exactly as a batch on one machine runs it (the same
`BatchRunner.run_try`: time limit, slot tags, setup). The episode streams back to the
driver as it runs (a Ray streaming generator: after each step and at its end, the
episode as recorded so far, with the frames not sent yet; `app.store.transfer`), and
the driver imports it into its database, the only one written for the batch.

A node lost while it ran an episode (its raylet or its worker died, the machine went
away) ends that try, in the driver's database, as an error of kind `interrupted`
(infrastructure: the runner died) with the steps it had streamed back, and the slot is
retried; Ray places the retry on a node that is still alive. A resume works as on one
machine: the driver's database says which slots have a finished episode.

Ray is imported here only, and only when a batch asks for it, so the rest of DeskLoop
does not pay for it. The tasks' files must be at the same path on every node (a
shared checkout); a node whose copy differs refuses the episode (kind `task`).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import os
import queue
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.batch.options import BatchOptions
from app.batch.pool import Lease
from app.core.errors import DeskLoopError, TaskError
from app.core.procfs import write_owner_file
from app.episode.events import EpisodeResult
from app.episode.launch import desktop_spec, make_spec_desktop
from app.metrics.slots import Slot
from app.store import Store
from app.store.transfer import EpisodeBundle
from app.tasks.loader import load_task
from app.tasks.model import Task

if TYPE_CHECKING:
    from app.batch.runner import BatchRunner

WAITING_WARN_SECONDS = 60.0
"""A try queued this long without a node starting it is said in the batch's log."""
RESOURCE = "deskloop_desktop"
"""The custom Ray resource a node offers, one unit per desktop it can run at once."""
PLACE_NAME = "deskloop-ray-place-{uid}-{index}"
"""An abstract Unix socket name per place: it numbers the desktops running at once on
one node (VM names)."""


class RayUnavailable(DeskLoopError):
    """Ray is not installed, or the cluster cannot be reached."""

    title = "Ray unavailable"


@dataclass(frozen=True)
class NodeJob:
    """One try of a slot, as a node needs it (picklable)."""

    batch_id: str
    task_path: str
    task_sha256: str
    slot: Slot
    attempt: int
    options: dict[str, Any]
    """The batch's options (`BatchOptions.to_json`)."""


def _import_ray(address: str) -> Any:
    host = address.rsplit(":", 1)[0]
    with contextlib.suppress(ValueError):
        if ipaddress.ip_address(host).is_loopback:
            # A cluster on this machine alone, on 127.0.0.1: without this, Ray turns
            # a loopback address into the machine's outward one, where nothing listens.
            os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    try:
        import ray
    except ImportError as exc:
        raise RayUnavailable(f"--ray needs the ray package ({exc})") from exc
    return ray


def check_reachable(address: str, timeout: float = 10.0) -> None:
    """Refuse an address whose head does not answer: Ray itself retries for minutes.

    Raises:
        RayUnavailable: nothing accepts a connection at `address` within `timeout`.
    """
    if address == "auto":
        return  # Ray finds the cluster this machine belongs to, or says it found none
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise RayUnavailable(f"--ray {address}: expected HOST:PORT or auto")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        raise RayUnavailable(
            f"--ray {address}: no Ray cluster answers there ({exc.strerror or exc})"
        ) from exc


class RayNodes:
    """The driver's side: runs tries of slots as Ray tasks and imports their episodes."""

    def __init__(self, address: str, log: Callable[[str], None] | None = None) -> None:
        check_reachable(address)
        ray = _import_ray(address)
        self._ray = ray
        self._log = log or (lambda text: None)
        try:
            if not ray.is_initialized():
                ray.init(address=address, logging_level="ERROR", log_to_driver=False)
        except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ...
            raise RayUnavailable(f"cannot join the Ray cluster at {address}: {exc}") from exc
        self._remote = ray.remote(
            num_cpus=0, resources={RESOURCE: 1}, max_retries=0, num_returns="streaming"
        )(run_on_node)

    def capacity(self) -> int:
        """Desktops the cluster's nodes offer in all (the default concurrency)."""
        return int(self._ray.cluster_resources().get(RESOURCE, 0))

    async def run_try(
        self,
        runner: BatchRunner,
        task: Task,
        slot: Slot,
        attempt: int,
        started: Callable[[], None] = lambda: None,
    ) -> EpisodeResult:
        """Run one try on a node and record it in the driver's database; `started` is
        called when a node has begun it (its first record came back). A try no node has
        begun after `WAITING_WARN_SECONDS` is said in the log, once, with the desktops
        the cluster offers then (a node lost with its desktops leaves tries queued)."""
        from ray.exceptions import RayError, RayTaskError

        job = NodeJob(
            runner.batch_id,
            str(Path(task.source).resolve()),
            task.sha256,
            slot,
            attempt,
            runner.options.to_json(),
        )
        stream = self._remote.remote(job)
        store = runner.store
        episode_id: int | None = None
        paths: dict[str, str] = {}
        warning = asyncio.get_running_loop().call_later(
            WAITING_WARN_SECONDS, self._warn_waiting, slot
        )
        try:
            # The episode as recorded so far, after each step and at its end: the
            # first import makes it here, each later one replaces its rows.
            async for ref in stream:
                bundle: EpisodeBundle = await ref
                if episode_id is None:
                    warning.cancel()
                    started()
                episode_id = await store.off_loop(
                    store.import_episode, bundle, into=episode_id, paths=paths
                )
        except asyncio.CancelledError:
            self._ray.cancel(stream, force=True)
            if episode_id is not None:
                await store.off_loop(_end_lost, store, episode_id, "aborted while on a Ray node")
            raise
        except RayTaskError as exc:
            cause = exc.cause
            if isinstance(cause, DeskLoopError):
                raise cause from None  # as on one machine: the batch stops on it
            raise DeskLoopError(f"{slot}: the episode failed on its Ray node: {exc}") from exc
        except RayError as exc:
            # The batch logs it with the retry.
            reason = f"interrupted: the Ray node running it was lost ({type(exc).__name__})"
            if episode_id is None:
                episode_id = await store.off_loop(_record_lost, store, runner, task, slot, attempt)
            await store.off_loop(_end_lost, store, episode_id, reason)
        finally:
            warning.cancel()
        if episode_id is None:
            raise DeskLoopError(f"{slot}: its Ray node sent no episode back")
        record = await store.off_loop(store.get_episode, episode_id)
        return EpisodeResult(
            record.id, record.task_id, record.status, record.end_reason, record.passed,
            record.score, record.steps, record.error, error_kind=record.error_kind,
        )  # fmt: skip

    def _warn_waiting(self, slot: Slot) -> None:
        offered = self.capacity()
        self._log(
            f"{slot}: no node has started it after {WAITING_WARN_SECONDS:g} s; the cluster "
            f"offers {offered} desktop(s) now"
            + (" (its nodes with desktops are gone)" if offered < 1 else ", all in use")
        )

    def close(self) -> None:
        self._ray.shutdown()


def _record_lost(store: Store, runner: BatchRunner, task: Task, slot: Slot, attempt: int) -> int:
    """The driver's record of a try whose node was lost before it sent anything back,
    tagged with its slot (`_end_lost` ends it)."""
    episode_id = store.start_episode(
        task_id=task.id,
        task_path=str(task.source.resolve()),
        task_sha256=task.sha256,
        app=task.app,
        level=task.level,
        interactive=task.interactive,
        agent=slot.agent,
        user_mode="simulated",
        backend=runner.options.backend,
        config={"ray": True},
        batch_id=runner.batch_id,
    )
    store.tag_batch_slot(episode_id, agent=slot.agent, repeat=slot.repeat, attempt=attempt)
    store.init_phases(episode_id, task.phases)
    return episode_id


def _end_lost(store: Store, episode_id: int, reason: str) -> None:
    """End a try whose node was lost (or whose batch was stopped) with what came back
    of it: an infrastructure error (an abort), its steps kept."""
    record = store.get_episode(episode_id)
    if record.status != "running":
        return  # its end had come back already
    aborted = reason.startswith("aborted")
    store.finish_episode(
        episode_id,
        status="error",
        end_reason="aborted" if aborted else "error",
        error=reason,
        error_kind="aborted" if aborted else "interrupted",
        steps=len(store.steps(episode_id)),
    )


# -- the node's side -------------------------------------------------------------------


def run_on_node(job: NodeJob) -> Iterator[EpisodeBundle]:
    """The Ray task: run one try on this node's backend and stream the episode back,
    as recorded so far, after each of its steps and at its end.

    The episode runs on an asyncio loop in a thread of its own; this generator takes
    each change it reports (`_Changes`) and exports the episode from the node's
    database, with only the frames not sent yet.
    """
    changes = _Changes()
    result: list[EpisodeBundle] = []
    failure: list[BaseException] = []

    def work() -> None:
        try:
            result.append(asyncio.run(_run_on_node(job, changes)))
        except BaseException as exc:
            failure.append(exc)
        finally:
            changes.put(None)

    thread = threading.Thread(target=work, name="deskloop-episode", daemon=True)
    thread.start()
    sent: set[str] = set()
    while (seen := changes.take()) is not None:
        store, episode_id = seen
        try:
            bundle = store.export_episode(episode_id, skip_frames=sent)
        except DeskLoopError:
            continue  # the episode has ended meanwhile: its last export follows
        sent.update(bundle.frames)
        yield bundle
    thread.join()
    if failure:
        raise failure[0]
    final = result[0]
    final.frames = {k: v for k, v in final.frames.items() if k not in sent}
    yield final


class _Changes:
    """The node's episode changed (a step was recorded): the latest change only, since
    each export carries everything recorded so far."""

    def __init__(self) -> None:
        self._queue: queue.Queue[tuple[Store, int] | None] = queue.Queue()

    def put(self, item: tuple[Store, int] | None) -> None:
        self._queue.put(item)

    def take(self) -> tuple[Store, int] | None:
        item = self._queue.get()
        while item is not None and not self._queue.empty():
            item = self._queue.get()  # a later change covers this one
        return item


async def _run_on_node(job: NodeJob, changes: _Changes) -> EpisodeBundle:
    from app.batch.runner import BatchRunner

    task = load_task(job.task_path)
    if task.sha256 != job.task_sha256:
        raise TaskError(
            f"{job.task_path}: task {task.id} on node {socket.gethostname()} differs from "
            "the driver's copy; every node needs the same task files"
        )
    options = BatchOptions.from_json(job.options, concurrency=1)
    with (
        tempfile.TemporaryDirectory(prefix="deskloop-ray-node-") as folder,
        Store(_owned(Path(folder)) / "node.db") as store,
        _claim_place() as place,
    ):
        runner = BatchRunner(store, job.batch_id, {task.id: task}, {}, options)
        spec = desktop_spec(options.backend, task, index=place)
        desktop = make_spec_desktop(spec)
        lease = Lease(0, place, spec.image, desktop, None)
        runner.extra_config = {
            "ray_node": socket.gethostname(),
            "ray_node_id": _node_id(),
            "ray_worker_pid": os.getpid(),
            "ray_place": place,
        }
        runner.on_step = lambda episode_id: changes.put((store, episode_id))
        try:
            result = await runner.run_try(task, job.slot, job.attempt, lease)
        finally:
            await desktop.close()
        if result.episode_id < 0:
            raise DeskLoopError(f"{job.slot}: the episode was not recorded on its node")
        return await store.off_loop(store.export_episode, result.episode_id)


def _owned(folder: Path) -> Path:
    """`folder`, named as this worker's: Ray SIGKILLs a worker whose node or driver is
    lost, which skips the folder's clean-up; `deskloop desktops cleanup` (also run when
    a command starts desktops) removes it once this process is gone."""
    write_owner_file(folder)
    return folder


def _node_id() -> str | None:
    """This Ray node's id (None outside a Ray worker)."""
    try:
        import ray

        return str(ray.get_runtime_context().get_node_id())
    except Exception:  # not in a Ray worker: the id is only a note
        return None


@contextlib.contextmanager
def _claim_place() -> Iterator[int]:
    """The lowest place number no other episode on this node holds: desktops running at
    once on one node differ in it, and so do their VM names. A place is an abstract
    Unix socket bound under its name (Linux): no file is left anywhere, and the kernel
    releases it when the process ends, even killed."""
    index = 0
    while True:
        claim = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            claim.bind("\0" + PLACE_NAME.format(uid=os.getuid(), index=index))
        except OSError as exc:
            claim.close()
            if exc.errno != errno.EADDRINUSE:
                raise
            index += 1
            continue
        try:
            yield index
        finally:
            claim.close()
        return
