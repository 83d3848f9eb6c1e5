"""The export a statistician loads: a study recorded in a real store (a trial's episode
written step by step, answers to NASA-TLX, SUS and the trust scale), exported, loaded
with pandas, and held against scores and measures worked out by hand; a withdrawal
leaves nothing of the participant."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from app.cli import main
from app.store import Store
from app.studies.data import COLUMNS
from app.studies.loader import load_study
from app.studies.plans import plan_in_store
from tests.store.helpers import png_of
from tests.studies.helpers import write_study
from tests.studies.test_measures import _record_collaboration

SUS_ANSWERS = [4, 2, 5, 1, 4, 2, 5, 1, 4, 3]  # 82.5, as worked out in test_instruments
TRUST_ANSWERS = [2, 1, 3, 2, 1, 6, 5, 6, 7, 6, 6, 4]  # 71/12
TLX = {
    "mental": 70,
    "physical": 10,
    "temporal": 55,
    "performance": 25,
    "effort": 60,
    "frustration": 40,
}  # mean 260/6


def _recorded(tmp_path: Path) -> tuple[Path, Path]:
    path = write_study(
        tmp_path / "studies",
        conditions=[{"id": "asks", "agent": "reference"}],
        tasks={"blocks": [["gimp-flip"]]},
        design={"seed": 1},
        questionnaires={"post_trial": ["nasa_tlx"], "post_condition": ["sus", "trust"]},
    )
    db = tmp_path / "db.sqlite"
    study = load_study(path)
    with Store(db) as store:
        plan_in_store(store, study, 2)
        for code in ("P01", "P02"):
            studies = store.studies
            studies.record_consent("study", code)
            number = studies.start_try("study", code, 0)
            episode = _record_collaboration(store)
            store.save_frame(episode, 0, png_of(7))
            studies.link_episode("study", code, 0, number, episode)
            studies.end_try("study", code, 0, number, "done")
            studies.record_answers(
                "study",
                code,
                point="post_trial",
                context="trial:0",
                instrument="nasa_tlx",
                answers=TLX,
            )
            for instrument, values in (("sus", SUS_ANSWERS), ("trust", TRUST_ANSWERS)):
                studies.record_answers(
                    "study",
                    code,
                    point="post_condition",
                    context="condition:asks",
                    instrument=instrument,
                    answers={f"q{n}": v for n, v in enumerate(values, 1)},
                )
    return path, db


def test_the_export_loads_in_pandas_and_matches_the_hand_worked_figures(tmp_path: Path) -> None:
    path, db = _recorded(tmp_path)
    out = tmp_path / "export"
    assert main(["--db", str(db), "study", "export", str(path), str(out)]) == 0
    codebook = (out / "codebook.md").read_text()
    for table, columns in COLUMNS.items():
        csv, parquet = pd.read_csv(out / f"{table}.csv"), pd.read_parquet(out / f"{table}.parquet")
        assert list(csv.columns) == list(parquet.columns) == list(columns), table
        assert len(csv) == len(parquet)
        for column in columns:
            assert f"| `{column}` |" in codebook, (table, column)
    trials = pd.read_parquet(out / "trials.parquet")
    assert list(trials["participant"]) == ["P01", "P02"]
    first = trials.iloc[0]
    assert first["initiative_entropy"] == pytest.approx(
        -(4 / 6) * math.log2(4 / 6) - (2 / 6) * math.log2(2 / 6)
    )
    assert first["participant_active_s"] == pytest.approx(26.0)
    assert (first["asks"], first["asks_answered"], first["passed"]) == (2, 1, 1)
    scores = pd.read_csv(out / "scores.csv")
    mine = scores[scores["participant"] == "P01"].set_index(["instrument", "scale"])["score"]
    assert mine[("nasa_tlx", "score")] == pytest.approx(260 / 6)
    assert mine[("sus", "score")] == pytest.approx(82.5)
    assert mine[("trust", "score")] == pytest.approx(71 / 12)
    assert mine[("trust", "distrust")] == pytest.approx(9 / 5)
    responses = pd.read_csv(out / "responses.csv")
    hated = responses[(responses["instrument"] == "sus") & (responses["item"] == "q2")]
    assert list(hated["value"]) == [2, 2] and list(hated["condition"]) == ["asks", "asks"]
    tlx = responses[responses["instrument"] == "nasa_tlx"]
    assert set(tlx["position"]) == {0}
    # No column of any table holds a person's words or name.
    messages = pd.read_csv(out / "messages.csv")
    assert "text" not in messages.columns and len(messages) == 2 * 7


def test_a_withdrawal_erases_everything_of_the_participant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, db = _recorded(tmp_path)
    with Store(db) as store:
        (p01,) = store.studies.trials("study", "P01")
        episode = p01.tries[0].episode_id
        assert episode is not None
        frames = store.frames.root / str(episode)
        assert any(frames.glob("*.png"))
    assert main(["--db", str(db), "study", "withdraw", str(path), "P01", "--yes"]) == 0
    said = capsys.readouterr().out
    # 6 TLX items + 10 SUS + 12 trust answers; the episode's 7 steps and 7 messages.
    assert (
        "P01 withdrew from study; erased: 1 episodes, 7 steps, 7 messages, 28 responses, "
        "1 tries, 1 frames" in said
    )
    with Store(db) as store:
        assert all(e.id != episode for e in store.list_episodes(limit=None))
        assert not frames.exists()
        assert store.studies.responses("study") and all(
            r.code == "P02" for r in store.studies.responses("study")
        )
        person = store.studies.participant("study", "P01")
        assert person.withdrawn_at is not None and person.erased is not None
        assert store.studies.trials("study", "P01")[0].tries == ()
        # The other participant's episode is whole.
        (p02,) = store.studies.trials("study", "P02")
        assert p02.tries[0].episode_id is not None
        assert len(store.steps(p02.tries[0].episode_id)) == 7
    out = tmp_path / "export"
    assert main(["--db", str(db), "study", "export", str(path), str(out)]) == 0
    for table in COLUMNS:
        frame = pd.read_csv(out / f"{table}.csv")
        assert "P01" not in set(frame.get("participant", [])), table
    assert main(["--db", str(db), "study", "status", str(path)]) == 0
    assert "P01           withdrawn" in capsys.readouterr().out
