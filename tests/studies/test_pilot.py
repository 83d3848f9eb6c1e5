"""A study piloted end to end on real local desktops (xterm tasks whose references type
their proof): every stand-in's session runs to its end, each trial one recorded
episode, every questionnaire reached and left empty; a session killed mid-trial
resumes at that trial without losing or repeating anything."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from app.cli import main
from app.desktops.base import Desktop
from app.episode.ahead import DesktopsByKind
from app.episode.launch import DesktopSpec, make_spec_desktop
from app.store import Store
from app.studies.loader import load_study
from app.studies.pilot import StandIn, pilot_id, run_pilot
from app.studies.plans import plan_in_store, progress
from app.studies.session import run_session
from app.tasks.loader import load_task
from app.tasks.model import Task
from tests.studies.helpers import write_study
from tests.waiting import eventually

pytestmark = [pytest.mark.desktop, pytest.mark.timeout(900)]

TASK = """\
id: {id}
app: gimp
level: L1
title: Make {name}
instruction: Create the file ~/{name}.
setup:
  - launch: [xterm]
  - wait_window: {{class: XTerm, timeout: 60}}
reference: references/{id}.yaml
budget: {{steps: 10, seconds: 120}}
evaluate: {{check: file_exists, path: ~/{name}}}
"""
SCRIPT = '- type: "touch ~/{name}"\n- key: enter\n- wait: {wait}\n- done\n'


def _library(root: Path, wait: float = 0.5) -> dict[str, Task]:
    folder = root / "tasks" / "gimp"
    (folder / "references").mkdir(parents=True, exist_ok=True)
    tasks = {}
    for task_id, name in (("xa", "a.txt"), ("xb", "b.txt"), ("xc", "c.txt")):
        (folder / f"{task_id}.yaml").write_text(TASK.format(id=task_id, name=name))
        (folder / "references" / f"{task_id}.yaml").write_text(SCRIPT.format(name=name, wait=wait))
        tasks[task_id] = load_task(folder / f"{task_id}.yaml")
    return tasks


def _study(root: Path) -> Path:
    background = {
        "id": "background",
        "items": [{"id": "years", "kind": "number", "prompt": "Years?", "min": 0, "max": 60}],
    }
    return write_study(
        root / "studies",
        conditions=[
            {"id": "asks", "agent": "reference"},
            {"id": "silent", "agent": "reference", "policy": {"agent_may_ask": False}},
            {"id": "alone", "participant": "agent"},
        ],
        tasks={"blocks": [["xa"], ["xb"], ["xc"]], "time_limit": 90},
        design={"seed": 4},
        questionnaires={
            "pre_study": [background],
            "post_trial": ["nasa_tlx"],
            "post_condition": ["sus"],
        },
    )


async def test_a_three_condition_pilot_of_six_runs_to_its_end(tmp_path: Path) -> None:
    tasks = _library(tmp_path)
    study = load_study(_study(tmp_path))
    with Store(tmp_path / "db.sqlite") as store:
        made: list[Desktop] = []

        def make(spec: DesktopSpec) -> Desktop:
            made.append(make_spec_desktop(spec))
            return made[-1]

        report = await run_pilot(
            store, study, 6, tasks, backend="local", desktops=DesktopsByKind("local", make)
        )
        assert report.failed == {} and len(report.sessions) == 6
        # Each trial's desktop was prepared while the one before ran (the first while
        # the pre-study questionnaire was answered), on the kind's other desktop: two
        # desktops served all 18 trials.
        assert len(made) == 2
        piloted = study.model_copy(update={"id": pilot_id(study)})
        people = progress(store, piloted)
        assert [p.state for p in people] == ["done"] * 6
        for person in people:
            assert len(person.trials) == 3 and person.interrupted == 0
            for trial in person.trials:
                (done,) = trial.tries
                assert done.status == "done" and done.episode_id is not None
                episode = store.get_episode(done.episode_id)
                assert episode.task_id == trial.task_id and episode.passed
                assert episode.setup is not None and episode.setup["warm"]
                tags = episode.config["study"]
                assert (tags["participant"], tags["condition"], tags["position"]) == (
                    person.participant.code,
                    trial.condition,
                    trial.position,
                )
                assert tags["seed"] == 4 and tags["try"] == 1
                # The study's time limit, not the task's 120 s, bounded the trial.
                assert episode.config["budget_seconds"] == 90
        # The participant is the agent in "alone": the reference played it.
        alone = [t for p in people for t in p.trials if t.condition == "alone"]
        assert all(
            store.get_episode(t.tries[0].episode_id or 0).agent == "reference" for t in alone
        )
        answers = store.studies.responses(piloted.id)
        # 1 background item + 3 trials × 6 TLX items + 3 conditions × 10 SUS items, each.
        assert len(answers) == 6 * (1 + 3 * 6 + 3 * 10)
        assert {a.value for a in answers} == {None}
        # Nothing of the pilot is the study's own: its participants are untouched.
        assert store.studies.plan(study.id) is None


async def test_a_session_killed_mid_trial_resumes_at_that_trial(tmp_path: Path) -> None:
    tasks = _library(tmp_path, wait=30)  # a trial long enough to be killed in
    study = load_study(_study(tmp_path))
    with Store(tmp_path / "db.sqlite") as store:
        plan_in_store(store, study, 1)

        def acting() -> bool:
            """The first trial's episode has taken a step (the reference typed)."""
            running = [e for e in store.list_episodes() if e.status == "running"]
            return any(store.steps(e.id) for e in running)

        session = asyncio.ensure_future(
            run_session(store, study, "P01", StandIn(), tasks=tasks, backend="local", seed=4)
        )
        await eventually(acting, "the first trial's episode to take a step")
        session.cancel()
        with pytest.raises(asyncio.CancelledError):
            await session
        first = store.studies.trials(study.id, "P01")[0]
        assert [t.status for t in first.tries] == ["interrupted"]
        assert store.studies.answered(study.id, "P01") == {("pre_study", "", "background")}
        quick = _library(tmp_path)  # the same tasks, now quick
        report = await run_session(
            store, study, "P01", StandIn(), tasks=quick, backend="local", seed=4
        )
        assert report.resumed_after == [] and report.trials_run == [0, 1, 2]
        trials = store.studies.trials(study.id, "P01")
        assert [[t.status for t in trial.tries] for trial in trials] == [
            ["interrupted", "done"],
            ["done"],
            ["done"],
        ]
        # The pre-study questionnaire was not asked again; every other one once.
        points = [(a.point, a.context, a.instrument) for a in store.studies.responses(study.id)]
        assert points.count(("pre_study", "", "background")) == 1
        assert len(points) == 1 + 3 * 6 + 3 * 10


def test_the_pilot_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _library(tmp_path)
    path = _study(tmp_path)
    db = str(tmp_path / "db.sqlite")
    tasks = str(tmp_path / "tasks")
    argv = ["--db", db, "--tasks-dir", tasks, "study", "pilot", str(path), "--participants", "1"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "P01: 3 trials run, 7 questionnaires reached (left empty)" in out
    assert "pilot recorded as study pilot:study" in out
    # Again: everything is done, nothing runs twice.
    assert main(argv) == 0
    assert "P01: 0 trials run, 0 questionnaires reached" in capsys.readouterr().out
