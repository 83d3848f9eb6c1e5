"""The batch's desktop pool: libvirt URIs with capacities, placement, reuse, and
failover when a host cannot start a desktop.

The desktops here are fakes: these tests are about the scheduler's own logic
(which host a try lands on, how many desktops a host runs at once), not about a
backend. No VM is booted.
"""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import Any

import pytest

from app.agents.base import Observation
from app.batch import (
    BatchOptions,
    DesktopSpec,
    Host,
    hosts_from_env,
    parse_hosts,
    resume_batch,
    start_batch,
)
from app.batch.hosts import parse_host
from app.batch.pool import DesktopPool, pool_hosts
from app.batch.retry import failed_at_startup
from app.core.actions import Action, Done
from app.core.errors import (
    AgentError,
    AgentUnavailable,
    DeskLoopError,
    DesktopError,
)
from app.core.vocabulary import ERROR_KINDS, ErrorKind
from app.desktops.base import DesktopInfo
from app.desktops.factory import libvirt_desktop_name
from app.store import Store
from app.tasks.loader import load_task
from app.tasks.model import Task
from tests.still_desktop import EmptyGuest, QuietAgent, StillDesktop

DOWN = "qemu+ssh://down.example/system"
UP = "qemu+ssh://up.example/system"

# -- the pool syntax ------------------------------------------------------------------


def test_uri_with_capacity_parses() -> None:
    assert parse_host("qemu:///system") == Host("qemu:///system", 1)
    assert parse_host(" qemu+ssh://user@lab2:2222/system*4 ") == Host(
        "qemu+ssh://user@lab2:2222/system", 4
    )
    # Query parameters keep their '=': the capacity is only ever after the last '*'.
    assert parse_host("qemu+ssh://lab2/system?keyfile=/k&no_verify=1*2") == Host(
        "qemu+ssh://lab2/system?keyfile=/k&no_verify=1", 2
    )
    assert str(Host("test:///default", 3)) == "test:///default*3"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("lab2", "'lab2' is not a libvirt URI"),
        ("qemu:/system", "is not a libvirt URI"),
        ("qemu+ssh://lab2", "is not a libvirt URI"),  # no path (/system)
        ("*2", "'' is not a libvirt URI"),
        ("qemu:///system*", "capacity after '\\*' must be a whole number"),
        ("qemu:///system*two", "capacity after '\\*' must be a whole number"),
        ("qemu:///system*-1", "capacity after '\\*' must be a whole number"),
        ("qemu:///system*0", "capacity 0: a host runs at least 1 desktop"),
    ],
)
def test_bad_pool_entries_are_refused_with_the_entry_named(text: str, message: str) -> None:
    with pytest.raises(DeskLoopError, match=message) as info:
        parse_host(text)
    assert str(info.value).startswith(f"--libvirt-uri {text!r}")


def test_a_uri_given_twice_and_the_environment_variable() -> None:
    with pytest.raises(DeskLoopError, match="qemu:///system is given twice"):
        parse_hosts(["qemu:///system*2", "qemu:///system"])
    env = {"DESKLOOP_LIBVIRT_URIS": f"qemu:///system*2, {UP}*3"}
    assert hosts_from_env(env) == (Host("qemu:///system", 2), Host(UP, 3))
    assert hosts_from_env({}) == () and hosts_from_env({"DESKLOOP_LIBVIRT_URIS": " "}) == ()
    with pytest.raises(DeskLoopError, match="DESKLOOP_LIBVIRT_URIS='a:///x,,b:///y': an empty"):
        hosts_from_env({"DESKLOOP_LIBVIRT_URIS": "a:///x,,b:///y"})
    with pytest.raises(DeskLoopError, match=r"^DESKLOOP_LIBVIRT_URIS 'lab2'"):
        hosts_from_env({"DESKLOOP_LIBVIRT_URIS": "lab2"})


def test_concurrency_is_bounded_by_the_pool_and_the_pool_is_recorded() -> None:
    hosts = (Host("qemu:///system", 2), Host(UP, 2))
    with pytest.raises(DeskLoopError, match=r"concurrency 5 is more than the pool's total") as info:
        BatchOptions(backend="libvirt", concurrency=5, hosts=hosts)
    assert f"capacity 4 (qemu:///system*2 + {UP}*2)" in str(info.value)
    with pytest.raises(DeskLoopError, match="needs --backend libvirt, not local"):
        BatchOptions(backend="local", hosts=hosts)
    lower = BatchOptions(backend="libvirt", concurrency=3, hosts=hosts)
    assert pool_hosts(lower) == [("qemu:///system", 2), (UP, 2)]
    # A batch records its pool; resuming it gets the pool and, by default, all of it.
    again = BatchOptions.from_json(lower.to_json())
    assert again.hosts == hosts and again.concurrency == 4
    assert BatchOptions.from_json(lower.to_json(), 2).concurrency == 2
    moved = BatchOptions.from_json(lower.to_json(), None, (Host(DOWN, 1),))
    assert moved.hosts == (Host(DOWN, 1),) and moved.concurrency == 1
    # Without a pool: one host, the backend's default, as large as the concurrency.
    assert pool_hosts(BatchOptions(backend="libvirt", concurrency=3)) == [(None, 3)]
    assert BatchOptions.from_json(BatchOptions().to_json()).concurrency == 1


