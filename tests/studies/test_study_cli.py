"""`deskloop study validate|plan` on the shipped example and on files written here."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.cli import main
from tests.studies.helpers import write_study

ROOT = Path(__file__).resolve().parents[2]


def test_the_example_study_is_valid_against_the_library(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["--tasks-dir", str(ROOT / "tasks"), "study", "validate", str(ROOT / "studies")]) == 0
    )
    assert "ok  " in capsys.readouterr().out


def test_validate_names_each_bad_file_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_study(tmp_path, "good", tasks={"blocks": [["t1"]]})
    bad = write_study(tmp_path, "bad", design={"participants": "sometimes"})
    tasks = tmp_path / "library" / "gimp"
    tasks.mkdir(parents=True)
    code = main(["--tasks-dir", str(tasks.parent), "study", "validate", str(tmp_path)])
    captured = capsys.readouterr()
    assert code == 1
    assert f"{bad}:" in captured.err and "design.participants: Input should be" in captured.err
    # The good file's tasks are not in this (empty) library: named, not a crash.
    assert "tasks.blocks[0][0]: no task 't1' in the library" in captured.err
    assert "2 of 2 study files are invalid" in captured.err


def test_plan_prints_orders_and_balance(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_study(
        tmp_path,
        conditions=[{"id": c, "agent": "reference"} for c in ("a", "b", "c")],
        tasks={"blocks": [["t1"], ["t2"], ["t3"]]},
    )
    db = str(tmp_path / "db.sqlite")
    assert main(["--db", db, "study", "plan", str(path), "--participants", "6", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "plan of seed 3" in out and "P06" in out and "P07" not in out
    assert "balanced by position: yes; by carry-over: yes" in out
    assert "recorded 6 participants" in out
    # A dry run of another size, by the study's id: printed, not recorded.
    dry = ["study", "--studies-dir", str(tmp_path), "plan", "study", "--participants", "4"]
    assert main(["--db", db, *dry, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "balanced by position: no" in out and "nothing was recorded" in out
