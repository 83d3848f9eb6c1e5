"""`BrowserSeat`: a person in the participant's seat, through the participant view.

Each of the session's questions to the seat (`app.studies.session.Seat`) becomes a
page of `SeatView` that the person answers in their browser: consent, a trial's
brief and then the trial itself, questionnaires, breaks. During a trial
(`TrialDesk`) the page shows the live desktop and the conversation with the agent;
the person answers the agent's questions, gives feedback on its DONE or accepts it,
and sends a due phase's message, offered as a suggestion when the condition's policy
says so. It shows nothing of the evaluator, the checks or the researcher's controls.

The desktop is reached only through the episode's recording proxy
(`app.rfb.person.PersonInput`), so whatever the person does on it is recorded as
their steps, in order: the person agent's own proxy when the participant is the
agent, else one made here whose recorded actions go to the episode as the person's
take-over (as the TUI's). The page may act on the desktop only when the participant
is the agent or the condition allows take-over; otherwise noVNC is view-only.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import Any

from markdown_it import MarkdownIt

from app.agents.spec import AgentSpec, PersonSpec
from app.core.actions import Action, GuiAction
from app.core.conversation import Message
from app.core.vocabulary import QuestionnairePoint
from app.episode.events import EpisodeResult
from app.episode.launch import Episode
from app.rfb.client import VncEndpoint
from app.rfb.person import PersonInput
from app.seat.view import (
    TEXT_LIMIT,
    Refused,
    SeatView,
    answers_handler,
    consent_handler,
    go_on_handler,
    instrument_view,
)
from app.studies.instruments import AnswerValue, Instrument
from app.studies.model import Condition
from app.studies.session import TrialStart
from app.tasks.model import Task
from app.users.person import PersonUser

POINT_INTROS: dict[QuestionnairePoint, str] = {
    "pre_study": "Before we begin, please answer these questions.",
    "post_trial": "Please answer these questions about the task you just did.",
    "post_condition": "Please answer these questions about the assistant you just worked with.",
    "post_study": "To finish, please answer these questions about the whole session.",
}


def render_markdown(text: str) -> str:
    """The study's Markdown (consent) as HTML; raw HTML in it is shown as text, so a
    study file cannot put a script on the participant's page."""
    return str(MarkdownIt("commonmark", {"html": False}).render(text))


class BrowserSeat:
    """The studies' `Seat` for a person at the participant view (module docstring)."""

    simulated = False

    def __init__(self, view: SeatView | None = None) -> None:
        self.view = view or SeatView()
        self.trial: TrialDesk | None = None
        """The trial being played, or None."""
        self._user: PersonUser | None = None

    async def consent(self, text: str) -> bool:
        agreed: bool = await self.view.ask(
            "consent", {"html": render_markdown(text)}, consent_handler
        )
        if agreed:
            self.view.wait("Thank you. The session is being prepared.")
        else:
            self.end("You did not consent, so nothing was recorded. You may close this page.")
        return agreed

    def user(self, condition: Condition, task: Task) -> PersonUser:
        return self.person()

    def person(self) -> PersonUser:
        """The user the person plays in the next trial (its replies come from the page)."""
        self._user = PersonUser()
        return self._user

    def agent(self, condition: Condition, task: Task) -> AgentSpec:
        return PersonSpec()

    async def answer(
        self, instrument: Instrument, point: QuestionnairePoint, context: str
    ) -> Mapping[str, AnswerValue]:
        content = {**instrument_view(instrument), "intro": POINT_INTROS[point]}
        answers: dict[str, AnswerValue] = await self.view.ask(
            "questionnaire", content, answers_handler(instrument)
        )
        self.view.wait("Thank you. Please wait.")
        return answers

    async def play(self, trial: TrialStart, episode: Episode) -> EpisodeResult:
        await self.view.ask("brief", brief(trial), go_on_handler)
        person = None if trial.alone else self._user
        desk = TrialDesk(trial, episode, person)
        self.trial = desk
        self.view.show("trial", desk.content(), handle=desk.handle, live=desk.live)
        try:
            return await episode.run()
        finally:
            self.trial = None
            self.view.wait("The task has ended. Please wait.")
            await desk.close()

    async def rest(self, seconds: float) -> None:
        content = {"seconds": seconds, "text": "Take a break. Continue whenever you are ready."}
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.view.ask("break", content, go_on_handler), seconds)
        self.view.wait("Please wait: the next task is being prepared.")

    def end(self, text: str = "Thank you: the session is over. You may close this page.") -> None:
        self.view.show("end", {"text": text})


def brief(trial: TrialStart) -> dict[str, Any]:
    """A trial's brief: the task's instruction, and with a `brief` policy every later
    message the script holds (the participant speaks freely instead of being offered
    them one by one)."""
    task, alone = trial.task, trial.alone
    later = [p.message for p in task.phases] if trial.policy.phases == "brief" else []
    if alone:
        how = "You do this task yourself on the desktop. Press Done when you have finished."
    else:
        how = "An assistant will do this task on the desktop while you watch and talk with it."
        if trial.policy.may_take_over:
            how += " You may also use the desktop yourself."
    return {
        "title": task.title,
        "practice": trial.practice,
        "instruction": task.instruction,
        "later": later,
        "how": how,
    }


