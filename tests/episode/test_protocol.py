"""The protocol engine, against DESIGN.md's rules: examples and properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.core.actions import Action, Ask, Click, Done, Fail, Key, Type, is_gui_action
from app.core.triggers import (
    AgentAsk,
    AgentDone,
    AllOf,
    AnyOf,
    Event,
    StepCount,
    Trigger,
    holds,
    possible_events,
)
from app.episode.protocol import PhaseSpec, Protocol


def make(phases: list[PhaseSpec], steps: int = 100, seconds: float = 1000) -> Protocol:
    return Protocol("do the thing", phases, max_steps=steps, max_seconds=seconds)


CLICK = Click(1, 1)


def test_done_without_phases_ends_episode() -> None:
    p = make([])
    out = p.on_agent(Done(), 0)
    assert out.ended == "done"
    assert [m.kind for m in p.conversation] == ["instruction", "done"]


def test_step_count_phase_fires_after_n_actions_and_resets_count() -> None:
    p = make([PhaseSpec("make it 400", StepCount(2)), PhaseSpec("also jpeg", StepCount(2))])
    assert p.on_agent(CLICK, 0).delivered_phase is None
    out = p.on_agent(CLICK, 0)
    assert out.delivered_phase == 0
    assert out.messages[0].kind == "interruption"
    assert out.messages[0].step == 2
    assert p.active_message.text == "make it 400"
    assert p.on_agent(CLICK, 0).delivered_phase is None
    assert p.on_agent(CLICK, 0).delivered_phase == 1


def test_done_delivers_agent_done_phase_instead_of_ending() -> None:
    p = make([PhaseSpec("now export a jpeg", AgentDone())])
    out = p.on_agent(Done(), 0)
    assert out.ended is None
    assert out.delivered_phase == 0
    assert out.messages[-1].kind == "feedback"
    assert p.on_agent(Done(), 0).ended == "done"


def test_done_ends_when_pending_trigger_does_not_hold() -> None:
    # Only the pending phase can fire: the later agent_done phase waits behind it.
    p = make([PhaseSpec("a", StepCount(3)), PhaseSpec("b", AgentDone())])
    out = p.on_agent(Done(), 0)
    assert out.ended == "done"
    assert p.undelivered_phases() == [0, 1]


def test_ask_answered_by_phase_or_needs_user_answer() -> None:
    p = make([PhaseSpec("use PNG", AgentAsk())])
    out = p.on_agent(Ask("which format?"), 0)
    assert out.delivered_phase == 0 and not out.needs_answer
    assert [m.kind for m in out.messages] == ["question", "answer"]
    out = p.on_agent(Ask("anything else?"), 0)
    assert out.needs_answer and out.ended is None
    with pytest.raises(RuntimeError):
        p.on_agent(CLICK, 0)
    out = p.answer("no further information", "simulated", 0)
    assert out.messages[0].kind == "answer"
    assert p.on_agent(CLICK, 0).ended is None


def test_ask_is_not_a_gui_action() -> None:
    p = make([PhaseSpec("x", StepCount(1))])
    p.on_agent(Ask("?"), 0)
    p.answer("no", "simulated", 0)
    assert p.next_phase == 0
    assert p.on_agent(CLICK, 0).delivered_phase == 0


def test_fail_ends_and_never_advances() -> None:
    p = make([PhaseSpec("x", AnyOf((AgentDone(), AgentAsk(), StepCount(1))))])
    out = p.on_agent(Fail("cannot"), 0)
    assert out.ended == "fail" and out.delivered_phase is None
    with pytest.raises(RuntimeError):
        p.on_agent(CLICK, 0)


def test_all_composition_needs_both_at_same_event() -> None:
    p = make([PhaseSpec("x", AllOf((AgentDone(), StepCount(2))))])
    p.on_agent(CLICK, 0)
    assert p.on_agent(Done(), 0).ended == "done"  # only 1 action so far
    p = make([PhaseSpec("x", AllOf((AgentDone(), StepCount(2))))])
    p.on_agent(CLICK, 0)
    p.on_agent(CLICK, 0)  # step_count holds but no DONE yet
    assert p.next_phase == 0
    assert p.on_agent(Done(), 0).delivered_phase == 0


def test_budgets() -> None:
    p = make([], steps=2)
    assert p.on_agent(CLICK, 0).ended is None
    assert p.on_agent(CLICK, 0).ended == "step_budget"
    p = make([], seconds=10)
    assert p.on_agent(CLICK, 10.5).ended == "time_budget"
    p = make([], seconds=10)
    assert p.check_time(9) is None
    assert p.check_time(10) == "time_budget"


def test_injected_message_becomes_active_without_resetting_count() -> None:
    p = make([PhaseSpec("x", StepCount(2))])
    p.on_agent(CLICK, 0)
    msg = p.inject("use blue instead", "clarification")
    assert p.active_message == msg and msg.step == 1 and msg.source == "person"
    assert p.on_agent(CLICK, 0).delivered_phase == 0


def test_impossible_all_composition_detected() -> None:
    assert possible_events(AllOf((AgentDone(), AgentAsk()))) == frozenset()
    assert possible_events(AllOf((AgentDone(), StepCount(3)))) == {Event.DONE}
    assert possible_events(AnyOf((AgentDone(), AgentAsk()))) == {Event.DONE, Event.ASK}


# -- properties over random phase lists and action sequences --------------------------

leaf_triggers = st.one_of(
    st.just(AgentDone()), st.just(AgentAsk()), st.builds(StepCount, st.integers(1, 5))
)
triggers: st.SearchStrategy[Trigger] = st.recursive(
    leaf_triggers,
    lambda children: st.one_of(
        st.builds(lambda c: AnyOf(tuple(c)), st.lists(children, min_size=1, max_size=3)),
        st.builds(lambda c: AllOf(tuple(c)), st.lists(children, min_size=1, max_size=3)),
    ),
    max_leaves=6,
).filter(lambda t: bool(possible_events(t)))

agent_outputs: st.SearchStrategy[Action] = st.one_of(
    st.just(CLICK),
    st.just(Key("enter")),
    st.just(Type("x")),
    st.just(Done()),
    st.builds(Ask, st.just("?")),
    st.builds(Fail, st.just("no")),
)


@settings(max_examples=400, deadline=None)
@given(
    phases=st.lists(triggers, max_size=5),
    actions=st.lists(agent_outputs, max_size=40),
    max_steps=st.integers(1, 30),
)
def test_protocol_properties(phases: list[Trigger], actions: list[Action], max_steps: int) -> None:
    p = make([PhaseSpec(f"m{i}", t) for i, t in enumerate(phases)], steps=max_steps)
    gui_since_active = 0
    for action in actions:
        if p.ended is not None:
            with pytest.raises(RuntimeError):
                p.on_agent(action, 0)
            break
        pending = p.pending_phase
        before = p.next_phase
        event = (
            Event.ACTION
            if is_gui_action(action)
            else Event.DONE
            if isinstance(action, Done)
            else Event.ASK
            if isinstance(action, Ask)
            else None
        )
        count = gui_since_active + (1 if event is Event.ACTION else 0)
        should_fire = (
            event is not None and pending is not None and holds(phases[pending], event, count)
        )
        out = p.on_agent(action, 0)
        # Phases go in order, one at most per turn, exactly when the pending trigger holds.
        assert p.delivered == list(range(p.next_phase))
        assert out.delivered_phase == (before if should_fire else None)
        gui_since_active = 0 if should_fire else count
        assert p.actions_since_active == gui_since_active
        # FAIL ends and never advances; ASK never ends except on the budget.
        if isinstance(action, Fail):
            assert out.ended == "fail" and p.next_phase == before
        if isinstance(action, Ask):
            assert out.ended in (None, "step_budget")
            assert out.needs_answer == (not should_fire)
            if out.needs_answer:
                p.answer("none", "simulated", 0)
        if isinstance(action, Done):
            assert (out.ended == "done") == (not should_fire)
        assert p.steps <= max_steps
        assert p.active_message == [m for m in p.conversation if m.role == "user"][-1]
    steps_of_messages = [m.step for m in p.conversation]
    assert steps_of_messages == sorted(steps_of_messages)
    # Each message is numbered by its place in the conversation: what records key on.
    assert [m.number for m in p.conversation] == list(range(len(p.conversation)))


def test_person_review_of_done_continues_with_feedback_or_accepts() -> None:
    p = Protocol("export it", [], max_steps=20, max_seconds=100, review_done=True)
    out = p.on_agent(Done(), 0)
    assert out.needs_review and out.ended is None
    with pytest.raises(RuntimeError):
        p.on_agent(CLICK, 0)
    out = p.review("the export is too dark; brighten it", "person", 0)
    assert out.ended is None and out.messages[0].kind == "feedback"
    assert p.active_message.text.startswith("the export is too dark")
    p.on_agent(CLICK, 0)
    assert p.on_agent(Done(), 0).needs_review
    assert p.review(None, "person", 0).ended == "done"


def test_review_not_needed_when_a_phase_answers_the_done() -> None:
    p = Protocol(
        "x", [PhaseSpec("more", AgentDone())], max_steps=20, max_seconds=100, review_done=True
    )
    out = p.on_agent(Done(), 0)
    assert out.delivered_phase == 0 and not out.needs_review


def test_rejected_action_uses_budget_but_fires_nothing() -> None:
    p = make([PhaseSpec("x", StepCount(1))], steps=2)
    out = p.on_rejected(0)
    assert out.delivered_phase is None and p.actions_since_active == 0 and out.ended is None
    assert p.on_rejected(0).ended == "step_budget"
