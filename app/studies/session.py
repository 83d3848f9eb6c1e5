"""One participant's session: consent, then every trial of their plan in order with the
questionnaires between, resumed where it stopped.

The session is the same whoever sits in the seat (`Seat`): a person (the participant's
own view) or a stand-in (`study pilot`'s simulated participants). What it guarantees
comes from the store (`app.store.studies`): nothing is recorded before consent; a try
cut off by a crash, a dead desktop or a closed terminal is kept `interrupted`, and the
next session tries that trial again as a new try; a finished trial is never run again
and a questionnaire answered is never asked again.

Each trial is one episode (`app.episode.launch`) of the trial's task with the
condition's agent beside the participant (or the participant as the agent), recorded
with the study, code, condition, position, try and plan seed in its config, so an
episode names its trial even if the session died before linking it. The condition's
policy reaches the episode through its user (`with_policy`): an agent that may not ask
gets the study's fixed reply to a question no phase answers, and a participant who may
not give feedback accepts every DONE. A simulated user is wrapped (`PolicyUser`); a
person has the policy set on them, so the runner still treats them as a person (due
phases offered, waits off the budget).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol

from app.core.errors import DeskLoopError, is_infrastructure
from app.core.vocabulary import QuestionnairePoint, Source, UserMode
from app.episode.ahead import DesktopsByKind, StartAhead
from app.episode.control import RunOptions
from app.episode.launch import Episode, launch, llm_cache_dir, make_user
from app.studies.instruments import AnswerValue, Instrument
from app.studies.loader import consent_text
from app.studies.model import Condition, Policy, Study
from app.users.person import PersonUser
from app.users.simulated import User

if TYPE_CHECKING:
    from app.agents.spec import AgentSpec
    from app.episode.events import EpisodeResult
    from app.store import Store
    from app.store.study_records import TrialRecord
    from app.tasks.model import Task

NO_ASKING_REPLY = "(This study's agent may not ask questions: go on with your best judgement.)"
"""What an agent that may not ask is told when it asks anyway (the study's words,
recorded as the task's, never as the participant's)."""


class Seat(Protocol):
    """Who sits in the participant's seat."""

    simulated: bool
    """A stand-in (a pilot): its answers are left empty and the data marked so."""

    async def consent(self, text: str) -> bool:
        """Show the consent text; whether the participant agreed."""
        ...

    def user(self, condition: Condition, task: Task) -> User | str:
        """The user side of a trial whose participant is the user: a user, or a user
        spec `launch` takes (`simulated`, `llm`, `person`)."""
        ...

    def agent(self, condition: Condition, task: Task) -> AgentSpec:
        """The agent side of a trial whose participant is the agent."""
        ...

    async def answer(
        self, instrument: Instrument, point: QuestionnairePoint, context: str
    ) -> Mapping[str, AnswerValue]:
        """The participant's answers to one questionnaire, item by item (an item left
        out or None: not answered)."""
        ...

    async def play(self, trial: TrialStart, episode: Episode) -> EpisodeResult:
        """Run the trial's episode to its end: `episode.run()`, once, and its result.
        A person's seat shows the trial around it (the brief before, the live desktop
        and the conversation while it runs); a stand-in just runs it."""
        ...

    async def rest(self, seconds: float) -> None:
        """A break of up to `seconds` between blocks (a person may go on sooner)."""
        ...


@dataclass(frozen=True)
class TrialStart:
    """What a seat is told of the trial it is about to play."""

    task: Task
    policy: Policy
    alone: bool
    """The participant is the agent (no agent beside them)."""
    practice: bool = False
    position: int = 0


class PolicyUser:
    """A trial's user under its condition's policy: `inner` answers and reviews, except
    where the policy forbids the exchange (see the module docstring)."""

    def __init__(self, inner: User, condition: Condition) -> None:
        self.inner = inner
        self.policy = condition.policy
        self.mode: UserMode = inner.mode
        self.reviews_done = inner.reviews_done and condition.policy.may_give_feedback

    async def answer(self, question: str) -> tuple[str, Source]:
        if not self.policy.agent_may_ask:
            return NO_ASKING_REPLY, "task"
        return await self.inner.answer(question)

    async def review(self) -> str | None:
        return await self.inner.review() if self.policy.may_give_feedback else None

    def __getattr__(self, name: str) -> object:
        # What the runner and launch ask of particular users (the LLM user's
        # conversation, a person's replies) is the inner user's.
        return getattr(self.inner, name)


