"""A study's data as tidy tables: one row per observation, one column per variable,
participants as codes only. `study export` writes them and `study report` summarizes
them, so both read the same rows.

- `trials`: one row per participant × trial, with the trial's identity, its outcome
  and every collaboration measure (`app.studies.measures`);
- `responses`: long, one row per answered item, with its value and the item's score;
- `scores`: one row per questionnaire given, with its scores (an instrument's total
  and subscales, a custom item's own);
- `messages` and `steps`: one row per message and per step of the trials' episodes,
  without the words typed (kept in the database, never exported).

`COLUMNS` names every column of every table with its unit and how it is made: the
export's codebook is written from it, and a test holds each table to it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from app.store import Store
from app.store.study_records import TrialRecord
from app.studies.instruments import BUILTINS, Instrument, score_instrument
from app.studies.measures import MEASURES, trial_measures
from app.studies.model import Study

Row = dict[str, Any]

_TRIAL_ID = {
    "participant": ("code", "the participant's code (P01...); never a name"),
    "condition": ("id", "the condition of the trial (the study file's id)"),
    "condition_position": ("0-based", "the condition's place in the participant's order"),
    "position": ("0-based", "the trial's place in the participant's session"),
}
COLUMNS: dict[str, dict[str, tuple[str, str]]] = {
    "trials": {
        "study": ("id", "the study's id (pilot:<id> for a pilot)"),
        **_TRIAL_ID,
        "block": ("0-based", "the block of tasks the trial is from; -1 for the practice"),
        "practice": ("0/1", "the practice trial, never in the results"),
        "task": ("id", "the task's id"),
        "app": ("name", "the task's app"),
        "level": ("L1–L3", "the task's level"),
        "role": ("user/agent", "the participant's role in the condition"),
        "agent": ("spec", "the agent beside the participant ('person' when it is the participant)"),
        "seed": ("integer", "the plan's seed"),
        "tries": ("count", "tries of the trial (an interrupted one is tried again)"),
        "episode": ("id", "the episode of the trial's last try, in the database"),
        "status": ("word", "the episode's status: finished or error"),
        "end_reason": ("word", "why the episode ended (done, fail, step_budget, ...)"),
        "error_kind": ("word", "what failed when the episode ended in an error; empty otherwise"),
        "flags": ("count", "integrity flags raised on the episode"),
        "paused_s": ("s", "seconds the trial stood paused by the researcher (off its time limit)"),
        **{name: unit_and_meaning for name, unit_and_meaning in MEASURES.items()},
    },
    "responses": {
        "study": ("id", "the study's id"),
        "participant": _TRIAL_ID["participant"],
        "point": ("word", "when it was asked: pre_study, post_trial, post_condition, post_study"),
        "condition": ("id", "the condition the point followed (post_trial, post_condition)"),
        "position": ("0-based", "the trial the point followed (post_trial)"),
        "instrument": ("id", "nasa_tlx, sus, trust, or the study's own questionnaire"),
        "item": ("id", "the item's id within the instrument"),
        "value": ("as given", "the answer; empty when left unanswered; choices joined by ';'"),
        "item_score": (
            "number",
            "the item's own score (a Likert point, reversed when the item says so; a "
            "number); empty for choices and text",
        ),
    },
    "scores": {
        "study": ("id", "the study's id"),
        "participant": _TRIAL_ID["participant"],
        "point": ("word", "when it was asked"),
        "condition": ("id", "the condition the point followed"),
        "position": ("0-based", "the trial the point followed"),
        "instrument": ("id", "the instrument"),
        "scale": ("name", "score (the whole instrument) or a subscale; a custom item's id"),
        "score": ("number", "see docs/studies.md#questionnaires for each instrument's scoring"),
    },
    "messages": {
        "participant": _TRIAL_ID["participant"],
        "condition": _TRIAL_ID["condition"],
        "position": _TRIAL_ID["position"],
        "episode": ("id", "the trial's episode"),
        "idx": ("0-based", "the message's place in the conversation"),
        "role": ("user/agent", "who spoke"),
        "kind": (
            "word",
            "instruction, clarification, interruption, feedback, answer, question, done, fail",
        ),
        "source": ("word", "task, phase, simulated, person or agent"),
        "origin": ("word", "a person's message: script (sent as offered), edited, free"),
        "step": ("count", "the agent's steps before it"),
        "t_s": ("s", "seconds from the episode's start"),
        "wait_s": ("s", "how long the episode waited for the person's message"),
        "words": ("count", "words in the message (its text stays in the database)"),
    },
    "steps": {
        "participant": _TRIAL_ID["participant"],
        "condition": _TRIAL_ID["condition"],
        "position": _TRIAL_ID["position"],
        "episode": ("id", "the trial's episode"),
        "idx": ("0-based", "the step's place in the episode"),
        "actor": ("agent/person", "who took it (person: the participant taking over)"),
        "kind": ("word", "the action: click, type, key, drag, scroll, done, ask, ..."),
        "t_s": ("s", "seconds from the episode's start"),
        "decide_s": ("s", "time to decide the step"),
        "act_s": ("s", "time to perform it"),
        "settle_s": ("s", "time for the screen to settle after it"),
        "error": ("0/1", "the step was rejected (a malformed or impossible action)"),
    },
}


@dataclass(frozen=True)
class StudyData:
    trials: list[Row]
    responses: list[Row]
    scores: list[Row]
    messages: list[Row]
    steps: list[Row]

    def tables(self) -> dict[str, list[Row]]:
        return {
            "trials": self.trials,
            "responses": self.responses,
            "scores": self.scores,
            "messages": self.messages,
            "steps": self.steps,
        }


def _instrument(study: Study, point: str, instrument_id: str) -> Instrument | None:
    for instrument in study.questionnaires.at(point):  # type: ignore[arg-type]
        if instrument.id == instrument_id:
            return instrument
    return BUILTINS.get(instrument_id)


def _context(
    context: str, trials: dict[tuple[str, int], TrialRecord], code: str
) -> tuple[str | None, int | None]:
    kind, _, value = context.partition(":")
    if kind == "trial" and value.isdigit():
        trial = trials.get((code, int(value)))
        return (trial.condition if trial else None), int(value)
    if kind == "condition":
        return value, None
    return None, None


def _cell(value: Any) -> Any:
    return ";".join(map(str, value)) if isinstance(value, list) else value


def study_data(store: Store, study: Study, study_id: str | None = None) -> StudyData:
    """Every table of the study as recorded in `store` (`study_id`: the pilot's, to read
    a pilot). Withdrawn participants have no rows: their data were erased."""
    sid = study_id or study.id
    plan = store.studies.plan(sid)
    seed = plan.seed if plan is not None else None
    trials_rows: list[Row] = []
    messages_rows: list[Row] = []
    steps_rows: list[Row] = []
    by_position: dict[tuple[str, int], TrialRecord] = {}
    people = [p for p in store.studies.participants(sid) if p.withdrawn_at is None]
    for person in people:
        for trial in store.studies.trials(sid, person.code):
            by_position[(person.code, trial.position)] = trial
            row, messages, steps = _trial_rows(store, study, sid, seed, trial)
            trials_rows.append(row)
            messages_rows += messages
            steps_rows += steps
    responses: list[Row] = []
    scores: list[Row] = []
    given: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for answer in store.studies.responses(sid):
        key = (answer.code, answer.point, answer.context, answer.instrument)
        given.setdefault(key, {})[answer.item] = answer.value
    for (code, point, context, instrument_id), answers in given.items():
        condition, position = _context(context, by_position, code)
        where = {
            "study": sid,
            "participant": code,
            "point": point,
            "condition": condition,
            "position": position,
            "instrument": instrument_id,
        }
        instrument = _instrument(study, point, instrument_id)
        for item_id, value in answers.items():
            item = instrument.item(item_id) if instrument else None
            item_score = item.score(value) if item is not None and value is not None else None
            responses.append(
                {**where, "item": item_id, "value": _cell(value), "item_score": item_score}
            )
        if instrument is not None:
            for scale, score in score_instrument(instrument, answers).items():
                scores.append({**where, "scale": scale, "score": score})
    return StudyData(trials_rows, responses, scores, messages_rows, steps_rows)


def _trial_rows(
    store: Store, study: Study, sid: str, seed: int | None, trial: TrialRecord
) -> tuple[Row, list[Row], list[Row]]:
    condition = study.condition(trial.condition)
    last = trial.tries[-1] if trial.tries else None
    episode = store.get_episode(last.episode_id) if last and last.episode_id else None
    ident = {"participant": trial.code, "condition": trial.condition, "position": trial.position}
    row: Row = {
        "study": sid,
        **ident,
        "condition_position": trial.condition_position,
        "block": trial.block,
        "practice": int(trial.practice),
        "task": trial.task_id,
        "app": episode.app if episode else None,
        "level": episode.level if episode else None,
        "role": condition.participant,
        "agent": "person" if condition.participant == "agent" else str(condition.agent_spec),
        "seed": seed,
        "tries": len(trial.tries),
        "episode": episode.id if episode else None,
        "status": episode.status if episode else None,
        "end_reason": episode.end_reason if episode else None,
        "error_kind": episode.error_kind if episode else None,
        "flags": None,
        "paused_s": episode.paused_seconds if episode else None,
        **{name: None for name in MEASURES},
    }
    if episode is None:
        return row, [], []
    steps = store.steps(episode.id)
    messages = store.messages(episode.id)
    flags, _ = store.flags(episode.id)
    row["flags"] = len(flags)
    row.update(trial_measures(episode, steps, messages, condition.participant).as_row())
    start = episode.started_at
    message_rows = [
        {
            **ident,
            "episode": episode.id,
            "idx": m.idx,
            "role": m.role,
            "kind": m.kind,
            "source": m.source,
            "origin": m.origin,
            "step": m.step,
            "t_s": (m.created_at - start).total_seconds(),
            "wait_s": m.wait_seconds,
            "words": len(m.text.split()),
        }
        for m in messages
    ]
    step_rows = [
        {
            **ident,
            "episode": episode.id,
            "idx": s.idx,
            "actor": s.actor,
            "kind": s.kind,
            "t_s": (s.started_at - start).total_seconds(),
            "decide_s": s.agent_seconds,
            "act_s": s.act_seconds,
            "settle_s": s.settle_seconds,
            "error": int(s.error is not None),
        }
        for s in steps
    ]
    return row, message_rows, step_rows


def codebook(study_id: str) -> Iterator[str]:
    """The codebook's Markdown, table by table."""
    yield f"# Codebook: study {study_id}\n"
    yield (
        "Every file comes as CSV and Parquet with the same columns. Participants are "
        "codes; nothing names a person. The collaboration measures are defined in "
        "docs/studies.md#collaboration-measures, the questionnaires' scoring in "
        "docs/studies.md#questionnaires.\n"
    )
    for table, columns in COLUMNS.items():
        yield f"\n## {table}\n\n| column | unit | meaning |\n|---|---|---|"
        for name, (unit, meaning) in columns.items():
            yield f"| `{name}` | {unit} | {meaning} |"
    yield ""