def test_vm_names_tell_hosts_and_places_apart() -> None:
    default = "qemu:///system"
    assert libvirt_desktop_name("gimp", None, 0, default_uri=default) == "run-gimp"
    assert libvirt_desktop_name("gimp", default, 0, default_uri=default) == "run-gimp"
    assert libvirt_desktop_name("gimp", None, 2, default_uri=default) == "run-gimp-2"
    names = {
        libvirt_desktop_name("blender", uri, index, default_uri=default)
        for uri in (UP, DOWN)
        for index in (0, 1)
    }
    assert len(names) == 4 and all(len(n) <= 40 for n in names)


# -- fakes: desktops whose host may be unreachable ------------------------------------


class FakeGuest(EmptyGuest):
    """A guest with no files whose `exists` hangs while the world says so."""

    def __init__(self, world: World) -> None:
        self.world = world

    async def exists(self, path: str) -> bool:
        if self.world.guest_hangs:
            await asyncio.Event().wait()
        return False


class FakeDesktop(StillDesktop):
    """Starts unless its host is in `unreachable`; counts what runs on each host. Its
    screen is StillDesktop's (black, still, never dies)."""

    def __init__(self, spec: DesktopSpec, world: World) -> None:
        self.spec = spec
        self.world = world
        self.guest = FakeGuest(world)
        self.state = "stopped"
        self.resets = 0

    def info(self) -> DesktopInfo:
        libvirt = self.spec.backend == "libvirt"
        return DesktopInfo(
            name=f"fake-{self.spec.index}-{self.spec.image}",
            backend=self.spec.backend,
            state=self.state,
            width=64,
            height=48,
            details={"uri": self.spec.uri or "qemu:///default"} if libvirt else {},
        )

    async def reset(self) -> None:
        if self.spec.uri in self.world.unreachable:
            raise DesktopError(f"cannot connect to libvirt at {self.spec.uri}: no route")
        self.state = "running"
        self.resets += 1
        running = self.world.running.setdefault(self.spec.uri, set())
        running.add(id(self))
        self.world.peak[self.spec.uri] = max(self.world.peak.get(self.spec.uri, 0), len(running))

    async def close(self) -> None:
        self.state = "closed"
        self.world.running.get(self.spec.uri, set()).discard(id(self))


class World:
    def __init__(self, unreachable: set[str | None] | None = None) -> None:
        self.unreachable = unreachable or set()
        self.guest_hangs = False
        """The guest never answers (scoring hangs)."""
        self.desktops: list[FakeDesktop] = []
        self.running: dict[str | None, set[int]] = {}
        self.peak: dict[str | None, int] = {}

    def factory(self, spec: DesktopSpec) -> FakeDesktop:
        desktop = FakeDesktop(spec, self)
        self.desktops.append(desktop)
        return desktop


async def settle_loop() -> None:
    """Let every ready task run until each waits on something (no timers involved)."""
    for _ in range(20):
        await asyncio.sleep(0)


# -- the pool's own logic -------------------------------------------------------------


async def test_placement_spreads_load_and_never_exceeds_a_capacity() -> None:
    world = World()
    pool = DesktopPool("libvirt", [("a:///x", 2), ("b:///y", 1)], world.factory)
    leases = [await pool.acquire("gimp") for _ in range(3)]
    assert [(lease.uri, lease.index) for lease in leases] == [
        ("a:///x", 0),
        ("b:///y", 0),
        ("a:///x", 1),
    ]
    waiting = asyncio.ensure_future(pool.acquire("gimp"))
    await settle_loop()
    assert not waiting.done()  # every place is taken
    pool.give_back(leases[1])
    again = await waiting
    assert again is leases[1]  # the idle desktop is reused, not a new one made
    assert len(pool.made) == 3 and pool.in_use(0) == 2 and pool.in_use(1) == 1


