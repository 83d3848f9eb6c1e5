"""`deskloop tasks verify`: every shipped task is proven on a real desktop.

tests/tasks/test_library_sample.py already runs the sampled tasks' reference solutions (score 1)
and the null agent (score 0). Here: the third proof, the untouched start state, for
the sampled GIMP tasks through `verify_tasks`; the whole command end to end; and how
verdicts are judged.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from app.core.outcomes import CheckOutcome
from app.episode.events import EpisodeResult
from app.proving.verify import judge, reference_kind, verify_tasks
from app.store import Store
from app.tasks.loader import load_task, task_files
from tests.check_outcomes import outcome
from tests.library_sample import sample_paths

ROOT = Path(__file__).resolve().parents[2]
GIMP_TASKS = task_files(ROOT / "tasks" / "gimp")


def result(
    status: str = "finished",
    passed: bool | None = True,
    score: float | None = 1.0,
    checks: list[CheckOutcome] | None = None,
) -> EpisodeResult:
    return EpisodeResult(1, "t", status, "done", passed, score, 3, None, checks or [])


def test_judge_wants_a_full_pass_from_the_reference() -> None:
    assert judge("reference", result()) == (True, "passed, score 1.00")
    check = outcome("evaluate.all[1]", passed=False, score=0.0, evidence="out.png is 511×512")
    ok, why = judge("reference", result(passed=True, score=0.9, checks=[check]))
    assert not ok and "score 0.90" in why and "out.png is 511×512" in why
    assert not judge("reference", result(passed=False, score=1.0))[0]


def test_judge_wants_nothing_from_null_and_untouched() -> None:
    for mode in ("null", "untouched"):
        assert judge(mode, result(passed=False, score=0.0))[0]
        check = outcome("evaluate.all[0]", passed=True, score=1.0, evidence="a.png exists")
        ok, why = judge(mode, result(passed=False, score=0.25, checks=[check]))
        assert not ok and "passing on the start state: evaluate.all[0]: a.png exists" in why


def test_an_episode_error_never_counts_as_the_expected_zero() -> None:
    errored = EpisodeResult(1, "t", "error", "error", None, None, 0, "setup failed: no GIMP")
    ok, why = judge("null", errored)
    assert not ok and why == "episode ended in error: setup failed: no GIMP"


def test_reference_kinds_are_read_from_the_reference_files() -> None:
    kinds = {reference_kind(load_task(path)) for path in GIMP_TASKS}
    assert kinds <= {"demonstration", "oracle"}


@pytest.mark.desktop
@pytest.mark.parametrize("task_path", sample_paths("gimp"), ids=lambda p: p.stem)
async def test_untouched_start_state_scores_zero(task_path: Path, tmp_path: Path) -> None:
    task = load_task(task_path)
    with Store(tmp_path / "db.sqlite") as store:
        (verdict,) = await verify_tasks([task], store, modes=("untouched",))
        (run,) = verdict.runs
        assert run.ok, run.reason
        episode = store.get_episode(run.episode_id or -1)
        assert episode.agent == "untouched" and episode.status == "finished"
        assert episode.passed is False and episode.score == 0.0
        # Nothing was done: the only step is the placeholder's FAIL, and no phase arrived.
        assert [s.kind for s in store.steps(episode.id)] == ["fail"]
        assert all(p.status == "never_delivered" for p in store.phases(episode.id))


def verify_cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "--db", str(db), "tasks", "verify", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.mark.desktop
def test_verify_command_proves_a_task_and_records_three_episodes(tmp_path: Path) -> None:
    """End to end on an interactive task, whose phase carries checks of its own."""
    db = tmp_path / "db.sqlite"
    out = verify_cli(db, "tasks/gimp/gimp-card-interactive.yaml")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 of 1 tasks verified (reference, null, untouched)" in out.stdout
    assert "[1/1] gimp-card-interactive reference: ok — passed, score 1.00" in out.stderr
    row = next(line for line in out.stdout.splitlines() if line.startswith("gimp-card"))
    assert row.split()[:5] == [
        "gimp-card-interactive",
        "gimp",
        "L2",
        "interactive",
        "demonstration",
    ]
    assert row.rstrip().endswith("ok")
    # The counts by app × level × kind: one row "gimp L2 interactive 1".
    assert ["gimp", "L2", "interactive", "1"] in [line.split() for line in out.stdout.splitlines()]
    with Store(db) as store:
        episodes = sorted(store.list_episodes(), key=lambda e: e.id)
        assert [(e.agent, e.passed) for e in episodes] == [
            ("reference", True),
            ("null", False),
            ("untouched", False),
        ]
        reference, null, untouched = (store.checks(e.id) for e in episodes)
        # The phase's checks ran when the first DONE delivered it, apart from the score.
        phase_rows = [(c.phase, c.path, c.passed) for c in reference if c.phase is not None]
        assert phase_rows == [(0, "phases[0].checks.all[0]", True)]
        assert all(c.passed for c in reference)
        # The null agent's DONE delivered the phase too, before anything was exported.
        assert [(c.phase, c.passed) for c in null if c.phase is not None] == [(0, False)]
        assert all(c.phase is None for c in untouched)  # FAIL delivers no phase
        # The phase's row keeps its tree's result, which the per-phase rates read.
        phases = [[(p.status, p.passed) for p in store.phases(e.id)] for e in episodes]
        assert [rows[0] for rows in phases] == [
            ("delivered", True),
            ("delivered", False),
            ("never_delivered", None),
        ]


@pytest.mark.desktop
def test_verify_command_fails_a_task_that_passes_untouched(tmp_path: Path) -> None:
    """A task whose checks already hold on the start state is caught, with the reason."""
    folder = tmp_path / "tasks" / "gimp"
    (folder / "assets").mkdir(parents=True)
    source = ROOT / "tasks" / "gimp"
    (folder / "assets" / "photo.png").write_bytes((source / "assets" / "photo.png").read_bytes())
    text = (source / "gimp-flip-export.yaml").read_text()
    text = text.replace("id: gimp-flip-export", "id: gimp-too-easy").replace(
        "photo-flipped.png}", "photo.png}"
    )
    text = text.replace("reference: references/gimp-flip-export.yaml\n", "")
    (folder / "gimp-too-easy.yaml").write_text(text)
    db = tmp_path / "db.sqlite"
    out = verify_cli(db, str(folder), "--modes", "null", "--json")
    assert out.returncode == 1, out.stdout + out.stderr
    payload = json.loads(out.stdout.strip().splitlines()[-1])
    assert payload["ok"] is False
    (task,) = payload["tasks"]
    assert task["task"] == "gimp-too-easy" and task["reference_kind"] == "none"
    run = task["runs"]["null"]
    assert run["ok"] is False and run["score"] > 0
    assert "passing on the start state" in run["reason"] and "photo.png exists" in run["reason"]
