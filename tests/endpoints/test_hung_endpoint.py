"""A model endpoint that hangs or trickles, against a real local HTTP server: the call
ends within its deadline, the episode ends as an infrastructure error (never a scored
finish), the time budget tells a failing endpoint from a slow one, a batch retries the
episode on a fresh desktop and the figures do not count it as the agent's failure; and
what a step keeps of a huge rejected answer is capped.

The desktops are stand-ins with no display (tests.still_desktop, the batch pool's fake
desktops): these tests are about the endpoint, the runner, the batch and the store.
"""

from __future__ import annotations

import io
import time
from pathlib import Path
from typing import Any

import pytest

from app.agents.adapters.deskloop import DeskLoopAgent, DeskLoopConfig
from app.batch import BatchOptions, start_batch
from app.core.errors import EndpointUnavailable, is_infrastructure
from app.episode.runner import EpisodeRunner
from app.metrics.summary import outcome, summarize
from app.store import Store
from app.store.values import RAW_TEXT_LIMIT, cut_note
from app.tasks.loader import load_task
from app.tasks.model import Task
from app.users.simulated import SimulatedUser
from tests.batch.test_batch_pool import World
from tests.endpoints.test_endpoints import SLACK, complete, within
from tests.fake_openai import FakeEndpoint, Reply, hang, tool_reply, trickling
from tests.still_desktop import StillDesktop

TASK = """\
id: endpoint-proof
app: gimp
level: L1
title: Make a proof file
instruction: Create the file ~/proof.txt.
budget: {{steps: {steps}, seconds: {seconds}}}
evaluate:
  all:
    - {{check: file_exists, path: ~/proof.txt}}
"""
STARTUP = 2.0
"""Seconds an episode on a still desktop may take besides the model call: the store's
writes, a tiny frame's PNG, scoring a guest with no files (a loaded 2-core machine)."""


def make_task(tmp_path: Path, *, steps: int = 5, seconds: float = 600) -> Task:
    folder = tmp_path / "tasks" / "gimp"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "endpoint-proof.yaml"
    path.write_text(TASK.format(steps=steps, seconds=seconds))
    return load_task(path)


def config(base_url: str, **overrides: Any) -> DeskLoopConfig:
    values: dict[str, Any] = {"model": "fake-vision-1", "base_url": base_url, "backoff": 0.01}
    return DeskLoopConfig(**(values | overrides))


async def run_episode(task: Task, store: Store, agent_config: DeskLoopConfig) -> Any:
    runner = EpisodeRunner(
        task, StillDesktop(), DeskLoopAgent(agent_config), SimulatedUser(), store, backend="local"
    )
    return await runner.run()


# -- the call ----------------------------------------------------------------------


async def test_a_server_trickling_a_byte_a_second_cannot_outlast_the_deadline() -> None:
    # Every read gets a byte within a second, so a 30 s per-read timeout never strikes.
    with FakeEndpoint([trickling(1.0)]) as endpoint:
        started = time.monotonic()
        with pytest.raises(EndpointUnavailable, match="within the call's 2 s deadline"):
            await within(complete(endpoint.base_url, timeout=30.0, deadline=2.0), 2.0 + SLACK)
        elapsed = time.monotonic() - started
    assert elapsed >= 2.0


async def test_each_try_is_bounded_over_its_whole_response() -> None:
    # A try may take 0.6 s in all, however steadily the bytes come; the deadline is far.
    with FakeEndpoint([trickling(0.1)] * 3) as endpoint:
        started = time.monotonic()
        with pytest.raises(EndpointUnavailable) as caught:
            await within(
                complete(endpoint.base_url, timeout=0.6, max_retries=2, deadline=30.0),
                3 * 0.6 + SLACK + 1.0,
            )
        elapsed = time.monotonic() - started
    assert len(endpoint.received) == 3 and elapsed >= 3 * 0.6
    assert "failed after 2 retries; last: timed out after 0.6 s (no whole answer)" in str(
        caught.value
    )


# -- the episode -------------------------------------------------------------------


@pytest.mark.parametrize("server", [hang(60), trickling(1.0)], ids=["silent", "trickling"])
async def test_a_hung_endpoint_ends_the_episode_as_an_infrastructure_error(
    server: Reply, tmp_path: Path
) -> None:
    task = make_task(tmp_path, seconds=600)
    with FakeEndpoint([server]) as endpoint, Store(tmp_path / "db.sqlite") as store:
        started = time.monotonic()
        result = await within(
            run_episode(task, store, config(endpoint.base_url, timeout=30.0, deadline=2.0)),
            2.0 + SLACK + STARTUP,
        )
        elapsed = time.monotonic() - started
        (record,) = store.list_episodes(limit=None)
    assert elapsed >= 2.0  # the deadline, not the 600 s budget, ended it
    assert (result.status, result.end_reason, result.score, result.passed) == (
        "error",
        "error",
        None,
        None,
    )
    assert result.error_kind == "agent_unavailable" and is_infrastructure(result.error_kind)
    assert "within the call's 2 s deadline" in (result.error or "")
    assert (record.status, record.end_reason, record.error_kind, record.score) == (
        "error",
        "error",
        "agent_unavailable",
        None,
    )
    assert outcome(record) == "error"  # not the agent's failure


