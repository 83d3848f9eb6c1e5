"""Person mode: the person is the user. A due phase's scripted message is
offered as a draft and delivered in the person's words, recorded as the script's,
edited or free; an ASK waits for the person; the waits are off the time budget."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.agents.base import AgentContext, Observation
from app.core.actions import Action, Ask, Click, Done
from app.core.triggers import Trigger, parse_trigger
from app.episode.events import RunnerEvent, WaitingEvent
from app.episode.protocol import PhaseSpec, Protocol, Reply
from app.episode.runner import EpisodeRunner
from app.store import Store
from app.tasks.loader import load_task
from app.users.person import PersonUser, origin_of
from app.users.simulated import SimulatedUser
from tests.episode.test_protocol import agent_outputs, triggers
from tests.still_desktop import StillDesktop


def protocol(person: bool, *triggers: object) -> Protocol:
    phases = [PhaseSpec(f"phase {i}", parse_trigger(t)) for i, t in enumerate(triggers)]
    return Protocol("do it", phases, max_steps=20, max_seconds=100, person_phases=person)


def test_a_due_phase_waits_for_the_person_after_a_gui_action() -> None:
    p = protocol(True, {"step_count": 1})
    out = p.on_agent(Click(1, 1), 1.0)
    assert out.phase_due == 0 and out.delivered_phase is None and out.messages == ()
    assert p.awaiting_phase and p.due_message == "phase 0" and p.next_phase == 0
    with pytest.raises(RuntimeError, match="due phase"):
        p.on_agent(Click(1, 1), 2.0)
    sent = p.send_due("phase 0, but blue", "person", 2.0, Reply("edited", "phase 0", 4.5))
    (message,) = sent.messages
    assert sent.delivered_phase == 0 and p.delivered == [0] and p.phase_due is None
    assert (message.kind, message.source, message.phase_index) == ("interruption", "person", 0)
    assert (message.origin, message.scripted, message.wait_seconds) == ("edited", "phase 0", 4.5)
    assert p.active_message is message


def test_simulated_mode_delivers_the_script_as_before() -> None:
    p = protocol(False, {"step_count": 1})
    out = p.on_agent(Click(1, 1), 1.0)
    assert out.delivered_phase == 0 and out.phase_due is None and not p.awaiting_phase
    assert out.messages[0].source == "phase" and out.messages[0].origin is None


def test_an_ask_with_a_phase_due_is_answered_by_the_person() -> None:
    p = protocol(True, "agent_ask")
    out = p.on_agent(Ask("which colour?"), 1.0)
    assert out.needs_answer and out.phase_due == 0
    answered = p.answer("phase 0", "person", 1.0, Reply("script", "phase 0", 1.0))
    assert answered.delivered_phase == 0
    assert answered.messages[0].kind == "answer" and answered.messages[0].origin == "script"


def test_accepting_a_done_with_a_phase_due_leaves_it_undelivered() -> None:
    p = protocol(True, "agent_done")
    out = p.on_agent(Done(), 1.0)
    assert out.needs_review and out.phase_due == 0
    ended = p.review(None, "person", 1.0)
    assert ended.ended == "done" and p.undelivered_phases() == [0]


def test_feedback_at_a_due_done_delivers_the_phase() -> None:
    p = protocol(True, "agent_done", "agent_done")
    p.on_agent(Done(), 1.0)
    got = p.review("my own words", "person", 1.0, Reply("free", "phase 0", 2.0))
    assert got.delivered_phase == 0 and got.messages[0].kind == "feedback"
    assert p.on_agent(Done(), 2.0).phase_due == 1


def test_the_origin_of_what_the_person_sent() -> None:
    assert origin_of("Make it blue.", "Make it blue.", from_draft=True) == "script"
    assert origin_of(" Make it blue. ", "Make it blue.", from_draft=False) == "script"
    assert origin_of("Make it navy blue.", "Make it blue.", from_draft=True) == "edited"
    assert origin_of("Stop.", "Make it blue.", from_draft=False) == "free"
    assert origin_of("Stop.", None, from_draft=False) == "free"


TASK = """\
id: person-phases
app: gimp
level: L1
title: t
instruction: Start.
phases:
  - {message: Use blue., trigger: {step_count: 1}}
  - {message: Also save it., trigger: agent_ask}
