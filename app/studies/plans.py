"""A study's plan kept in the store, and where each participant stands.

`plan_in_store` draws a study's plan once (its seed is then the store's, for good) and
grows it: asking for more participants later gives the new codes the next rows of the
same design, so a study can start with 12 and add 6. `progress` reads where every
participant stands, for `study status` and the TUI.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from app.core.errors import DeskLoopError
from app.store import Store
from app.store.study_records import ParticipantPlan, ParticipantRecord, TrialPlan, TrialRecord
from app.studies.design import (
    Assignment,
    Balance,
    Plan,
    balance,
    draw_seed,
    participant_codes,
    plan_study,
)
from app.studies.model import Study


def study_sha256(study: Study) -> str:
    return hashlib.sha256(study.source.read_bytes()).hexdigest()


def plan_in_store(
    store: Store, study: Study, participants: int, seed: int | None = None
) -> tuple[Plan, list[str]]:
    """The plan of P01..P`participants`, recorded: drawn the first time (from `seed`,
    else the study's, else a fresh one), grown after. Returns the whole plan and the
    codes it added.

    Raises:
        DeskLoopError: fewer participants than the plan has, a seed other than the
            plan's, or conditions other than those the plan was drawn for.
    """
    recorded = store.studies.plan(study.id)
    known = store.studies.participants(study.id)
    if participants < len(known):
        raise DeskLoopError(
            f"--participants: study {study.id} has {len(known)} participants already; "
            "a plan only grows (withdraw a participant instead)"
        )
    if recorded is not None:
        if seed is not None and seed != recorded.seed:
            raise DeskLoopError(
                f"--seed: study {study.id} was planned with seed {recorded.seed}; "
                "a plan is not drawn again"
            )
        seed = recorded.seed
    else:
        seed = seed if seed is not None else study.design.seed
        seed = seed if seed is not None else draw_seed()
    plan = plan_study(study, participant_codes(participants), seed)
    added = store.studies.save_plan(
        study_id=study.id,
        seed=seed,
        study_path=str(study.source),
        study_sha256=study_sha256(study),
        conditions=[c.id for c in study.conditions],
        participants=[_stored(a) for a in plan.assignments],
    )
    return plan, added


def _stored(assignment: Assignment) -> ParticipantPlan:
    return ParticipantPlan(
        code=assignment.code,
        design_row=assignment.row,
        conditions=assignment.conditions,
        trials=tuple(
            TrialPlan(t.position, t.condition, t.task, t.block, t.condition_position)
            for t in assignment.trials
        ),
    )


State = Literal["planned", "consented", "mid-way", "done", "withdrawn"]


@dataclass(frozen=True)
class Progress:
    """Where one participant stands."""

    participant: ParticipantRecord
    trials: tuple[TrialRecord, ...]

    @property
    def done(self) -> int:
        return sum(t.done for t in self.trials)

    @property
    def interrupted(self) -> int:
        """Tries that were cut off (each trial tried again afterwards counts too)."""
        return sum(1 for t in self.trials for x in t.tries if x.status == "interrupted")

    @property
    def next_trial(self) -> TrialRecord | None:
        return next((t for t in self.trials if not t.done), None)

    def row(self) -> list[str]:
        """The participant as `study status` and the TUI's Studies screen list them:
        code, state, condition order, trials done, tries interrupted, next trial."""
        upcoming = self.next_trial
        return [
            self.participant.code,
            self.state,
            " → ".join(self.participant.conditions),
            f"{self.done}/{len(self.trials)}",
            str(self.interrupted),
            "" if upcoming is None else f"{upcoming.position}: {upcoming.task_id}",
        ]

    @property
    def state(self) -> State:
        if self.participant.withdrawn_at is not None:
            return "withdrawn"
        if self.next_trial is None and self.trials:
            return "done"
        if self.participant.consented_at is None:
            return "planned"
        return "mid-way" if any(t.tries for t in self.trials) else "consented"


ROW_HEADER = ("participant", "state", "conditions", "trials done", "interrupted", "next")
"""The columns of `Progress.row`."""


def progress(store: Store, study: Study) -> list[Progress]:
    """Every participant of the study's plan, in the plan's order.

    Raises:
        DeskLoopError: the study has no plan yet.
    """
    if store.studies.plan(study.id) is None:
        raise DeskLoopError(
            f"study {study.id} has no plan in {store.path}; "
            f"make one with: deskloop study plan {study.id} --participants N"
        )
    return [
        Progress(p, tuple(store.studies.trials(study.id, p.code)))
        for p in store.studies.participants(study.id)
    ]


def balance_so_far(study: Study, people: Sequence[Progress]) -> Balance:
    """The balance of the condition orders of those who finished (withdrawn left out,
    so the gap they leave shows)."""
    finished = [p.participant.conditions for p in people if p.state == "done"]
    return balance(finished, tuple(c.id for c in study.conditions))
