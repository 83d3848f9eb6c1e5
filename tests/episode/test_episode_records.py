"""The episode recorder against a real in-memory store: each message of the
conversation is recorded once, known by the number the protocol gave it, and a step
names its active message by the id that message got in the store."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.core.actions import Type
from app.episode.control import RunOptions
from app.episode.events import MessageEvent, Reporter, RunnerEvent
from app.episode.protocol import PhaseSpec, Protocol
from app.episode.records import EpisodeRecorder
from app.store import Store
from app.tasks.loader import load_task
from app.tasks.model import Task
from tests.xterm_task import write_xterm_task


@pytest.fixture
def task(tmp_path: Path) -> Task:
    """The xterm task with one phase, delivered after one action."""
    path = write_xterm_task(tmp_path)
    path.write_text(
        path.read_text()
        + "phases:\n  - message: Now the other thing.\n    trigger: {step_count: 1}\n"
    )
    return load_task(path)


def protocol_of(task: Task) -> Protocol:
    return Protocol(
        task.instruction,
        [PhaseSpec(p.message, p.trigger, p.kind) for p in task.phases],
        max_steps=10,
        max_seconds=100,
    )


async def started(store: Store, task: Task, events: list[RunnerEvent]) -> EpisodeRecorder:
    recorder = EpisodeRecorder(store, RunOptions(), Reporter(on_event=events.append))
    await recorder.start(
        task, agent="scripted", user_mode="simulated", backend="local", config={}, batch_id=None
    )
    return recorder


async def test_the_same_words_twice_are_two_messages_each_recorded_once(task: Task) -> None:
    events: list[RunnerEvent] = []
    with Store.memory() as store:
        recorder = await started(store, task, events)
        protocol = protocol_of(task)
        await recorder.record_messages(protocol.conversation)
        # A person sending the same line twice between two steps: equal messages.
        first = protocol.inject("Hurry.", "interruption")
        second = protocol.inject("Hurry.", "interruption")
        assert first == second and first.number != second.number
        await recorder.record_messages([first])
        # The whole conversation again: only what is new is recorded.
        await recorder.record_messages(protocol.conversation)
        await recorder.record_messages(protocol.conversation)
        texts = [m.text for m in store.messages(recorder.episode_id)]
        assert texts == [task.instruction, "Hurry.", "Hurry."]
        assert [e.message for e in events if isinstance(e, MessageEvent)] == [
            protocol.conversation[0],
            first,
            second,
        ]


async def test_a_step_names_its_active_message_by_its_id_in_the_store(task: Task) -> None:
    events: list[RunnerEvent] = []
    with Store.memory() as store:
        recorder = await started(store, task, events)
        protocol = protocol_of(task)
        await recorder.record_messages(protocol.conversation)
        for idx in range(2):
            active = protocol.active_message
            outcome = protocol.on_agent(Type("x"), 0.0)
            new = await recorder.record_step(
                idx=idx,
                action={"kind": "type", "text": "x"},
                kind="type",
                description="type 'x'",
                started_at=0.0,
                agent_seconds=0.0,
                act_seconds=0.0,
                settle_seconds=0.0,
                frame=None,
                phase_index=protocol.pending_phase,
                active=active,
                error=None,
                messages=outcome.messages,
                delivered_phase=outcome.delivered_phase,
            )
            assert new == list(outcome.messages)
        by_id = {m.id: m.text for m in store.messages(recorder.episode_id)}
        steps = store.steps(recorder.episode_id)
        assert [by_id[s.active_message_id] for s in steps if s.active_message_id] == [
            task.instruction,
            "Now the other thing.",
        ]
