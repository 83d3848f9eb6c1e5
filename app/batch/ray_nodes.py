"""A batch spread over the nodes of a Ray cluster (`deskloop batch run --ray ADDRESS`).

Each try of a slot runs as one Ray task on a node that offers a free desktop: the
custom resource `deskloop_desktop`, which a node declares when it joins
(`ray start --address ... --resources '{"deskloop_desktop": 2}'`). The node runs the
episode on its own backend (a local desktop, or a VM of its own libvirt), recorded in
a throw-away database there, exactly as a batch on one machine runs it (the same
`BatchRunner.run_try`: time limit, slot tags, setup). The whole episode then comes
back to the driver (`app.store.transfer`: its rows, frames and score), which imports
it into its database, the only one written for the batch.

A node lost while it ran an episode (its raylet or its worker died, the machine went
away) is recorded by the driver as an error of kind `interrupted` (infrastructure: the
runner died), and the slot is retried; Ray places the retry on a node that is still
alive. What the lost node had recorded of that try is lost with it. A resume works as
on one machine: the driver's database says which slots have a finished episode.

Ray is imported here only, and only when a batch asks for it, so the rest of DeskLoop
does not pay for it. The tasks' files must be at the same path on every node (a
shared checkout); a node whose copy differs refuses the episode (kind `task`).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import ipaddress
import os
import socket
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.batch.options import BatchOptions
from app.batch.pool import Lease
from app.core.errors import DeskLoopError, TaskError
from app.episode.events import EpisodeResult
from app.episode.launch import desktop_spec, make_spec_desktop
from app.metrics.slots import Slot
from app.store import Store
from app.store.transfer import EpisodeBundle
from app.tasks.loader import load_task
from app.tasks.model import Task

if TYPE_CHECKING:
    from app.batch.runner import BatchRunner

RESOURCE = "deskloop_desktop"
"""The custom Ray resource a node offers, one unit per desktop it can run at once."""
PLACES_DIR = Path(tempfile.gettempdir()) / f"deskloop-ray-places-{os.getuid()}"
"""Lock files that number the desktops running at once on one node (VM names)."""


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


class RayNodes:
    """The driver's side: runs tries of slots as Ray tasks and imports their episodes."""

    def __init__(self, address: str, log: Callable[[str], None] | None = None) -> None:
        ray = _import_ray(address)
        self._ray = ray
        self._log = log or (lambda text: None)
        try:
            if not ray.is_initialized():
                ray.init(address=address, logging_level="ERROR", log_to_driver=False)
        except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ...
            raise RayUnavailable(f"cannot join the Ray cluster at {address}: {exc}") from exc
        self._remote = ray.remote(num_cpus=0, resources={RESOURCE: 1}, max_retries=0)(run_on_node)

    def capacity(self) -> int:
        """Desktops the cluster's nodes offer in all (the default concurrency)."""
        return int(self._ray.cluster_resources().get(RESOURCE, 0))

    async def run_try(
        self, runner: BatchRunner, task: Task, slot: Slot, attempt: int
    ) -> EpisodeResult:
        """Run one try on a node and record it in the driver's database."""
        from ray.exceptions import RayError, RayTaskError

        job = NodeJob(
            runner.batch_id,
            str(Path(task.source).resolve()),
            task.sha256,
            slot,
            attempt,
            runner.options.to_json(),
        )
        ref = self._remote.remote(job)
        try:
            bundle: EpisodeBundle = await ref
        except asyncio.CancelledError:
            self._ray.cancel(ref, force=True)
            raise
        except RayTaskError as exc:
            cause = exc.cause
            if isinstance(cause, DeskLoopError):
                raise cause from None  # as on one machine: the batch stops on it
            raise DeskLoopError(f"{slot}: the episode failed on its Ray node: {exc}") from exc
        except RayError as exc:
            # The batch logs it with the retry.
            reason = f"interrupted: the Ray node running it was lost ({type(exc).__name__})"
            store = runner.store
            episode_id = await store.off_loop(
                _record_lost, store, runner, task, slot, attempt, reason
            )
            return EpisodeResult(
                episode_id, task.id, "error", "error", None, None, 0, reason,
                error_kind="interrupted",
            )  # fmt: skip
        episode_id = await runner.store.off_loop(runner.store.import_episode, bundle)
        record = await runner.store.off_loop(runner.store.get_episode, episode_id)
        return EpisodeResult(
            record.id, record.task_id, record.status, record.end_reason, record.passed,
            record.score, record.steps, record.error, error_kind=record.error_kind,
        )  # fmt: skip

    def close(self) -> None:
        self._ray.shutdown()


def _record_lost(
    store: Store, runner: BatchRunner, task: Task, slot: Slot, attempt: int, reason: str
) -> int:
    """The driver's record of a try whose node was lost: an error, tagged with its slot."""
    episode_id = store.start_episode(
        task_id=task.id,
        task_path=str(task.source),
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
    store.finish_episode(
        episode_id, status="error", end_reason="error", error=reason,
        error_kind="interrupted", steps=0,
    )  # fmt: skip
    return episode_id


# -- the node's side -------------------------------------------------------------------


def run_on_node(job: NodeJob) -> EpisodeBundle:
    """The Ray task: run one try on this node's backend; return the episode recorded."""
    return asyncio.run(_run_on_node(job))


async def _run_on_node(job: NodeJob) -> EpisodeBundle:
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
        Store(Path(folder) / "node.db") as store,
        _claim_place() as place,
    ):
        runner = BatchRunner(store, job.batch_id, {task.id: task}, {}, options)
        spec = desktop_spec(options.backend, task, index=place)
        desktop = make_spec_desktop(spec)
        lease = Lease(0, place, spec.image, desktop, None)
        runner.extra_config = {"ray_node": socket.gethostname(), "ray_place": place}
        try:
            result = await runner.run_try(task, job.slot, job.attempt, lease)
        finally:
            await desktop.close()
        if result.episode_id < 0:
            raise DeskLoopError(f"{job.slot}: the episode was not recorded on its node")
        return await store.off_loop(store.export_episode, result.episode_id)


@contextlib.contextmanager
def _claim_place() -> Iterator[int]:
    """The lowest place number no other episode on this node holds (a lock file each,
    released when the process ends, even killed): desktops running at once on one
    node differ in it, and so do their VM names."""
    PLACES_DIR.mkdir(parents=True, exist_ok=True)
    index = 0
    while True:
        fd = os.open(PLACES_DIR / f"{index}.lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            index += 1
            continue
        try:
            yield index
        finally:
            os.close(fd)
        return
