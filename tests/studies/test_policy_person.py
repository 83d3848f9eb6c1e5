"""A person in a condition that forbids something stays a person to the runner: the
due phase is still offered to them as a draft (and their wait is off the budget),
while the policy holds. An agent that may not ask gets the study's reply as the task's
words without the person being asked; a participant who may not give feedback is not
asked to review the DONE. (Wrapped in PolicyUser, a person used to lose both the
drafts and the budget's pause under such a condition, unlike the same person under a
condition that forbids nothing.)"""

from __future__ import annotations

import asyncio
from pathlib import Path

from app.core.actions import Ask, Click, Done
from app.episode.events import RunnerEvent, WaitingEvent
from app.episode.runner import EpisodeRunner
from app.store import Store
from app.studies.model import Condition
from app.studies.session import NO_ASKING_REPLY, with_policy
from app.tasks.loader import load_task
from app.users.person import PersonUser
from tests.episode.test_person_mode import ListAgent
from tests.still_desktop import StillDesktop
from tests.waiting import eventually

TASK = """\
id: policy-person
app: gimp
level: L1
title: t
instruction: Start.
phases:
  - {message: Use blue., trigger: {step_count: 1}}
budget: {steps: 10, seconds: 60}
evaluate: {check: file_exists, path: ~/x}
"""


async def test_a_person_under_a_no_asking_no_feedback_policy(tmp_path: Path) -> None:
    path = tmp_path / "policy-person.yaml"
    path.write_text(TASK)
    task = load_task(path)
    condition = Condition.model_validate(
        {"id": "quiet", "agent": "null",
         "policy": {"agent_may_ask": False, "may_give_feedback": False}}
    )  # fmt: skip
    events: list[RunnerEvent] = []
    with Store(tmp_path / "db.sqlite") as store:
        person = with_policy(PersonUser(), condition, task, store)
        assert isinstance(person, PersonUser)
        agent = ListAgent([Click(1, 1), Ask("Which blue?"), Done()])
        runner = EpisodeRunner(
            task, StillDesktop(), agent, person, store, backend="local", on_event=events.append
        )
        running = asyncio.ensure_future(runner.run())
        await eventually(lambda: person.waiting == "phase", "the due phase offered")
        assert person.draft == "Use blue."
        person.send("Use navy blue.", from_draft=True)
        result = await asyncio.wait_for(running, 30)
        assert result.end_reason == "done"
        messages = store.messages(result.episode_id)
    assert [(m.kind, m.source, m.text) for m in messages[1:]] == [
        ("interruption", "person", "Use navy blue."),
        ("question", "agent", "Which blue?"),
        ("answer", "task", NO_ASKING_REPLY),
        ("done", "agent", messages[4].text),
    ]
    waits = [e.what for e in events if isinstance(e, WaitingEvent)]
    assert waits == ["phase"]  # never asked to answer, never asked to review