budget: {steps: 10, seconds: 5}
evaluate: {check: file_exists, path: ~/x}
"""


class ListAgent:
    name = "list"

    def __init__(self, actions: list[Action]) -> None:
        self.actions = actions
        self.seen: list[Observation] = []

    async def start(self, context: AgentContext) -> None:
        return None

    async def decide(self, observation: Observation) -> Action:
        self.seen.append(observation)
        return self.actions.pop(0) if self.actions else Done()

    def step_info(self) -> None:
        return None

    async def close(self) -> None:
        return None


async def test_the_runner_waits_for_the_person_off_the_budget(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "tasks" / "gimp" / "person-phases.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(TASK)
    person = PersonUser()
    events: list[RunnerEvent] = []
    agent = ListAgent([Click(1, 1), Ask("Anything else?"), Done()])
    with Store(tmp_path / "db.sqlite") as store:
        runner = EpisodeRunner(
            load_task(path), StillDesktop(), agent, person, store,
            backend="local", on_event=events.append,
        )  # fmt: skip
        running = asyncio.ensure_future(runner.run())

        async def until(what: str) -> None:
            async with asyncio.timeout(10):
                while person.waiting != what:
                    await asyncio.sleep(0.01)

        # The GUI action made phase 1 due: its script is the draft. The person waits
        # longer than the whole 5 s budget and the episode does not end on time.
        await until("phase")
        assert person.draft == "Use blue."
        await asyncio.sleep(5.5)
        person.send("Use navy blue.", from_draft=True)
        await until("answer")
        assert person.draft == "Also save it." and person.question == "Anything else?"
        person.send("Also save it.", from_draft=True)
        await until("review")
        assert person.draft is None
        person.accept()
        result = await asyncio.wait_for(running, 10)
        assert result.end_reason == "done", result
        assert agent.seen[1].active_message.text == "Use navy blue."

        episode = store.get_episode(result.episode_id)
        assert episode.person_wait_seconds >= 5.5
        sent = [m for m in store.messages(result.episode_id) if m.source == "person"]
        assert [(m.kind, m.phase_index, m.origin, m.scripted) for m in sent] == [
            ("interruption", 0, "edited", "Use blue."),
            ("answer", 1, "script", "Also save it."),
        ]
        assert sent[0].wait_seconds is not None and sent[0].wait_seconds >= 5.5
        assert [p.status for p in store.phases(result.episode_id)] == ["delivered"] * 2
    # `deskloop episodes show` says what the person did with the script.
    from app.cli import main

    assert (
        main(["--db", str(tmp_path / "db.sqlite"), "episodes", "show", str(result.episode_id)]) == 0
    )
    shown = capsys.readouterr().out
    assert "(edited from the script's: Use blue.; after " in shown
    assert "(sent as the script offered it; after " in shown
    assert "waited for the person " in shown
    waits = [(e.what, e.draft, e.phase) for e in events if isinstance(e, WaitingEvent)]
    assert waits == [
        ("phase", "Use blue.", 0),
        ("answer", "Also save it.", 1),
        ("review", None, None),
    ]


async def test_simulated_mode_does_not_wait(tmp_path: Path) -> None:
    path = tmp_path / "tasks" / "gimp" / "person-phases.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(TASK)
    agent = ListAgent([Click(1, 1), Ask("Anything else?"), Done()])
    with Store(tmp_path / "db.sqlite") as store:
        runner = EpisodeRunner(
            load_task(path), StillDesktop(), agent, SimulatedUser(), store, backend="local"
        )
        result = await asyncio.wait_for(runner.run(), 10)
        messages = store.messages(result.episode_id)
        assert [(m.source, m.origin) for m in messages if m.role == "user"] == [
            ("task", None),
            ("phase", None),
            ("phase", None),
        ]
        assert store.get_episode(result.episode_id).person_wait_seconds == 0


# -- person mode against the script, over random phase lists and action sequences -----


def play(p: Protocol, actions: list[Action]) -> None:
    """Drive `p`; a user that accepts every DONE no phase answers, answers free ASKs
    with 'none', and in person mode sends each due phase's draft as it is."""
    for action in actions:
        if p.ended is not None:
            return
        out = p.on_agent(action, 0)
        draft = p.due_message
        reply = Reply("script", draft) if draft is not None else None
        if out.needs_answer:
            p.answer(draft or "none", "person" if p.person_phases else "simulated", 0, reply)
        elif out.needs_review:
            p.review(draft, "person", 0, reply)
        elif p.awaiting_phase:
            assert draft is not None
            p.send_due(draft, "person", 0, reply)


@settings(max_examples=300, deadline=None)
@given(
    phases=st.lists(triggers, max_size=5),
    actions=st.lists(agent_outputs, max_size=40),
    max_steps=st.integers(1, 30),
)
def test_a_person_who_sends_the_script_as_is_makes_the_scripts_episode(
    phases: list[Trigger], actions: list[Action], max_steps: int
) -> None:
    def make(person: bool) -> Protocol:
        specs = [PhaseSpec(f"m{i}", t) for i, t in enumerate(phases)]
        return Protocol("do it", specs, max_steps, 1000, review_done=True, person_phases=person)

    script, person = make(False), make(True)
    play(script, list(actions))
    play(person, list(actions))
    seen = [(m.role, m.kind, m.text, m.step, m.phase_index) for m in script.conversation]
    assert [(m.role, m.kind, m.text, m.step, m.phase_index) for m in person.conversation] == seen
    assert (person.delivered, person.ended, person.steps) == (
        script.delivered,
        script.ended,
        script.steps,
    )
    # The person's phase messages say they are the script's, with its text.
    for m in person.conversation:
        if m.phase_index is not None:
            assert (m.source, m.origin, m.scripted) == ("person", "script", m.text)
        assert m.source != "phase"
