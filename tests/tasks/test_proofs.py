"""The proof ledger: what a proof is bound to, and how it is read.

The real library's ledger is checked by tests/tasks/test_library.py; these tests are about
the ledger's own logic, on a copy of one task in a temporary folder.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from app.cli import main
from app.tasks.loader import load_task
from app.tasks.proofs import cell_counts, proof_key, proof_path, read_proof, write_proof

ROOT = Path(__file__).resolve().parents[2]
GOOD_RUNS = {
    "reference": {"passed": True, "score": 1.0, "steps": 9, "seconds": 30.0},
    "null": {"passed": False, "score": 0.0, "steps": 1, "seconds": 8.0},
    "untouched": {"passed": False, "score": 0.0, "steps": 1, "seconds": 8.0},
}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """tasks/gimp/gimp-flip-export and what it needs, copied."""
    src = ROOT / "tasks" / "gimp"
    dst = tmp_path / "gimp"
    (dst / "assets").mkdir(parents=True)
    (dst / "references").mkdir()
    shutil.copy(src / "gimp-flip-export.yaml", dst)
    shutil.copy(src / "assets" / "photo.png", dst / "assets")
    shutil.copy(src / "references" / "gimp-flip-export.yaml", dst / "references")
    return dst


def _record(task_file: Path) -> Path:
    return write_proof(
        load_task(task_file),
        reference_kind="demonstration",
        evaluator="test+0",
        backend="local",
        runs=GOOD_RUNS,
    )


def test_the_key_follows_the_task_its_assets_and_its_reference(folder: Path) -> None:
    task_file = folder / "gimp-flip-export.yaml"
    keys = {proof_key(load_task(task_file))}
    # A file the task does not load leaves the key alone.
    (folder / "assets" / "unrelated.txt").write_text("x")
    assert proof_key(load_task(task_file)) in keys
    edits: list[tuple[Path, Callable[[bytes], bytes]]] = [
        (task_file, lambda b: b + b"# a comment\n"),
        (folder / "assets" / "photo.png", lambda b: b + b"\0"),
        (folder / "references" / "gimp-flip-export.yaml", lambda b: b + b"# edited\n"),
    ]
    for path, edit in edits:
        path.write_bytes(edit(path.read_bytes()))
        key = proof_key(load_task(task_file))
        assert key not in keys, path
        keys.add(key)


def test_a_recorded_proof_is_proven_until_the_task_changes(folder: Path) -> None:
    task_file = folder / "gimp-flip-export.yaml"
    assert read_proof(load_task(task_file)).state == "missing"
    path = _record(task_file)
    assert path == folder / "proofs" / "gimp-flip-export.json"
    status = read_proof(load_task(task_file))
    assert (status.state, status.evaluator) == ("proven", "test+0")
    reference = folder / "references" / "gimp-flip-export.yaml"
    reference.write_text(reference.read_text() + "# edited\n")
    status = read_proof(load_task(task_file))
    assert status.state == "stale" and str(path) in status.detail


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda r: r.update(format=99), "format"),
        (lambda r: r.update(task="other-task"), "not a proof of gimp-flip-export"),
        (lambda r: r["runs"]["null"].update(passed=True), "runs.null"),
        (lambda r: r["runs"].pop("untouched"), "runs.untouched"),
    ],
)
def test_a_proof_that_does_not_prove_is_invalid(
    folder: Path, edit: Callable[[dict[str, Any]], object], field: str
) -> None:
    task_file = folder / "gimp-flip-export.yaml"
    path = _record(task_file)
    record = json.loads(path.read_text())
    edit(record)
    path.write_text(json.dumps(record))
    status = read_proof(load_task(task_file))
    assert status.state == "invalid" and field in status.detail


def test_unreadable_proof_is_invalid_and_named(folder: Path) -> None:
    task_file = folder / "gimp-flip-export.yaml"
    proof_path(load_task(task_file)).parent.mkdir()
    proof_path(load_task(task_file)).write_text("{not json")
    status = read_proof(load_task(task_file))
    assert status.state == "invalid" and "gimp-flip-export.json" in status.detail


def test_cells_count_only_proven_tasks(folder: Path) -> None:
    task_file = folder / "gimp-flip-export.yaml"
    assert cell_counts([read_proof(load_task(task_file))])[("gimp", "L1", "standard")] == 0
    _record(task_file)
    counts = cell_counts([read_proof(load_task(task_file))])
    assert counts[("gimp", "L1", "standard")] == 1
    assert len(counts) == 24 and sum(counts.values()) == 1


def test_tasks_proofs_exit_code(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tasks", "proofs", str(folder)]) == 1
    assert "gimp-flip-export: missing" in capsys.readouterr().out
    _record(folder / "gimp-flip-export.yaml")
    assert main(["tasks", "proofs", str(folder)]) == 0
    assert "1 of 1 tasks proven" in capsys.readouterr().out
    # One proven task cannot fill every cell, nor a library of two.
    assert main(["tasks", "proofs", str(folder), "--min-per-cell", "1"]) == 1
    assert main(["tasks", "proofs", str(folder), "--min-total", "2"]) == 1
    assert main(["tasks", "proofs", str(folder), "--json"]) == 0
    report = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert report["proven"] == 1 and report["tasks"][0]["state"] == "proven"
