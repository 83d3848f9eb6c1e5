"""A study's plan, trials and answers in a real store: a plan drawn once and grown,
nothing recorded before consent, an interrupted try kept beside the next, an answer
never given twice."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.cli import main
from app.core.errors import DeskLoopError, StoreError
from app.store import Store
from app.studies.loader import load_study
from app.studies.plans import plan_in_store, progress
from tests.store.helpers import new_episode
from tests.studies.helpers import write_study


def _three_conditions(tmp_path: Path) -> Path:
    return write_study(
        tmp_path,
        conditions=[{"id": c, "agent": "reference"} for c in ("a", "b", "c")],
        tasks={"practice": "p", "blocks": [["t1", "t2"], ["t3", "t4"], ["t5", "t6"]]},
        design={"seed": 9},
    )


def test_a_plan_is_drawn_once_and_grows_on_the_same_design(tmp_path: Path) -> None:
    study = load_study(_three_conditions(tmp_path))
    with Store(tmp_path / "db.sqlite") as store:
        first, added = plan_in_store(store, study, 4)
        assert added == ["P01", "P02", "P03", "P04"]
        whole, added = plan_in_store(store, study, 6)
        assert added == ["P05", "P06"] and whole.assignments[:4] == first.assignments
        assert plan_in_store(store, study, 6)[1] == []
        with pytest.raises(DeskLoopError, match="planned with seed 9; a plan is not drawn again"):
            plan_in_store(store, study, 6, seed=10)
        with pytest.raises(DeskLoopError, match="has 6 participants already"):
            plan_in_store(store, study, 5)
        stored = store.studies.participants(study.id)
        assert [p.conditions for p in stored] == [a.conditions for a in whole.assignments]
        trials = store.studies.trials(study.id, "P02")
        assert [(t.position, t.task_id) for t in trials] == [
            (t.position, t.task) for t in whole.assignments[1].trials
        ]
        assert trials[0].practice and not trials[1].practice


def test_trials_are_tried_after_consent_and_interrupted_tries_are_kept(tmp_path: Path) -> None:
    study = load_study(_three_conditions(tmp_path))
    with Store(tmp_path / "db.sqlite") as store:
        plan_in_store(store, study, 1)
        studies = store.studies
        with pytest.raises(StoreError, match="has not consented; no trial is recorded"):
            studies.start_try("study", "P01", 0)
        studies.record_consent("study", "P01")
        assert studies.start_try("study", "P01", 0) == 1
        with pytest.raises(StoreError, match="trial 0 of P01 is running"):
            studies.start_try("study", "P01", 0)
        # The session died: its try is kept, interrupted, and the trial is tried again.
        assert studies.interrupt_running("study", "P01", "the terminal closed") == [0]
        assert studies.start_try("study", "P01", 0) == 2
        episode = new_episode(store)
        studies.link_episode("study", "P01", 0, 2, episode)
        studies.end_try("study", "P01", 0, 2, "done")
        with pytest.raises(StoreError, match="is done already"):
            studies.start_try("study", "P01", 0)
        with pytest.raises(StoreError, match="is not running"):
            studies.end_try("study", "P01", 0, 2, "interrupted")
        practice = studies.trials("study", "P01")[0]
        assert [(t.number, t.status, t.episode_id) for t in practice.tries] == [
            (1, "interrupted", None),
            (2, "done", episode),
        ]
        assert practice.tries[0].note == "the terminal closed"
        (person,) = progress(store, study)
        assert (person.state, person.done, person.interrupted) == ("mid-way", 1, 1)
        assert person.next_trial is not None and person.next_trial.position == 1


def test_an_answer_is_never_given_twice(tmp_path: Path) -> None:
    study = load_study(_three_conditions(tmp_path))
    with Store(tmp_path / "db.sqlite") as store:
        plan_in_store(store, study, 1)
        answer = store.studies.record_answers
        with pytest.raises(StoreError, match="has not consented"):
            answer("study", "P01", point="pre_study", context="", instrument="x", answers={})
        store.studies.record_consent("study", "P01")
        tlx = {
            "mental": 55,
            "physical": 5,
            "temporal": 40,
            "performance": 20,
            "effort": 50,
            "frustration": None,
        }
        answer(
            "study",
            "P01",
            point="post_trial",
            context="trial:1",
            instrument="nasa_tlx",
            answers=tlx,
        )
        with pytest.raises(StoreError, match="answered nasa_tlx at post_trial trial:1 already"):
            answer(
                "study",
                "P01",
                point="post_trial",
                context="trial:1",
                instrument="nasa_tlx",
                answers={"mental": 0},
            )
        # Nothing of the refused second answer was written.
        kept = store.studies.responses("study")
        assert {r.item: r.value for r in kept} == tlx
        assert store.studies.answered("study", "P01") == {("post_trial", "trial:1", "nasa_tlx")}


def test_status_says_who_stands_where(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _three_conditions(tmp_path)
    db = str(tmp_path / "db.sqlite")
    with pytest.raises(SystemExit):
        main(["--db", db, "study", "status"])
    assert main(["--db", db, "study", "status", str(path)]) == 2
    assert "has no plan" in capsys.readouterr().err
    assert main(["--db", db, "study", "plan", str(path), "--participants", "2"]) == 0
    with Store(db) as store:
        store.studies.record_consent("study", "P02")
    assert main(["--db", db, "study", "status", str(path)]) == 0
    out = capsys.readouterr().out
    assert "P01           planned" in out and "P02           consented" in out
    assert "1 planned, 1 consented; 14 trials left" in out
