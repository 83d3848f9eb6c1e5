"""A batch's warm pool on real local desktops: the next slot's desktop is set up while
the current episode runs, its episode is recorded as completely as one that set up
its own desktop, and a warm desktop no slot takes any more is closed."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from app.agents.adapters.deskloop import DeskLoopConfig
from app.agents.base import Agent, Observation
from app.batch import BatchOptions, BatchRunner, DesktopSpec, start_batch
from app.core.actions import Action, Done, Type
from app.core.errors import DeskLoopError
from app.desktops.base import Desktop
from app.episode.launch import make_spec_desktop
from app.store import Store
from app.tasks.loader import load_task
from app.tasks.model import Task
from tests.still_desktop import QuietAgent
from tests.xterm_task import write_xterm_task


class _ProofAgent(QuietAgent):
    """Types the command that makes the proof file, then says DONE."""

    name = "proof"

    def __init__(self) -> None:
        self.turn = 0

    async def decide(self, observation: Observation) -> Action:
        self.turn += 1
        return Type("touch ~/proof.txt\n") if self.turn == 1 else Done()


class _StuckAgent(_ProofAgent):
    """Never answers: the episode runs until the test stops the batch."""

    name = "stuck"

    def __init__(self, started: asyncio.Event) -> None:
        super().__init__()
        self.started = started

    async def decide(self, observation: Observation) -> Action:
        self.started.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


def _made(made: list[Desktop]) -> Any:
    def factory(spec: DesktopSpec) -> Desktop:
        desktop = make_spec_desktop(spec)
        made.append(desktop)
        return desktop

    return factory


def start_one_agent_batch(
    store: Store,
    task: Task,
    agent: Callable[[], Agent],
    repeats: int,
    options: BatchOptions,
    batch_id: str,
    **kwargs: Any,
) -> BatchRunner:
    """A batch of `repeats` of `task` by one agent, a new `agent()` for each episode (its
    spec: the agent's name), its progress kept off the output; `kwargs` go to
    start_batch (a desktop factory)."""

    def agents(spec: str, task: Task, openai: DeskLoopConfig | None) -> Agent:
        return agent()

    return start_batch(
        store,
        [task],
        [agent().name],
        repeats,
        options,
        batch_id=batch_id,
        agent_factory=agents,
        progress_stream=io.StringIO(),
        **kwargs,
    )


def test_warm_desktops_take_places_of_the_pool() -> None:
    from app.batch.hosts import parse_hosts
    from app.batch.pool import pool_hosts

    assert pool_hosts(BatchOptions(concurrency=2, warm=1)) == [(None, 3)]
    hosts = parse_hosts(["qemu:///system*2"])
    with pytest.raises(DeskLoopError, match=r"1 warm desktop.*need 3 places.*capacity 2"):
        BatchOptions(backend="libvirt", hosts=hosts, concurrency=2, warm=1)
    with pytest.raises(DeskLoopError, match="warm must be >= 0"):
        BatchOptions(warm=-1)
    options = BatchOptions(concurrency=1, warm=2)
    assert BatchOptions.from_json(options.to_json(), 1).warm == 2


@pytest.mark.desktop
async def test_the_next_slot_runs_on_a_warm_desktop_recorded_as_completely(
    tmp_path: Path,
) -> None:
    task = load_task(write_xterm_task(tmp_path))
    made: list[Desktop] = []
    with Store(tmp_path / "db.sqlite") as store:
        runner = start_one_agent_batch(
            store,
            task,
            _ProofAgent,
            3,
            BatchOptions(concurrency=1, warm=1),
            "warm",
            desktop_factory=_made(made),
        )
        rows = await runner.run()
        assert [row.status for row in rows] == ["finished"] * 3
        assert all(row.episode is not None and row.episode.passed for row in rows)
        # Slot 0 set up its own desktop; slots 1 and 2 started on desktops set up
        # while the slot before ran: two desktops in all, each reused.
        assert len(made) == 2 and runner.warm.prepared == 2
        episodes = sorted(store.list_episodes(batch_id="warm", limit=None), key=lambda e: e.id)
        setups = [e.setup for e in episodes]
        assert all(setup is not None for setup in setups)
        assert [setup["warm"] for setup in setups if setup] == [False, True, True]
        cold, *warm = episodes
        for episode in warm:
            setup = episode.setup
            assert setup is not None and cold.setup is not None
            # The same setup, line for line, with its own time...
            assert [text for _, text in setup["lines"]] == [text for _, text in cold.setup["lines"]]
            assert any(text.startswith("launch xterm") for _, text in setup["lines"])
            assert setup["seconds"] > 0 and not setup["failed"]
            # ...done before the episode began, on the other desktop.
            assert setup["started_at"] < episode.started_at.isoformat()
            # The steps, their frames and messages, and the final frame: as the cold one.
            steps, cold_steps = store.steps(episode.id), store.steps(cold.id)
            assert [s.kind for s in steps] == [s.kind for s in cold_steps] == ["type", "done"]
            assert all(s.frame and store.frame_path(s.frame).is_file() for s in steps)
            assert episode.final_frame and store.frame_path(episode.final_frame).is_file()
            assert [m.text for m in store.messages(episode.id)] == [
                m.text for m in store.messages(cold.id)
            ]
            assert [c.passed for c in store.checks(episode.id)] == [True]
        names = [e.config["desktop"] for e in episodes]
        assert names[0] != names[1] and names[0] == names[2]  # the two desktops, in turn
    assert all(d.info().state != "running" for d in made)


@pytest.mark.desktop
async def test_a_warm_desktop_no_slot_needs_is_closed(tmp_path: Path) -> None:
    task = load_task(write_xterm_task(tmp_path))
    made: list[Desktop] = []
    started = asyncio.Event()
    with Store(tmp_path / "db.sqlite") as store:
        runner = start_one_agent_batch(
            store,
            task,
            lambda: _StuckAgent(started),
            2,
            BatchOptions(concurrency=1, warm=1),
            "unneeded",
            desktop_factory=_made(made),
        )
        running = asyncio.create_task(runner.run())
        async with asyncio.timeout(120):
            await started.wait()
            # Slot 1's desktop is being set up (or is ready) while slot 0 runs.
            while len(made) < 2 or made[1].info().state != "running":
                await asyncio.sleep(0.1)  # polling a desktop's state, bounded above
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        episodes = store.list_episodes(batch_id="unneeded", limit=None)
        # Slot 1 never began: its desktop was closed, and nothing was recorded for it.
        assert [(e.status, e.end_reason) for e in episodes] == [("error", "aborted")]
    assert len(made) == 2
    assert [d.info().state for d in made] == ["closed", "closed"]


@pytest.mark.desktop
async def test_a_setup_that_fails_on_a_warm_desktop_is_recorded_as_a_cold_one(
    tmp_path: Path,
) -> None:
    path = write_xterm_task(tmp_path)
    # The window awaited never comes: setup fails after the xterm opened.
    path.write_text(
        path.read_text().replace("{class: XTerm, timeout: 60}", "{class: Nope, timeout: 3}")
    )
    task = load_task(path)
    with Store(tmp_path / "db.sqlite") as store:
        runner = start_one_agent_batch(
            store, task, _ProofAgent, 2, BatchOptions(concurrency=1, warm=1, retries=0), "failing"
        )
        rows = await runner.run()
        assert [row.status for row in rows] == ["error", "error"]
        cold, warm = sorted(store.list_episodes(batch_id="failing", limit=None), key=lambda e: e.id)
        assert cold.setup is not None and warm.setup is not None
        assert (cold.setup["warm"], warm.setup["warm"]) == (False, True)
        for episode in (cold, warm):
            assert episode.setup is not None and episode.setup["failed"]
            assert episode.error_kind == cold.error_kind == "desktop"
            assert episode.error is not None and "setup[1]" in episode.error
            # The setup's last screen and the windows open then, as a cold one keeps them.
            assert episode.final_frame and episode.final_frame.endswith("setup-failed.png")
            assert store.frame_path(episode.final_frame).is_file()
            assert episode.final_windows is not None
            assert any(w.wm_class == "XTerm" for w in episode.final_windows.windows)
            assert episode.steps == 0 and store.steps(episode.id) == []
