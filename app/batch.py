"""Batch runs: a suite of tasks × agents × repeats over a pool of desktops.

A *slot* is one (task, agent spec, repeat index) of the suite. Slots are handed to
N workers. A worker takes a desktop from the batch's pool for each try of a slot:
an idle desktop left by an earlier episode when one fits (the runner resets it
before every episode), else a new one (made by `app.desktops.factory.make_desktop`,
so any backend plugs in) on a host with free capacity. On the libvirt backend the
hosts can be several libvirt URIs, each with a capacity (`Host`); elsewhere there
is one host as large as the concurrency.

Crash safety comes from the store. A batch records its suite (the `batches`
table) and every episode records its slot (`batch_agent`, `batch_repeat`,
`batch_attempt`) while it is still running. `resume` reruns exactly the slots
without a finished episode; finished episodes are never touched, and a unique
index makes a second finished episode for one slot impossible. So a batch killed
with SIGKILL and resumed ends with the same table as one that ran through.

An episode that ends in an infrastructure error (the desktop, VNC, the guest
channel, an unavailable model endpoint, the batch's time limit) is retried on a
fresh desktop, up to `retries` more times, on another host where one has room;
every try stays recorded. Errors that would repeat (a broken script, a refused
request) are not retried. A host whose desktop failed before the agent's first
step is taken out of the pool while another host is up.
"""

from __future__ import annotations

import asyncio
import glob
import os
import re
import secrets
import sys
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import yaml

from app.agents.base import Agent
from app.agents.factory import make_agent
from app.agents.openai import OpenAIConfig
from app.core.errors import (
    AgentUnavailable,
    DeskLoopError,
    DesktopError,
    GuestError,
    StoreError,
    TaskError,
    VNCError,
)
from app.desktops.base import Desktop
from app.desktops.factory import make_desktop
from app.episode.runner import EpisodeResult, EpisodeRunner, RunnerEvent, RunOptions
from app.metrics.slots import Slot, SlotRow, batch_table
from app.store import EpisodeRecord, Store
from app.tasks.loader import find_task, load_task, task_files
from app.tasks.model import Task
from app.users.llm import LLMUser, LLMUserConfig, UserUnavailable
from app.users.simulated import SimulatedUser, User

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


# -- the libvirt host pool ------------------------------------------------------------

URIS_ENV = "DESKLOOP_LIBVIRT_URIS"
# driver[+transport]://[user@][host][:port]/[path][?params], as libvirt writes them.
# No commas (they separate the entries of $DESKLOOP_LIBVIRT_URIS) and no '*' (it
# starts the capacity).
_URI = re.compile(r"[A-Za-z][A-Za-z0-9]*(\+[A-Za-z0-9]+)?://[^/\s,*]*/[^\s,*]*")


@dataclass(frozen=True)
class Host:
    """A libvirt URI of a batch's pool and how many desktops it runs at once."""

    uri: str
    capacity: int = 1

    def __str__(self) -> str:
        return f"{self.uri}*{self.capacity}"


def parse_host(text: str, where: str = "--libvirt-uri") -> Host:
    """`URI` (capacity 1) or `URI*N`, e.g. `qemu+ssh://user@lab2/system*4`.

    Raises:
        DeskLoopError: not a libvirt URI, or a capacity that is not a whole number >= 1.
    """
    raw = text.strip()
    uri, star, count = raw.rpartition("*")
    if not star:
        uri, count = raw, "1"
    example = "e.g. qemu:///system*2 or qemu+ssh://user@host/system*4"
    if not _URI.fullmatch(uri):
        raise DeskLoopError(
            f"{where} {text!r}: {uri!r} is not a libvirt URI "
            f"(driver[+transport]://[host]/path, {example})"
        )
    if not count.isdigit():
        raise DeskLoopError(
            f"{where} {text!r}: the capacity after '*' must be a whole number ({example})"
        )
    capacity = int(count)
    if capacity < 1:
        raise DeskLoopError(
            f"{where} {text!r}: capacity {capacity}: a host runs at least 1 desktop; "
            "leave a host out of the pool instead"
        )
    return Host(uri, capacity)