class TrialDesk:
    """One trial on the page: its live content and the participant's actions."""

    def __init__(self, trial: TrialStart, episode: Episode, person: PersonUser | None) -> None:
        self.trial = trial
        self.episode = episode
        self.person = person
        self.policy = trial.policy
        self.alone = trial.alone
        self._input: PersonInput | None = None
        self._closing: set[asyncio.Task[None]] = set()

    @property
    def may_act(self) -> bool:
        """Whether the page's desktop takes the participant's input."""
        return self.alone or self.policy.may_take_over

    def content(self) -> dict[str, Any]:
        return {
            "title": self.trial.task.title,
            "instruction": self.trial.task.instruction,
            "alone": self.alone,
            "may_act": self.may_act,
        }

    async def endpoint(self) -> VncEndpoint | None:
        """The recording proxy in front of the episode's desktop, once it has one."""
        if self.alone:
            agent = self.episode.person
            person_input = None if agent is None else agent.input
            return None if person_input is None else person_input.endpoint
        vnc = self.episode.desktop.info().vnc
        if vnc is None or self.episode.runner.budget_seconds_used() is None:
            return None  # not yet set up: the task's start state is being made
        own = self._input
        if own is None or own.upstream != vnc:
            # A reset can bring the desktop back on another port: a new proxy for it.
            if own is not None:
                self._close_later(own)
            own = PersonInput(vnc, self._person_did)
            self._input = own
        if own.address is None:
            await own.start()
        return own.endpoint

    def _person_did(self, action: Action) -> None:
        if isinstance(action, GuiAction):  # the proxy records input only
            self.episode.runner.control.take_over(action, delivered=True)

    def _close_later(self, own: PersonInput) -> None:
        closing = asyncio.get_running_loop().create_task(own.close())
        self._closing.add(closing)
        closing.add_done_callback(self._closing.discard)

    async def live(self) -> dict[str, Any]:
        endpoint = await self.endpoint()
        desktop = None
        if endpoint is not None:
            desktop = {"password": endpoint.password, "view_only": not self.may_act}
        runner = self.episode.runner
        protocol = runner.protocol
        conversation = [] if protocol is None else protocol.conversation
        person = self.person
        waiting = None if person is None else person.waiting
        offered = person is not None and self.policy.phases == "suggested"
        return {
            "status": self._status(waiting, runner.budget_seconds_used() is None),
            "waiting": waiting,
            "question": None if person is None else person.question,
            "suggestion": person.draft if offered and person is not None else None,
            "conversation": [
                {"who": _who(m.role, m.source), "kind": m.kind, "text": m.text}
                for m in conversation
                if self._shown(m)
            ],
            "may_send": waiting is not None or (not self.alone and self.policy.may_interrupt),
            "desktop": desktop,
        }

    def _shown(self, message: Message) -> bool:
        """Whether the participant sees `message`: where the agent may not ask them,
        not its questions nor the study's replies to them (they were never theirs)."""
        if self.policy.agent_may_ask:
            return True
        return message.kind != "question" and not (
            message.kind == "answer" and message.source == "task"
        )

    def _status(self, waiting: str | None, preparing: bool) -> str:
        if preparing:
            return "The desktop is being prepared…"
        if waiting == "answer":
            return "The assistant asks you a question: answer it below."
        if waiting == "review":
            return (
                "The assistant says it has finished. Accept the result, or tell it what to change."
            )
        if waiting == "phase":
            return "It is your turn to tell the assistant what comes next."
        if self.alone:
            return "Work on the desktop. Press Done when you have finished."
        return "The assistant is working. Please wait."

    def handle(self, action: Mapping[str, Any]) -> None:
        match action.get("do"):
            case "send":
                self._send(action.get("text"), action.get("from_draft") is True)
            case "accept":
                if self.person is None or self.person.waiting != "review":
                    raise Refused("there is nothing to accept now")
                self.person.accept()
            case "done":
                agent = self.episode.person
                if not self.alone or agent is None:
                    raise Refused("the assistant says when it is done")
                answer = action.get("answer")
                text = answer.strip() if isinstance(answer, str) else ""
                agent.command(f"done {text}".strip())
            case _:
                raise Refused("unknown action")

    def _send(self, text: object, from_draft: bool) -> None:
        if not isinstance(text, str) or not text.strip():
            raise Refused("write a message first")
        if len(text) > TEXT_LIMIT:
            raise Refused(f"a message has at most {TEXT_LIMIT} characters")
        person = self.person
        if self._input is not None:
            # The typing the person did before this message is a step before it.
            self._input.flush()
        if person is not None and person.waiting is not None:
            person.send(text, from_draft=from_draft)
        elif self.alone:
            raise Refused("there is no one to send a message to in this task")
        elif not self.policy.may_interrupt:
            raise Refused("in this task you answer when the assistant asks")
        else:
            self.episode.runner.control.inject(text, "interruption")

    async def close(self) -> None:
        if self._input is not None:
            await self._input.close()
            self._input = None
        for closing in list(self._closing):
            await closing


def _who(role: str, source: str) -> str:
    if role == "agent":
        return "assistant"
    return "you" if source == "person" else "study"
