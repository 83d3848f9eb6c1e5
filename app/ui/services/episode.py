"""An episode started from the TUI: wired up by the composition root, steered by the
person (chat, pause, accept, abort), and its state so far as the runner's events
told it, for the Live screen to show."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from app.agents.base import Agent
from app.agents.person import PersonAgent
from app.core.actions import Action, GuiAction, describe_action
from app.core.conversation import Message
from app.core.triggers import describe_trigger
from app.core.vocabulary import StepActor, UserKind, UserMode
from app.desktops.base import Desktop
from app.episode.control import EpisodeControl
from app.episode.events import (
    EndedEvent,
    EpisodeResult,
    MessageEvent,
    PhaseEvent,
    RunnerEvent,
    StatusEvent,
    StepEvent,
    WaitingEvent,
)
from app.episode.launch import launch, llm_cache_dir, make_user
from app.episode.runner import EpisodeRunner
from app.rfb.client import VncEndpoint
from app.rfb.person import PersonInput
from app.store import Store
from app.tasks.model import Task
from app.ui.describe import describe_end
from app.users.person import PersonUser
from app.users.simulated import User

HUMAN = "human"
"""The start dialog's agent for a person driving the desktop themselves (as `deskloop
human`): from the live view, or a VNC viewer on the recording proxy it shows."""


@dataclass
class StepLine:
    idx: int
    description: str
    agent_seconds: float
    act_seconds: float
    settle_seconds: float
    error: str | None
    actor: StepActor = "agent"


@dataclass
class PhaseLine:
    index: int
    message: str
    trigger: str
    delivered_step: int | None = None


@dataclass
class EpisodeSession:
    """One episode started from the TUI and what has happened in it so far."""

    task: Task
    agent_spec: str
    user_mode: UserMode
    store: Store
    desktop: Desktop
    backend: str
    agent: Agent | None = None
    """The agent built from `agent_spec` (built at run time when None)."""
    llm_user: dict[str, str] | None = None
    """The LLM user's endpoint (`LLMUserConfig` fields), when a model plays the user."""
    control: EpisodeControl = field(default_factory=EpisodeControl)
    user: User = field(init=False)
    runner: EpisodeRunner | None = None
    status: str = "starting"
    steps: list[StepLine] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    phases: list[PhaseLine] = field(default_factory=list)
    waiting: WaitingEvent | None = None
    """What the runner waits for from the person (set by its event, before the
    person object itself is asked), or None."""
    result: EpisodeResult | None = None
    clock_start: float | None = None
    """Monotonic time the agent loop began (for the time budget)."""
    listeners: list[Callable[[RunnerEvent], None]] = field(default_factory=list)
    _own_input: PersonInput | None = field(default=None, init=False, repr=False)
    _closing: set[asyncio.Future[None]] = field(default_factory=set, init=False, repr=False)

    def __post_init__(self) -> None:
        # Built now, not with the runner: the chat pane answers through a person user
        # from the moment the episode is shown.
        cache = llm_cache_dir(self.store)
        if self.llm_user is not None:
            self.user = make_user("llm", self.task, cache_dir=cache, llm=dict(self.llm_user))
        else:
            self.user = make_user(self.user_mode, self.task, cache_dir=cache)
        self.phases = [
            PhaseLine(i, p.message, describe_trigger(p.trigger))
            for i, p in enumerate(self.task.phases)
        ]

    @property
    def episode_id(self) -> int | None:
        """Known once the runner has recorded the episode's start."""
        return self.runner.episode_id if self.runner is not None else None

    @property
    def human(self) -> PersonAgent | None:
        """The person as the agent (`deskloop human` from the TUI), if so."""
        return self.agent if isinstance(self.agent, PersonAgent) else None

    @property
    def person(self) -> PersonUser | None:
        return self.user if isinstance(self.user, PersonUser) else None

    @property
    def ended(self) -> bool:
        return self.result is not None

    @property
    def active_instruction(self) -> str:
        for message in reversed(self.messages):
            if message.role == "user":
                return message.text
        return self.task.instruction

    @property
    def pending_phase(self) -> PhaseLine | None:
        return next((p for p in self.phases if p.delivered_step is None), None)

    def budget_left(self, now: float | None = None) -> tuple[int, float]:
        """(steps, seconds) left of the task's budget. The runner's own count of the
        seconds, which stops while the episode waits for the person (person mode)."""
        # The person's own steps (take-over) are not the agent's budget.
        steps = self.task.budget.steps - sum(1 for s in self.steps if s.actor == "agent")
        seconds = self.task.budget.seconds
        used = self.runner.budget_seconds_used() if self.runner is not None else None
        if used is not None:
            seconds -= used
        elif self.clock_start is not None:
            seconds -= (now if now is not None else time.monotonic()) - self.clock_start
        return steps, max(0.0, seconds)

    def _on_event(self, event: RunnerEvent) -> None:
        match event:
            case StatusEvent(text):
                self.status = text
            case StepEvent():
                if self.clock_start is None:
                    spent = event.agent_seconds + event.act_seconds + event.settle_seconds
                    self.clock_start = time.monotonic() - spent
                self.steps.append(
                    StepLine(
                        event.idx,
                        event.description,
                        event.agent_seconds,
                        event.act_seconds,
                        event.settle_seconds,
                        event.error,
                        event.actor,
                    )
                )
                self.waiting = None
            case MessageEvent(message):
                self.messages.append(message)
            case PhaseEvent(index, step):
                self.phases[index].delivered_step = step
            case WaitingEvent():
                self.waiting = event
                self.status = {
                    "answer": "waiting for your answer",
                    "review": "waiting for review",
                    "phase": f"phase {(event.phase or 0) + 1} is due: waiting for your message",
                }[event.what]
            case EndedEvent(result):
                self.result = result
                self.waiting = None
                self.status = (
                    f"ended: {describe_end(result.end_reason, result.passed, result.score)}"
                    if result.status == "finished"
                    else f"ended: {result.status} ({result.end_reason})"
                )
        for listener in list(self.listeners):
            listener(event)

    async def run(self) -> EpisodeResult:
        """Run the episode on `desktop`, which stays the caller's (the pool's)."""
        episode = launch(
            self.task,
            self.store,
            backend=self.backend,
            agent=self.agent or self.agent_spec,
            user=self.user,
            desktop=self.desktop,
            on_event=self._on_event,
            control=self.control,
        )
        self.runner = episode.runner
        try:
            return await episode.run()
        finally:
            if self._own_input is not None:
                await self._own_input.close()

    def take_over(self, action: GuiAction) -> None:
        """One of the person's actions from the live view, for the desktop: through the
        recording proxy after their earlier input, recorded there as theirs (the
        agent's next step when they are the agent).

        Raises:
            AgentError: the person is the agent and it has not started yet.
        """
        human = self.human
        if human is not None:
            human.perform(action)
            return
        person_input = self._own_person_input()
        if person_input is None:
            # A desktop without VNC has no proxy: the runner sends the action itself.
            self.control.take_over(action)
        else:
            person_input.submit(action)

    @property
    def person_input(self) -> PersonInput | None:
        """The person's one way into the desktop while the episode runs (the recording
        proxy, app.rfb.person): the live view's take-over, a viewer and noVNC all go
        through it. The person agent's own when the person is the agent; made at the
        first use otherwise (the desktop's VNC exists once the episode has reset it)."""
        human = self.human
        return human.input if human is not None else self._own_person_input()

    async def person_endpoint(self) -> VncEndpoint | None:
        """Where a viewer (noVNC, a native one) reaches the desktop while the episode
        runs: the recording proxy, started now if need be; None when there is none."""
        person_input = self.person_input
        if person_input is None or self.ended:
            return None
        if person_input.address is None:
            await person_input.start()
        return person_input.endpoint

    def _own_person_input(self) -> PersonInput | None:
        if self.ended:
            return None
        vnc = self.desktop.info().vnc
        if vnc is None:
            return None
        own = self._own_input
        if own is None or own.upstream != vnc:
            # A reset can bring the desktop back on another port: a new proxy for it.
            if own is not None:
                closing = asyncio.ensure_future(own.close())
                self._closing.add(closing)
                closing.add_done_callback(self._closing.discard)
            own = PersonInput(vnc, self._person_did)
            self._own_input = own
        return own

    def _person_did(self, action: Action) -> None:
        if isinstance(action, GuiAction):  # the proxy records input only
            self.control.take_over(action, delivered=True)

    def send(self, text: str, kind: UserKind, *, from_draft: bool = False) -> str:
        """The chat pane's Enter: answers a waiting ASK, gives feedback on a waiting
        DONE, sends a due phase's message (person mode), else injects `text` as
        `kind`. `from_draft`: the person started from the script's draft (it is
        recorded as edited rather than free). Returns what was done, for the UI."""
        person = self.person
        if self.ended:
            raise ValueError("the episode has ended")
        human = self.human
        if human is not None and (person is None or person.waiting is None):
            # The person is the agent: the chat box takes its commands (`done 2`).
            action = human.command(text)  # ValueError: not a command (it lists them)
            return f"sent: {describe_action(action)}"
        if person is not None and person.waiting is not None:
            what = person.waiting
            reply = person.send(text, from_draft=from_draft)
            self.waiting = None
            origin = {"script": "the script's text", "edited": "edited", "free": "your own"}
            said = {
                "answer": "answer sent",
                "review": "feedback sent: the episode continues",
                "phase": "phase message sent",
            }[what]
            return said if reply.scripted is None else f"{said} ({origin[reply.origin or 'free']})"
        self.control.inject(text, kind)
        return f"{kind} queued for the agent's next step"

    def accept(self) -> None:
        """Accept the agent's DONE (the episode ends and is scored).

        Raises:
            ValueError: nothing to accept. PhaseDue: a scripted phase is due at this
                DONE: its message must be sent first (the person's `accept` says why).
        """
        person = self.person
        if person is None or person.waiting != "review":
            raise ValueError("nothing to accept: the agent has not said DONE")
        person.accept()
        self.waiting = None

    def toggle_pause(self) -> bool:
        """Pause or resume; returns whether the episode is now paused."""
        if self.control.paused:
            self.control.resume()
        else:
            self.control.pause()
        return self.control.paused