def parse_hosts(items: Sequence[str], where: str = "--libvirt-uri") -> tuple[Host, ...]:
    """A pool from `URI[*N]` items; a URI may appear only once."""
    hosts = tuple(parse_host(item, where) for item in items)
    seen: set[str] = set()
    for host in hosts:
        if host.uri in seen:
            raise DeskLoopError(
                f"{where}: {host.uri} is given twice; give it once with its whole "
                f"capacity ({host.uri}*N)"
            )
        seen.add(host.uri)
    return hosts


def hosts_from_env(environ: Mapping[str, str] | None = None) -> tuple[Host, ...]:
    """The pool in $DESKLOOP_LIBVIRT_URIS (comma separated `URI[*N]`), or ()."""
    value = (os.environ if environ is None else environ).get(URIS_ENV, "")
    items = [item.strip() for item in value.split(",")]
    if not any(items):
        return ()
    if not all(items):
        raise DeskLoopError(f"{URIS_ENV}={value!r}: an empty entry between commas")
    return parse_hosts(items, URIS_ENV)


def describe_pool(hosts: Sequence[Host]) -> str:
    return " + ".join(str(host) for host in hosts)


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
    """simulated | llm (app.users.llm, configured by `llm_user`)."""
    llm_user: dict[str, Any] | None = None
    store_frames: bool = True
    hosts: tuple[Host, ...] = ()
    """libvirt only: the URIs desktops are placed on, each with its capacity. Empty:
    every desktop on the default URI ($DESKLOOP_LIBVIRT_URI), as many as the
    concurrency."""

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise DeskLoopError(f"concurrency must be at least 1, got {self.concurrency}")
        if self.hosts and self.backend != "libvirt":
            raise DeskLoopError(
                f"a pool of libvirt URIs (--libvirt-uri, {URIS_ENV}) needs --backend "
                f"libvirt, not {self.backend}"
            )
        total = sum(host.capacity for host in self.hosts)
        if self.hosts and self.concurrency > total:
            raise DeskLoopError(
                f"concurrency {self.concurrency} is more than the pool's total capacity "
                f"{total} ({describe_pool(self.hosts)}); lower --concurrency or give the "
                "hosts more capacity (URI*N)"
            )
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
            "libvirt_uris": [str(host) for host in self.hosts],
        }

    @classmethod
    def from_json(
        cls,
        data: dict[str, Any],
        concurrency: int | None = None,
        hosts: Sequence[Host] | None = None,
    ) -> BatchOptions:
        """Options recorded with a batch; `hosts` replaces the recorded pool. The
        concurrency defaults to the pool's total capacity, else 1."""
        openai = data.get("openai")
        pool = tuple(hosts) if hosts else parse_hosts(data.get("libvirt_uris") or [])
        return cls(
            backend=data.get("backend", "local"),
            concurrency=(sum(h.capacity for h in pool) or 1)
            if concurrency is None
            else concurrency,
            time_limit=data.get("time_limit"),
            retries=data.get("retries", 2),
            openai=None if openai is None else OpenAIConfig(**openai),
            user=data.get("user", "simulated"),
            llm_user=data.get("llm_user"),
            store_frames=data.get("store_frames", True),
            hosts=pool,
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


# The desktop side of an episode: a failure of one of these before the agent's first
# step means the desktop never came up on its host.
_DESKTOP_TITLES = tuple(cls.title for cls in (DesktopError, VNCError, GuestError))


def failed_at_startup(status: str, steps: int, error: str | None) -> bool:
    """Whether an episode's desktop failed before the agent took a step (its host
    could not be reached, the VM did not boot, VNC or the guest never answered)."""
    return status == "error" and steps == 0 and (error or "").startswith(_DESKTOP_TITLES)


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
    host_failures: dict[str, int] = field(default_factory=dict)
    """Desktops that failed at start-up, by host (a libvirt URI)."""
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

    def host_failed(self, host: str) -> None:
        self.host_failures[host] = self.host_failures.get(host, 0) + 1
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
        ) + "".join(f" · host {host} failed {count}×" for host, count in self.host_failures.items())

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


