"""`study pilot`: the whole plan run with simulated participants, before any person
sits down.

A pilot is its own study in the store (`pilot:<id>`), so its data never mixes with
the participants': the same plan (same seed, same orders), every participant a
stand-in (`StandIn`) that consents, plays the user as the condition's `stand_in` says
(the phase script's messages as written, or the LLM user) or the agent (the task's
reference), and leaves every questionnaire empty: its answers are recorded as None, so
the export shows the questionnaires were reached. Running the pilot again resumes it:
finished trials are kept, interrupted ones are tried again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from app.agents.spec import AgentSpec, ReferenceSpec
from app.core.errors import DeskLoopError
from app.core.vocabulary import QuestionnairePoint
from app.episode.ahead import DesktopsByKind
from app.episode.control import RunOptions
from app.episode.events import EpisodeResult
from app.episode.launch import Episode
from app.store import Store
from app.studies.instruments import AnswerValue, Instrument
from app.studies.model import Condition, Study
from app.studies.plans import plan_in_store
from app.studies.session import SessionReport, TrialStart, run_session
from app.tasks.model import Task
from app.users.simulated import User

PILOT_PREFIX = "pilot:"


def pilot_id(study: Study) -> str:
    """The store's id of the study's pilot (a study id has no ':', so none collides)."""
    return f"{PILOT_PREFIX}{study.id}"


class StandIn:
    """A simulated participant (see the module docstring)."""

    simulated = True

    async def consent(self, text: str) -> bool:
        return True

    def user(self, condition: Condition, task: Task) -> User | str:
        return "llm" if condition.pilot_stand_in == "llm" else "simulated"

    def agent(self, condition: Condition, task: Task) -> AgentSpec:
        return ReferenceSpec()

    async def answer(
        self, instrument: Instrument, point: QuestionnairePoint, context: str
    ) -> Mapping[str, AnswerValue]:
        return {}

    async def play(self, trial: TrialStart, episode: Episode) -> EpisodeResult:
        return await episode.run()

    async def rest(self, seconds: float) -> None:
        return None  # a stand-in needs no break


@dataclass
class PilotReport:
    study: str
    sessions: list[SessionReport]
    failed: dict[str, str]
    """Participants whose session stopped, and why (run the pilot again to resume)."""


async def run_pilot(
    store: Store,
    study: Study,
    participants: int,
    tasks: Mapping[str, Task],
    *,
    backend: str,
    options: RunOptions | None = None,
    progress: Callable[[str], None] = lambda _: None,
    desktops: DesktopsByKind | None = None,
) -> PilotReport:
    """Plan P01..P`participants` under the pilot's id (the study's seed) and run each
    one's session to its end with a stand-in; a session that stops (a desktop died) is
    reported and the others go on. `desktops`: where the trials' desktops come from
    (tests count them); None: the pilot's own, closed when it ends."""
    piloted = study.model_copy(update={"id": pilot_id(study)})
    plan, _ = plan_in_store(store, piloted, participants, study.design.seed)
    sessions: list[SessionReport] = []
    failed: dict[str, str] = {}
    # Shared by the sessions: each trial's desktop is prepared while the one before
    # runs, on the kind's other desktop, so each kind boots at most twice.
    lender = desktops if desktops is not None else DesktopsByKind(backend)
    try:
        for assignment in plan.assignments:
            try:
                report = await run_session(
                    store,
                    piloted,
                    assignment.code,
                    StandIn(),
                    tasks=tasks,
                    backend=backend,
                    desktops=lender,
                    options=options,
                    progress=progress,
                    seed=plan.seed,
                )
            except DeskLoopError as exc:
                progress(f"{assignment.code}: stopped: {exc}")
                failed[assignment.code] = str(exc)
                continue
            sessions.append(report)
    finally:
        if desktops is None:
            await lender.close()
    return PilotReport(piloted.id, sessions, failed)