async def test_the_budget_ends_a_call_to_a_failing_endpoint_as_an_infrastructure_error(
    tmp_path: Path,
) -> None:
    # The call could go on for 600 s, retrying tries that time out after 0.5 s; the
    # task's budget is 2 s. The episode stops at the budget, and not as a finish.
    task = make_task(tmp_path, seconds=2)
    with FakeEndpoint([hang(60)] * 20) as endpoint, Store(tmp_path / "db.sqlite") as store:
        agent_config = config(endpoint.base_url, timeout=0.5, max_retries=20, deadline=600.0)
        result = await within(run_episode(task, store, agent_config), 2.0 + SLACK + STARTUP)
        (record,) = store.list_episodes(limit=None)
    assert len(endpoint.received) >= 2  # it had failed, and was retrying
    assert (result.status, result.score, result.error_kind) == ("error", None, "agent_unavailable")
    assert "had not answered when the time budget ran out" in (result.error or "")
    assert "timed out after 0.5 s" in (result.error or "")
    assert (record.status, record.error_kind) == ("error", "agent_unavailable")


async def test_the_budget_ends_a_slow_model_as_the_agents_time(tmp_path: Path) -> None:
    # The one try is still within its 30 s when the 1.5 s budget runs out: nothing has
    # failed, the model is thinking, and thinking time is the agent's.
    task = make_task(tmp_path, seconds=1.5)
    with FakeEndpoint([hang(60)]) as endpoint, Store(tmp_path / "db.sqlite") as store:
        agent_config = config(endpoint.base_url, timeout=30.0, deadline=600.0)
        result = await within(run_episode(task, store, agent_config), 1.5 + SLACK + STARTUP)
    assert (result.status, result.end_reason) == ("finished", "time_budget")
    assert result.score == 0.0 and result.error_kind is None


# -- the batch ---------------------------------------------------------------------


async def test_a_batch_retries_an_episode_whose_endpoint_hung(tmp_path: Path) -> None:
    task = make_task(tmp_path, seconds=600)
    world = World()
    # The first try's one request hangs; the retry's is answered at once.
    replies = [hang(60), tool_reply("done")]
    with FakeEndpoint(replies) as endpoint, Store(tmp_path / "db.sqlite") as store:
        options = BatchOptions(
            retries=1,
            openai=config(endpoint.base_url, timeout=30.0, max_retries=0, deadline=1.5),
        )
        logged: list[str] = []
        runner = start_batch(
            store,
            [task],
            ["openai"],
            1,
            options,
            batch_id="hung",
            desktop_factory=world.factory,
            progress_stream=io.StringIO(),
            log=logged.append,
        )
        (row,) = await within(runner.run(), 1.5 + SLACK + 2 * STARTUP)
        tries = sorted(store.list_episodes(batch_id="hung", limit=None), key=lambda e: e.id)
        everything = summarize(store)
        the_batch = summarize(store, batch_id="hung")
    assert [(t.status, t.end_reason, t.error_kind) for t in tries] == [
        ("error", "error", "agent_unavailable"),
        ("finished", "done", None),
    ]
    assert row.status == "finished" and row.attempts == 2
    assert len(world.desktops) == 2  # the retry ran on a fresh desktop
    assert any("retrying on a fresh desktop" in line for line in logged)
    # The figures count the slot once, by its final try (a DONE that fails the check on
    # a desktop with no files): the hung try is a replaced retry, not a failed attempt.
    for figures in (everything.overall, the_batch.overall):
        assert figures is not None
        assert (figures.failed, figures.errors, figures.retries) == (1, 0, 1)


# -- what a step keeps of a huge answer ----------------------------------------------


async def test_a_megabyte_answer_at_every_step_keeps_the_database_small(tmp_path: Path) -> None:
    steps = 40
    huge = "x" * 1_000_000  # tool arguments that are not JSON: a rejected step each
    task = make_task(tmp_path, steps=steps, seconds=600)
    db = tmp_path / "db.sqlite"
    with FakeEndpoint([tool_reply("click", huge)] * steps) as endpoint, Store(db) as store:
        result = await run_episode(task, store, config(endpoint.base_url, deadline=60.0))
        recorded = store.steps(result.episode_id)
    assert result.end_reason == "step_budget" and len(recorded) == steps
    first = recorded[0]
    kept = RAW_TEXT_LIMIT * "x" + cut_note(len(huge), RAW_TEXT_LIMIT)
    assert kept.endswith("[cut by the store at 4000 of 1000000 characters]")
    assert first.action == {"kind": "rejected", "raw": {"name": "click", "arguments": kept}}
    assert first.agent_info is not None and first.agent_info["tool_call"]["arguments"] == kept
    assert "arguments are not valid JSON" in (first.error or "")
    size = sum(p.stat().st_size for p in tmp_path.glob("db.sqlite*"))
    # 40 MB of answers came in; uncapped the steps would hold twice that.
    assert size < 2_000_000, f"{size} bytes"