# -- the desktop pool -----------------------------------------------------------------


@dataclass(frozen=True)
class DesktopSpec:
    """What the batch asks its desktop factory for."""

    backend: str
    uri: str | None
    """The libvirt URI of the pool host; None: the backend's default."""
    index: int
    """The desktop's place on its host (0 .. capacity-1). Desktops that run at once
    on one host differ in it, and so do their VM names."""
    image: str | None
    """The VM image (libvirt: $DESKLOOP_IMAGE, else the task's app); None elsewhere."""


DesktopFactory = Callable[[DesktopSpec], Desktop]


def make_pool_desktop(spec: DesktopSpec) -> Desktop:
    return make_desktop(spec.backend, image=spec.image, uri=spec.uri, index=spec.index)


@dataclass
class Lease:
    """A desktop of the pool, lent to one try of a slot."""

    host: int
    """The host's position in the pool."""
    index: int
    image: str | None
    desktop: Desktop
    uri: str | None

    def where(self, backend: str) -> str:
        """The host for people and records: its URI (the desktop's own when the pool
        names none), else the backend."""
        if self.uri is not None:
            return self.uri
        return self.desktop.info().details.get("uri") or backend


@dataclass
class _Host:
    uri: str | None
    capacity: int
    idle: list[Lease] = field(default_factory=list)
    busy: set[int] = field(default_factory=set)
    down: str | None = None
    """Why the host is out of the pool (a desktop failed at start-up), or None."""

    def used(self) -> set[int]:
        return self.busy | {lease.index for lease in self.idle}

    def load(self) -> float:
        return len(self.used()) / self.capacity