async def test_an_idle_desktop_of_another_image_makes_room() -> None:
    world = World()
    pool = DesktopPool("libvirt", [("a:///x", 1)], world.factory)
    gimp = await pool.acquire("gimp")
    pool.give_back(gimp)
    blender = await pool.acquire("blender")
    assert blender is not gimp and blender.index == 0
    assert world.desktops[0].state == "closed"  # the gimp VM made way
    pool.give_back(blender)
    assert await pool.acquire("blender") is blender


async def test_a_host_that_failed_at_startup_gets_nothing_while_another_is_up() -> None:
    world = World()
    pool = DesktopPool("libvirt", [(DOWN, 2), (UP, 1)], world.factory)
    on_down = await pool.acquire("gimp")
    on_up = await pool.acquire("gimp")
    assert (on_down.uri, on_up.uri) == (DOWN, UP)
    await pool.discard(on_down, host_error="Desktop error: cannot connect")
    assert pool.is_down(0) and pool.failures == {DOWN: ["Desktop error: cannot connect"]}
    # The down host has room, but the try waits for the host that works...
    waiting = asyncio.ensure_future(pool.acquire("gimp", {0}))
    await settle_loop()
    assert not waiting.done()
    pool.give_back(on_up)
    assert (await waiting) is on_up
    # ...and a try that did not fail there itself is kept off it too.
    other = asyncio.ensure_future(pool.acquire("gimp"))
    await settle_loop()
    assert not other.done()
    other.cancel()
    # When every host is down, the try goes to a down host rather than wait forever.
    await pool.discard(on_up, host_error="Desktop error: no route")
    last_resort = await pool.acquire("gimp", {1})
    assert last_resort.uri == DOWN
    # A desktop that works there brings the host back.
    pool.give_back(last_resort)
    assert not pool.is_down(0) and pool.is_down(1)
    assert [spec.uri for spec in pool.made] == [DOWN, UP, DOWN]


async def test_a_retry_prefers_another_host_but_does_not_wait_for_one() -> None:
    world = World()
    pool = DesktopPool("libvirt", [("a:///x", 1), ("b:///y", 1)], world.factory)
    first = await pool.acquire(None)
    # An error that is not the host's (the model endpoint, say): a fresh desktop,
    # preferably elsewhere.
    await pool.discard(first)
    assert not pool.is_down(0)
    moved = await pool.acquire(None, {0})
    assert moved.uri == "b:///y"
    # The other host is busy: the host that failed has room, and is still up.
    second = await pool.acquire(None, {0})
    assert second.uri == "a:///x" and second.desktop is not first.desktop


@pytest.mark.parametrize("kind", ERROR_KINDS)
def test_startup_failures_are_told_from_other_errors(kind: ErrorKind) -> None:
    # Only the desktop side failing before the agent's first step takes a host down.
    of_the_desktop = kind in ("desktop", "vnc", "guest")
    assert failed_at_startup("error", 0, kind) is of_the_desktop
    assert not failed_at_startup("error", 3, kind)  # the desktop had come up
    assert not failed_at_startup("finished", 0, kind)
    assert not failed_at_startup("error", 0, None)  # an error of unknown kind


# -- a batch over a pool with a host down ---------------------------------------------

TINY_TASK = """\
id: pool-proof
app: gimp
level: L1
title: Make a proof file
instruction: Create the file ~/proof.txt.
budget: {steps: 5, seconds: 60}
evaluate:
  all:
    - {check: file_exists, path: ~/proof.txt}
"""


def tiny_task(tmp_path: Path) -> Task:
    folder = tmp_path / "tasks" / "gimp"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pool-proof.yaml").write_text(TINY_TASK)
    return load_task(folder / "pool-proof.yaml")


def run_kwargs(world: World, **extra: Any) -> dict[str, Any]:
    return {"desktop_factory": world.factory, "progress_stream": io.StringIO(), **extra}


async def test_a_batch_fails_over_from_a_host_that_cannot_start_desktops(
    tmp_path: Path,
) -> None:
    task = tiny_task(tmp_path)
    world = World(unreachable={DOWN})
    store = Store(tmp_path / "db.sqlite")
    logged: list[str] = []
    progress = io.StringIO()
    options = BatchOptions(
        backend="libvirt", concurrency=3, retries=2, hosts=(Host(DOWN, 1), Host(UP, 2))
    )
    kwargs = run_kwargs(world, log=logged.append, progress_stream=progress)
    runner = start_batch(store, [task], ["null"], 6, options, batch_id="pool", **kwargs)
    rows = await runner.run()

    assert [row.status for row in rows] == ["finished"] * 6
    # One desktop tried the down host; after that, nothing more was placed there.
    assert [spec.uri for spec in runner.pool.made].count(DOWN) == 1
    assert sorted(spec.index for spec in runner.pool.made if spec.uri == UP) == [0, 1]
    assert world.peak == {UP: 2}  # never more than the host's capacity at once
    assert all(d.state == "closed" for d in world.desktops)  # every desktop closed
    (failure,) = runner.host_failures[DOWN]
    assert failure == f"Desktop error: cannot connect to libvirt at {DOWN}: no route"
    assert list(runner.host_failures) == [DOWN]
    assert any(DOWN in line and "retrying on a fresh desktop" in line for line in logged)
    assert f"host {DOWN} failed 1×" in progress.getvalue()

    # Each try records the host it ran on; the failed try is kept.
    tries = sorted(store.list_episodes(batch_id="pool", limit=None), key=lambda e: e.id)
    assert len(tries) == 7
    failed = [e for e in tries if e.status == "error"]
    assert [e.config["libvirt_uri"] for e in failed] == [DOWN]
    assert failed[0].error == failure and failed[0].error_kind == "desktop"
    assert all(e.config["libvirt_uri"] == UP for e in tries if e.status == "finished")
    store.close()