@dataclass
class SessionReport:
    code: str
    consented: bool
    trials_run: list[int] = field(default_factory=list)
    resumed_after: list[int] = field(default_factory=list)
    """Trials a previous session left interrupted, tried again here."""
    questionnaires: int = 0


def _last_of_condition(trials: list[TrialRecord], index: int) -> bool:
    here = trials[index]
    later = [t for t in trials[index + 1 :] if not t.practice]
    return not here.practice and (
        not later or later[0].condition_position != here.condition_position
    )


def _new_block(trials: list[TrialRecord], index: int) -> bool:
    """Whether trial `index` opens a block after another block's trials (the study's
    break goes between them; the practice is no block)."""
    here = trials[index]
    return (
        index > 0
        and not here.practice
        and not trials[index - 1].practice
        and trials[index - 1].block != here.block
    )


async def run_session(
    store: Store,
    study: Study,
    code: str,
    seat: Seat,
    *,
    tasks: Mapping[str, Task],
    backend: str,
    desktops: DesktopsByKind | None = None,
    options: RunOptions | None = None,
    progress: Callable[[str], None] = lambda _: None,
    seed: int,
) -> SessionReport:
    """Run participant `code`'s session to its end, from wherever it stopped.

    `tasks` maps each of the study's task ids to its task; the trials' desktops come
    from `desktops` (None: the session's own, closed when it ends). The next undone
    trial's desktop is brought to its task's start state while the participant answers
    the questionnaires and plays the trial before it (`StartAhead`), so they do not
    wait for a reset between trials. `options` are the episodes' run options, to which
    the trial's identity is added.

    Raises:
        DeskLoopError: a withdrawn participant or one not in the plan (StoreError), a
            task missing from `tasks`; any error of a trial's episode after its try is
            recorded `interrupted`.
    """
    studies = store.studies
    participant = studies.participant(study.id, code)
    if participant.withdrawn_at is not None:
        raise DeskLoopError(f"participant {code} of study {study.id} withdrew")
    report = SessionReport(code, consented=participant.consented_at is not None)
    if not report.consented:
        if not await seat.consent(consent_text(study)):
            progress(f"{code} did not consent: nothing was recorded")
            return report
        studies.record_consent(study.id, code)
        report.consented = True
    report.resumed_after = studies.interrupt_running(
        study.id, code, "the session ended before the trial did"
    )
    answered = studies.answered(study.id, code)

    async def ask(point: QuestionnairePoint, context: str) -> None:
        for instrument in study.questionnaires.at(point):
            if (point, context, instrument.id) in answered:
                continue
            given = await seat.answer(instrument, point, context)
            answers = {item.id: given.get(item.id) for item in instrument.items}
            studies.record_answers(
                study.id,
                code,
                point=point,
                context=context,
                instrument=instrument.id,
                answers=answers,
            )
            answered.add((point, context, instrument.id))
            report.questionnaires += 1

    own = desktops is None
    lender = desktops if desktops is not None else DesktopsByKind(backend)
    ahead = StartAhead(lender, what="trial", say=progress)
    try:
        trials = studies.trials(study.id, code)
        undone = [index for index, trial in enumerate(trials) if not trial.done]
        if undone:  # while the pre-study questionnaire is answered
            ahead.prepare(_trial_task(study, trials[undone[0]], tasks))
        await ask("pre_study", "")
        for index, trial in enumerate(trials):
            if not trial.done:
                if study.tasks.break_seconds and _new_block(trials, index):
                    await seat.rest(study.tasks.break_seconds)
                after = [later for later in undone if later > index]
                upcoming = _trial_task(study, trials[after[0]], tasks) if after else None
                await _run_trial(
                    store, study, trial, seat, tasks, backend, lender, ahead, upcoming,
                    options, progress, seed,
                )  # fmt: skip
                report.trials_run.append(trial.position)
            if not trial.practice:
                await ask("post_trial", f"trial:{trial.position}")
            if _last_of_condition(trials, index):
                await ask("post_condition", f"condition:{trial.condition}")
        await ask("post_study", "")
    finally:
        await ahead.close()
        if own:
            await lender.close()
    return report