class DesktopPool:
    """The desktops of one batch run, placed on hosts with free capacity.

    A desktop is lent for one try and given back after it; the next try that needs
    its image reuses it (the runner resets it first), so a VM's cold boot is paid
    once per place, not once per episode. A try asks for a desktop:

    1. an idle desktop of its image, else
    2. a new one on the host with the lowest share of its capacity in use, else
    3. a new one in place of an idle desktop of another image, which is closed;

    looking first at hosts that are up and not in `avoid` (the hosts on which this
    slot already failed), then at every host that is up. A host whose desktop failed
    at start-up is down: it gets nothing while another host is up, and comes back
    once a desktop on it works again. When every host is down, all of them count as
    up (the try fails fast and uses up the slot's retries rather than waiting
    forever). When nothing fits, the try waits for a desktop to be given back.
    """

    def __init__(
        self,
        backend: str,
        hosts: Sequence[tuple[str | None, int]],
        factory: DesktopFactory,
        log: Callable[[str], None] | None = None,
    ) -> None:
        if not hosts or any(capacity < 1 for _, capacity in hosts):
            raise DeskLoopError("a desktop pool needs hosts, each with capacity >= 1")
        self.backend = backend
        self._hosts = [_Host(uri, capacity) for uri, capacity in hosts]
        self._factory = factory
        self._log = log or (lambda text: None)
        self._changed = asyncio.Event()
        self.made: list[DesktopSpec] = []
        """Every desktop made, in order."""
        self.failures: dict[str, list[str]] = {}
        """Start-up failures by host (see `Lease.where`), in order."""

    def is_down(self, host: int) -> bool:
        return self._hosts[host].down is not None

    def in_use(self, host: int) -> int:
        """Places of `host` taken by desktops, lent or idle."""
        return len(self._hosts[host].used())

    async def acquire(self, image: str | None, avoid: Collection[int] = ()) -> Lease:
        while True:
            pick = self._pick(image, avoid)
            if pick is not None:
                break
            # No await between _pick and clear(): no give-back can slip in between.
            self._changed.clear()
            await self._changed.wait()
        number, reuse, evict = pick
        host = self._hosts[number]
        if reuse is not None:
            host.idle.remove(reuse)
            host.busy.add(reuse.index)
            return reuse
        if evict is not None:
            host.idle.remove(evict)
            index = evict.index
        else:
            index = min(set(range(host.capacity)) - host.used())
        # Hold the place before any await, so no other try counts it as free.
        host.busy.add(index)
        try:
            if evict is not None:
                await self._close(evict)
            spec = DesktopSpec(self.backend, host.uri, index, image)
            desktop = self._factory(spec)
        except BaseException:
            host.busy.discard(index)
            self._changed.set()
            raise
        self.made.append(spec)
        return Lease(number, index, image, desktop, host.uri)

    def _pick(
        self, image: str | None, avoid: Collection[int]
    ) -> tuple[int, Lease | None, Lease | None] | None:
        numbers = range(len(self._hosts))
        up = [n for n in numbers if self._hosts[n].down is None] or list(numbers)
        for tier in ([n for n in up if n not in avoid], up):
            for n in tier:
                for lease in self._hosts[n].idle:
                    if lease.image == image:
                        return n, lease, None
            free = [n for n in tier if len(self._hosts[n].used()) < self._hosts[n].capacity]
            if free:
                # Spread the load; ties go to the host given first.
                return min(free, key=lambda n: (self._hosts[n].load(), n)), None, None
            for n in tier:
                if self._hosts[n].idle:
                    return n, None, self._hosts[n].idle[0]
        return None

    def give_back(self, lease: Lease, *, host_ok: bool = True) -> None:
        """The desktop is fine for another episode. `host_ok`: it came up, so its
        host is up again if it was down."""
        host = self._hosts[lease.host]
        host.busy.discard(lease.index)
        host.idle.append(lease)
        if host_ok and host.down is not None:
            self._log(f"host {lease.where(self.backend)} works again")
            host.down = None
        self._changed.set()

    async def discard(self, lease: Lease, *, host_error: str | None = None) -> None:
        """Close a desktop that failed; `host_error`: it failed at start-up, so its
        host is down."""
        host = self._hosts[lease.host]
        if host_error is not None:
            where = lease.where(self.backend)
            self.failures.setdefault(where, []).append(host_error)
            # Down at once, before the close, so no try waiting now picks it.
            host.down = host_error
        try:
            await self._close(lease)
        finally:
            host.busy.discard(lease.index)
            self._changed.set()

    async def close(self) -> None:
        """Close every idle desktop (at the end of a run)."""
        for host in self._hosts:
            while host.idle:
                await self._close(host.idle.pop())

    async def _close(self, lease: Lease) -> None:
        try:
            await lease.desktop.close()
        except DeskLoopError as exc:
            # A desktop that failed may fail to close too; the next one must not wait.
            self._log(f"closing a desktop on {lease.where(self.backend)}: {exc}")


def pool_hosts(options: BatchOptions) -> list[tuple[str | None, int]]:
    """The pool's hosts: the libvirt URIs given, else the backend's default host, as
    large as the concurrency."""
    if options.hosts:
        return [(host.uri, host.capacity) for host in options.hosts]
    return [(None, options.concurrency)]


def desktop_image(backend: str, task: Task) -> str | None:
    """The VM image a task's episode needs: a VM image per app (gimp, blender,
    kdenlive), as for `deskloop run`; $DESKLOOP_IMAGE overrides. None: the backend
    has no images."""
    if backend != "libvirt":
        return None
    return os.environ.get("DESKLOOP_IMAGE") or task.app


# -- running --------------------------------------------------------------------------

AgentFactory = Callable[[str, Task, OpenAIConfig | None], Agent]
UserFactory = Callable[[Task], User]


def default_user_factory(options: BatchOptions, root: Path) -> UserFactory:
    def make(task: Task) -> User:
        if options.user == "simulated":
            return SimulatedUser()
        if options.user == "llm":
            config = LLMUserConfig.from_json(options.llm_user or {})
            return LLMUser(task, config, cache_dir=root / "llm-user-cache")
        raise DeskLoopError(f"unknown user {options.user!r}; expected simulated or llm")

    return make