class BrokenAgent(QuietAgent):
    """Raises `error`, when it has one, at its first decision; else says DONE."""

    name = "broken"

    def __init__(self, error: DeskLoopError | None) -> None:
        self.error = error

    async def decide(self, observation: Observation) -> Action:
        if self.error is not None:
            raise self.error
        return Done()


def broken_agents(error: DeskLoopError, fails: int) -> Any:
    """An agent factory whose first `fails` episodes' agents raise `error`."""
    made: list[BrokenAgent] = []

    def factory(spec: str, task: Task, openai: object) -> BrokenAgent:
        # The first call is start_batch's check that the spec builds.
        agent = BrokenAgent(error if 1 <= len(made) <= fails else None)
        made.append(agent)
        return agent

    return factory


@pytest.mark.parametrize(
    ("error", "tries"),
    [
        (AgentUnavailable("model endpoint failed after 4 retries"), 2),  # retried
        (AgentError("the scripted agent's file is gone"), 1),  # would fail again
    ],
)
async def test_an_agent_error_before_the_first_step_leaves_the_host_up(
    tmp_path: Path, error: DeskLoopError, tries: int
) -> None:
    task = tiny_task(tmp_path)
    world = World()
    store = Store(tmp_path / "db.sqlite")
    options = BatchOptions(backend="libvirt", concurrency=1, retries=2, hosts=(Host(UP, 1),))
    kwargs = run_kwargs(world, agent_factory=broken_agents(error, 1))
    runner = start_batch(store, [task], ["broken"], 1, options, **kwargs)
    (row,) = await runner.run()
    tries_ = sorted(store.list_episodes(limit=None), key=lambda e: e.id)
    assert len(tries_) == tries and row.attempts == tries
    assert (tries_[0].steps, tries_[0].error_kind) == (0, error.kind)
    # Not the desktop's failure: the host stays in the pool.
    assert runner.host_failures == {} and not runner.pool.is_down(0)
    store.close()


async def test_every_host_down_ends_the_slot_as_an_error_after_its_retries(
    tmp_path: Path,
) -> None:
    task = tiny_task(tmp_path)
    world = World(unreachable={DOWN, UP})
    store = Store(tmp_path / "db.sqlite")
    options = BatchOptions(
        backend="libvirt", concurrency=1, retries=2, hosts=(Host(DOWN, 1), Host(UP, 1))
    )
    runner = start_batch(store, [task], ["null"], 1, options, **run_kwargs(world))
    (row,) = await runner.run()
    assert row.status == "error" and row.attempts == 3
    # Tries alternate: each retry goes to the host this slot has not failed on yet.
    assert [spec.uri for spec in runner.pool.made] == [DOWN, UP, DOWN]
    assert {host: len(errors) for host, errors in runner.host_failures.items()} == {
        DOWN: 2,
        UP: 1,
    }
    store.close()


async def test_resume_takes_a_new_pool(tmp_path: Path) -> None:
    task = tiny_task(tmp_path)
    store = Store(tmp_path / "db.sqlite")
    options = BatchOptions(backend="libvirt", hosts=(Host(DOWN, 1),))
    start_batch(store, [task], ["null"], 2, options, batch_id="moved")
    world = World(unreachable={DOWN})
    resumed = resume_batch(store, "moved", hosts=(Host(UP, 2),), **run_kwargs(world))
    assert resumed.options.concurrency == 2
    rows = await resumed.run()
    assert [row.status for row in rows] == ["finished", "finished"]
    assert {spec.uri for spec in resumed.pool.made} == {UP}
    with pytest.raises(DeskLoopError, match="concurrency 3 is more than the pool's total"):
        resume_batch(store, "moved", concurrency=3)
    store.close()