def _trial_task(study: Study, trial: TrialRecord, tasks: Mapping[str, Task]) -> Task:
    """The task a trial runs: its task under the study's time limit, if it has one.

    Raises:
        DeskLoopError: the task is missing from `tasks`.
    """
    task = tasks.get(trial.task_id)
    if task is None:
        raise DeskLoopError(f"study {study.id}: no task {trial.task_id!r} was loaded")
    limit = study.tasks.time_limit
    if limit is not None:  # the study's limit replaces the task's own time budget
        task = task.model_copy(update={"budget": task.budget.model_copy(update={"seconds": limit})})
    return task


async def _run_trial(
    store: Store,
    study: Study,
    trial: TrialRecord,
    seat: Seat,
    tasks: Mapping[str, Task],
    backend: str,
    desktops: DesktopsByKind,
    ahead: StartAhead,
    upcoming: Task | None,
    options: RunOptions | None,
    progress: Callable[[str], None],
    seed: int,
) -> None:
    """Run one try of `trial` on the desktop prepared for it (else one the episode
    resets itself), while `upcoming`'s desktop is prepared for the next trial; the
    desktop goes back to `desktops` when the episode ends."""
    task = _trial_task(study, trial, tasks)
    desktop, prepared = await ahead.start(task, upcoming)
    condition = study.condition(trial.condition)
    code, position = trial.code, trial.position
    number = store.studies.start_try(study.id, code, position)
    what = "practice" if trial.practice else f"trial {position}"
    progress(f"{code} {what} ({condition.id}): {task.id}, try {number}")
    identity = {
        "study": study.id,
        "participant": code,
        "condition": condition.id,
        "position": position,
        "try": number,
        "seed": seed,
        "practice": trial.practice,
        "policy": condition.policy.model_dump(),
    }
    base = options or RunOptions()
    run_options = replace(base, extra_config={**base.extra_config, "study": identity})
    if condition.participant == "agent":
        agent = seat.agent(condition, task)
        user: User | str = "simulated"
    else:
        assert condition.agent_spec is not None
        agent, user = condition.agent_spec, seat.user(condition, task)
    try:
        episode = launch(
            task,
            store,
            backend=backend,
            agent=agent,
            user=with_policy(user, condition, task, store),
            desktop=desktop,
            prepared=prepared,
            options=run_options,
            progress=progress,
        )
        start = TrialStart(
            task, condition.policy, condition.participant == "agent", trial.practice, position
        )
        result = await seat.play(start, episode)
    except BaseException as exc:
        store.studies.end_try(
            study.id, code, position, number, "interrupted", f"{type(exc).__name__}: {exc}"[:500]
        )
        raise
    finally:
        desktops.give_back(desktop)
    store.studies.link_episode(study.id, code, position, number, result.episode_id)
    if is_infrastructure(result.error_kind):
        # The desktop or an endpoint failed, not the participant: the trial is tried
        # again when the session resumes, and this try says why it stopped.
        why = f"{result.error_kind}: {result.error}"[:500]
        store.studies.end_try(study.id, code, position, number, "interrupted", why)
        raise DeskLoopError(
            f"{code} {what} of study {study.id} was cut off ({why}); run the session "
            "again to resume at this trial"
        )
    store.studies.end_try(study.id, code, position, number, "done")


def with_policy(user: User | str, condition: Condition, task: Task, store: Store) -> User:
    """The trial's user (a spec is built) under the condition's policy."""
    built = make_user(user, task, cache_dir=llm_cache_dir(store)) if isinstance(user, str) else user
    policy = condition.policy
    if isinstance(built, PersonUser):
        # A person stays a person to the runner (due phases offered to them, their waits
        # off the budget), so the policy is set on them instead of wrapped around them.
        built.reviews_done = policy.may_give_feedback
        built.fixed_answer = None if policy.agent_may_ask else NO_ASKING_REPLY
        return built
    # A policy that forbids nothing leaves the user as it is (the runner tells a person
    # in the seat by their user's type).
    if policy.agent_may_ask and policy.may_give_feedback:
        return built
    return PolicyUser(built, condition)