def time_limit_error(limit: float) -> str:
    """Why the batch's time limit ended an episode (the runner adds where it was)."""
    return f"batch time limit of {limit:g} s exceeded"


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
        self._user_factory = user_factory or default_user_factory(options, store.root)
        self._log = log or (lambda text: None)
        self._progress_stream = progress_stream
        self.pool = DesktopPool(
            options.backend, pool_hosts(options), desktop_factory or make_pool_desktop, self._log
        )

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
            await self.pool.close()
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
        while True:
            try:
                slot, attempt = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            await self._run_slot(slot, attempt)

    async def _run_slot(self, slot: Slot, attempt: int) -> None:
        """Run one slot with its retries, each try on a desktop from the pool."""
        progress = self._progress
        task = self.tasks[slot.task_id]
        image = desktop_image(self.options.backend, task)
        failed_on: set[int] = set()
        last: EpisodeResult | None = None
        for try_index in range(self.options.retries + 1):
            if try_index:
                progress.retry()
            lease = await self.pool.acquire(image, failed_on)
            progress.running += 1
            progress.show()
            try:
                last, infrastructure = await self._run_episode(
                    task, slot, attempt + try_index, lease
                )
            except BaseException:
                # Cancelled (or the store failed): the desktop is closed with the pool.
                self.pool.give_back(lease, host_ok=False)
                raise
            finally:
                progress.running -= 1
            if last.status == "finished" or not infrastructure:
                self.pool.give_back(lease)
                break
            # A fresh desktop for the retry, on another host where one has room: the
            # old desktop, or its host, may be what failed.
            where = lease.where(self.options.backend)
            startup = failed_at_startup(last.status, last.steps, last.error)
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

    async def _run_episode(
        self, task: Task, slot: Slot, attempt: int, lease: Lease
    ) -> tuple[EpisodeResult, bool]:
        agent = self._agent_factory(slot.agent, task, self.options.openai)
        runner_box: list[EpisodeRunner] = []
        user = self._user_factory(task)
        bind = getattr(user, "bind_conversation", None)
        tagged = False
        placement: dict[str, Any] = {"desktop": lease.desktop.info().name}
        if self.options.backend == "libvirt":
            placement["libvirt_uri"] = lease.where(self.options.backend)
        if isinstance(user, LLMUser):
            # Only the words of the phases change; their triggers stay the task's.
            task, wordings = await user.phrase_phases()
            if wordings:
                placement["phase_wording"] = [wording.as_json() for wording in wordings]
        limit = self.options.time_limit or task.budget.seconds + DEFAULT_TIME_MARGIN
        window: asyncio.Timeout | None = None

        def cancel_reason() -> str | None:
            # The runner runs in this task, so a cancellation it sees is the window's
            # when the window has expired, and a Ctrl-C (an abort) otherwise.
            return time_limit_error(limit) if window is not None and window.expired() else None

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
            lease.desktop,
            agent,
            user,
            self.store,
            backend=self.options.backend,
            options=RunOptions(
                batch_id=self.batch_id,
                store_frames=self.options.store_frames,
                extra_config=placement,
                cancel_reason=cancel_reason,
            ),
            on_event=on_event,
        )
        runner_box.append(runner)
        if callable(bind):
            bind(lambda: runner.protocol.conversation if runner.protocol else [])
        try:
            # asyncio.timeout, not wait_for: the runner runs in this task, so
            # cancel_reason can ask the window whether it expired when the runner
            # records the cancellation (and 3.11's wait_for can swallow a Ctrl-C).
            async with asyncio.timeout(limit) as window:
                result = await runner.run()
        except TimeoutError:
            episode_id = runner.episode_id if runner.episode_id is not None else -1
            if episode_id >= 0:
                record = self.store.get_episode(episode_id)
                if record.status == "finished":
                    # The limit struck after the episode was recorded as finished
                    # (closing the agent): the finished record stands.
                    return _result_of(record), False
                error = record.error or time_limit_error(limit)
                steps = record.steps
            else:
                error, steps = time_limit_error(limit), 0
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
    store: Store,
    batch_id: str,
    *,
    concurrency: int | None = None,
    hosts: Sequence[Host] | None = None,
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
    options = BatchOptions.from_json(suite.get("options", {}), concurrency, hosts)
    return BatchRunner(store, batch_id, tasks, suite, options, **kwargs)
