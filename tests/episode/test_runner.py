"""The runner's own logic on a real local desktop (an xterm): rejected answers,
infrastructure errors, a person injecting messages, reviewing DONE, aborting."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import pytest

from app.agents.base import Observation
from app.core.actions import Action, Done, Type
from app.core.errors import AgentUnavailable, MalformedAction
from app.core.vocabulary import Source
from app.desktops.local.desktop import LocalDesktop
from app.episode.control import EpisodeControl
from app.episode.events import (
    EndedEvent,
    EpisodeResult,
    MessageEvent,
    RunnerEvent,
    StatusEvent,
    StepEvent,
)
from app.episode.runner import EpisodeRunner
from app.store import Store
from app.tasks.loader import load_task
from app.tasks.model import Task
from app.users.simulated import SimulatedUser, User
from tests.still_desktop import QuietAgent
from tests.xterm_task import write_xterm_task

pytestmark = pytest.mark.desktop


TOUCH = Type("touch ~/proof.txt\n")
Decision = Callable[[Observation], Action]


class ListAgent(QuietAgent):
    """Answers from a list; an entry may be an exception to raise instead."""

    name = "list"

    def __init__(self, answers: list[Action | Exception | Decision]) -> None:
        self.answers = answers
        self.seen: list[Observation] = []

    async def decide(self, observation: Observation) -> Action:
        self.seen.append(observation)
        answer = self.answers.pop(0) if self.answers else Done()
        if isinstance(answer, Exception):
            raise answer
        if callable(answer):
            return answer(observation)
        return answer

    def step_info(self) -> dict[str, Any] | None:
        return {"answered": len(self.seen)}


class ReviewingUser:
    """A person stand-in: gives the feedback list at DONEs, then accepts."""

    mode: Literal["simulated", "person"] = "person"
    reviews_done = True

    def __init__(self, feedback: list[str]) -> None:
        self.feedback = feedback

    async def answer(self, question: str) -> tuple[str, Source]:
        return "use the default", "person"

    async def review(self) -> str | None:
        return self.feedback.pop(0) if self.feedback else None


@pytest.fixture
def task(tmp_path: Path) -> Task:
    return load_task(write_xterm_task(tmp_path))


async def run(
    task: Task,
    agent: ListAgent,
    store: Store,
    user: User | None = None,
    control: EpisodeControl | None = None,
    events: list[RunnerEvent] | None = None,
) -> EpisodeResult:
    async with LocalDesktop() as desktop:
        runner = EpisodeRunner(
            task,
            desktop,
            agent,
            user or SimulatedUser(),
            store,
            backend="local",
            control=control,
            on_event=events.append if events is not None else None,
        )
        return await runner.run()


async def test_rejected_answer_is_recorded_and_agent_retries(task: Task, tmp_path: Path) -> None:
    agent = ListAgent([MalformedAction("no tool call in the answer", raw="I think..."), TOUCH])
    events: list[RunnerEvent] = []
    with Store(tmp_path / "db") as store:
        result = await run(task, agent, store, events=events)
        assert result.passed and result.steps == 3
        steps = store.steps(result.episode_id)
        assert steps[0].kind == "rejected" and steps[0].error == "no tool call in the answer"
        assert steps[0].action == {"kind": "rejected", "raw": "I think..."}
        assert steps[1].kind == "type" and steps[1].agent_info == {"answered": 2}
    assert isinstance(events[-1], EndedEvent) and events[-1].result.passed
    assert [e.idx for e in events if isinstance(e, StepEvent)] == [0, 1, 2]


async def test_out_of_screen_action_is_rejected_not_fatal(task: Task, tmp_path: Path) -> None:
    from app.core.actions import Click

    agent = ListAgent([Click(5000, 10), TOUCH])
    with Store(tmp_path / "db") as store:
        result = await run(task, agent, store)
        assert result.passed
        first = store.steps(result.episode_id)[0]
        assert first.kind == "click" and first.error is not None and "outside" in first.error


async def test_unavailable_agent_ends_episode_as_error(task: Task, tmp_path: Path) -> None:
    agent = ListAgent([AgentUnavailable("endpoint returned 503 three times")])
    with Store(tmp_path / "db") as store:
        result = await run(task, agent, store)
        assert result.status == "error" and result.passed is None
        assert result.error is not None and "503" in result.error
        stored = store.get_episode(result.episode_id)
        assert stored.status == "error" and stored.passed is None
        # What failed is recorded beside the words: a batch retries by it.
        assert result.error_kind == stored.error_kind == "agent_unavailable"


async def test_a_bug_is_recorded_as_an_internal_error(task: Task, tmp_path: Path) -> None:
    agent = ListAgent([KeyError("frame")])
    with Store(tmp_path / "db") as store:
        result = await run(task, agent, store)
        stored = store.get_episode(result.episode_id)
        assert (stored.status, stored.error, stored.error_kind) == (
            "error",
            "KeyError: 'frame'",
            "internal",
        )


async def test_injected_message_becomes_active_before_next_decision(
    task: Task, tmp_path: Path
) -> None:
    control = EpisodeControl()

    def inject_then_type(obs: Observation) -> Action:
        control.inject("Please hurry, the client is waiting.", "interruption")
        return TOUCH

    agent = ListAgent([inject_then_type, Done()])
    with Store(tmp_path / "db") as store:
        result = await run(task, agent, store, control=control)
        assert result.passed
        assert agent.seen[1].active_message.text == "Please hurry, the client is waiting."
        messages = store.messages(result.episode_id)
        injected = next(m for m in messages if m.kind == "interruption")
        assert injected.source == "person" and injected.step == 1


async def test_person_feedback_after_done_continues_episode(task: Task, tmp_path: Path) -> None:
    agent = ListAgent([Done(), TOUCH, Done()])
    user = ReviewingUser(["Not yet: the proof file is missing."])
    with Store(tmp_path / "db") as store:
        result = await run(task, agent, store, user=user)
        assert result.passed and result.end_reason == "done" and result.steps == 3
        kinds = [(m.role, m.kind) for m in store.messages(result.episode_id)]
        assert kinds == [
            ("user", "instruction"),
            ("agent", "done"),
            ("user", "feedback"),
            ("agent", "done"),
        ]
        assert agent.seen[1].active_message.text.startswith("Not yet")
        feedback = store.messages(result.episode_id)[2]
        assert (feedback.source, feedback.origin) == ("person", None)  # not a PersonUser's
        assert store.get_episode(result.episode_id).user_mode == "person"


async def test_abort_while_paused_records_aborted(task: Task, tmp_path: Path) -> None:
    control = EpisodeControl()
    events: list[RunnerEvent] = []

    def pause_then_type(obs: Observation) -> Action:
        control.pause()
        return TOUCH

    agent = ListAgent([pause_then_type, Done()])

    async def abort_when_paused() -> None:
        while not any(isinstance(e, StatusEvent) and e.text == "paused" for e in events):
            await asyncio.sleep(0.05)
        control.abort()

    with Store(tmp_path / "db") as store:
        result, _ = await asyncio.wait_for(
            asyncio.gather(
                run(task, agent, store, control=control, events=events), abort_when_paused()
            ),
            timeout=60,
        )
        assert result.status == "error" and result.end_reason == "aborted"
        assert len(agent.seen) == 1  # nothing decided after the pause
        stored = store.get_episode(result.episode_id)
        assert stored.end_reason == "aborted" and stored.steps == 1
        assert result.error_kind == stored.error_kind == "aborted"
    assert any(isinstance(e, MessageEvent) for e in events)


async def test_a_task_pinned_to_another_screen_ends_before_setup(tmp_path: Path) -> None:
    from app.agents.null import NullAgent
    from app.episode.runner import EpisodeRunner
    from app.store import Store
    from app.tasks.loader import load_task
    from app.users.simulated import SimulatedUser
    from tests.still_desktop import StillDesktop

    path = tmp_path / "tasks" / "gimp" / "pinned.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(
        "id: pinned\napp: gimp\nlevel: L1\ntitle: t\ninstruction: i\n"
        "setup: [{sleep: 30}]\nscreen: {width: 1280, height: 800}\n"
        "evaluate: {check: file_exists, path: ~/x}\n"
    )
    with Store(tmp_path / "db.sqlite") as store:
        runner = EpisodeRunner(
            load_task(path), StillDesktop(), NullAgent(), SimulatedUser(), store, backend="local"
        )
        result = await asyncio.wait_for(runner.run(), 10)  # the 30 s setup never runs
    assert result.status == "error" and result.error_kind == "task"
    assert "needs a 1280×800 screen; desktop still is 64×48" in (result.error or "")
