"""The batch's per-episode time limit: the stored and printed error says so, and
only the limit's own cancellations are worded that way."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

from app.agents.base import Observation
from app.batch import BatchOptions, start_batch
from app.core.actions import Action
from app.metrics.slots import table_json
from app.store import Store
from tests.batch.test_batch_pool import World, tiny_task
from tests.still_desktop import QuietAgent


class NeverAgent(QuietAgent):
    """Never answers: only a cancellation ends its episode."""

    name = "never"

    def __init__(self, asked: asyncio.Event) -> None:
        self.asked = asked

    async def decide(self, observation: Observation) -> Action:
        self.asked.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


async def test_the_time_limit_is_named_in_the_record_the_log_and_the_table(
    tmp_path: Path,
) -> None:
    task = tiny_task(tmp_path)
    world = World()
    store = Store(tmp_path / "db.sqlite")
    logged: list[str] = []
    runner = start_batch(
        store,
        [task],
        ["never"],
        1,
        BatchOptions(time_limit=1, retries=1),
        batch_id="slow",
        agent_factory=lambda spec, task, openai: NeverAgent(asyncio.Event()),
        desktop_factory=world.factory,
        progress_stream=io.StringIO(),
        log=logged.append,
    )
    (row,) = await runner.run()
    message = "batch time limit of 1 s exceeded during the episode"
    tries = sorted(store.list_episodes(batch_id="slow", limit=None), key=lambda e: e.id)
    assert [(t.status, t.end_reason, t.error) for t in tries] == [("error", "error", message)] * 2
    assert [t.error_kind for t in tries] == ["time_limit"] * 2  # what the retry decided by
    assert row.status == "error" and row.attempts == 2
    assert table_json([row])[0]["error"] == message
    assert logged == [
        f"{row.slot}: {message} (on local); retrying on a fresh desktop",
        f"{row.slot}: {message} (on local); no retries left",
    ]
    assert not any("aborted" in line for line in logged)
    store.close()


async def test_a_limit_that_strikes_during_scoring_says_so(tmp_path: Path) -> None:
    task = tiny_task(tmp_path)
    world = World()
    world.guest_hangs = True
    store = Store(tmp_path / "db.sqlite")
    runner = start_batch(
        store,
        [task],
        ["null"],
        1,
        BatchOptions(time_limit=1, retries=0),
        desktop_factory=world.factory,
        progress_stream=io.StringIO(),
    )
    (row,) = await runner.run()
    assert row.episode is not None
    assert row.episode.error == "batch time limit of 1 s exceeded during scoring"
    assert row.episode.error_kind == "time_limit"
    store.close()


async def test_other_cancellations_stay_aborts(tmp_path: Path) -> None:
    task = tiny_task(tmp_path)
    world = World()
    store = Store(tmp_path / "db.sqlite")
    asked = asyncio.Event()
    runner = start_batch(
        store,
        [task],
        ["never"],
        1,
        BatchOptions(time_limit=600),
        batch_id="stopped",
        agent_factory=lambda spec, task, openai: NeverAgent(asked),
        desktop_factory=world.factory,
        progress_stream=io.StringIO(),
    )
    running = asyncio.ensure_future(runner.run())
    await asyncio.wait_for(asked.wait(), 60)
    running.cancel()  # Ctrl-C, say: not the time limit
    done, _ = await asyncio.wait({running}, timeout=60)
    assert done and running.cancelled()
    (episode,) = store.list_episodes(batch_id="stopped", limit=None)
    assert (episode.status, episode.end_reason, episode.error) == (
        "error",
        "aborted",
        "aborted during episode",
    )
    assert episode.error_kind == "aborted"
    assert all(d.state == "closed" for d in world.desktops)
    store.close()
