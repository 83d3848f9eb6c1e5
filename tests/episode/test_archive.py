"""The final-state archive and re-scoring, on real files.

A guest over a plain folder (no desktop: what is under test is the archive's own
logic) holds the exported image; scoring reads it through the recorder, the archive
keeps it as content-addressed blobs, and re-scoring with a changed threshold replays
the same reads from the archive and records a second score beside the first. The
same on a real desktop with GIMP is tests/test_archive_desktop.py.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest
from PIL import Image, ImageOps

from app.cli import main
from app.desktops.local.guest import LocalGuest
from app.episode.archive import RecordingSource, keep, rescore
from app.episode.scoring import GuestSource, evaluator_version, score_task
from app.store import Store
from app.tasks.loader import load_task
from app.tasks.model import Task

ROOT = Path(__file__).resolve().parents[2]
FLIP = ROOT / "tasks" / "gimp" / "gimp-flip-export.yaml"
MODIFIED_CHECK = "    - {check: file_modified_after_start, path: ~/Desktop/photo-flipped.png}\n"


def task_copy(tmp_path: Path) -> Path:
    """gimp-flip-export in a folder of its own, with a check that needs a probe."""
    folder = tmp_path / "tasks"
    shutil.copytree(FLIP.parent / "assets", folder / "assets")
    text = FLIP.read_text().replace("reference: references/gimp-flip-export.yaml\n", "")
    text = text.replace("evaluate:\n  all:\n", "evaluate:\n  all:\n" + MODIFIED_CHECK)
    path = folder / FLIP.name
    path.write_text(text)
    return path


def guest_with_flipped_photo(tmp_path: Path) -> LocalGuest:
    home = tmp_path / "home"
    (home / "Desktop").mkdir(parents=True)
    photo = Image.open(FLIP.parent / "assets" / "photo.png")
    ImageOps.mirror(photo).save(home / "Desktop" / "photo-flipped.png")
    (tmp_path / "logs").mkdir()
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    env.update(HOME=str(home), TMPDIR=str(home))
    return LocalGuest(home, env, tmp_path / "logs", sandbox=None)


def start(store: Store, task: Task) -> int:
    return store.start_episode(
        task_id=task.id,
        task_path=task.source,
        task_sha256=task.sha256,
        app=task.app,
        level=task.level,
        interactive=False,
        agent="reference",
        user_mode="simulated",
        backend="local",
    )


async def score_and_keep(
    store: Store, task: Task, guest: LocalGuest, cap: int = 1 << 30
) -> tuple[int, object]:
    episode = start(store, task)
    recording = RecordingSource(GuestSource(guest))
    result = await score_task(task, recording, started_at=0.0)
    store.record_score(episode, passed=result.passed, score=result.score, checks=result.checks)
    kept = keep(store, episode, recording.recorded, 0.0, cap)
    store.finish_episode(episode, status="finished", end_reason="done", steps=1)
    return episode, kept


async def test_rescore_with_a_changed_threshold_records_a_second_score(tmp_path: Path) -> None:
    path = task_copy(tmp_path)
    task = load_task(path)
    guest = guest_with_flipped_photo(tmp_path)
    with Store(tmp_path / "db" / "lab.db") as store:
        episode, _ = await score_and_keep(store, task, guest)
        assert store.get_episode(episode).passed is True
        archive = store.get_archive(episode)
        assert archive is not None and archive.evaluator == evaluator_version()
        blob = archive.manifest["files"]["~/Desktop/photo-flipped.png"]["blob"]
        kept = store.archive_root / blob[:2] / blob
        assert kept.read_bytes() == (guest.resolve("~/Desktop/photo-flipped.png")).read_bytes()
        # The desktop's home goes, as it does after every episode.
        shutil.rmtree(tmp_path / "home")

        # The same evaluator on the archive gives the same score and evidence.
        same = await rescore(store, episode, task)
        assert (same.result.passed, same.result.score) == (True, 1.0)
        assert [c.evidence for c in same.result.checks] == [
            c.evidence for c in store.checks(episode)
        ]

        # A threshold changed in the task file: a second score, the first unchanged.
        path.write_text(path.read_text().replace("width: 400", "width: 401"))
        changed = load_task(path)
        second = await rescore(store, episode, changed)
        assert second.result.passed is False
        size = next(c for c in second.result.checks if c.name == "image_size")
        assert not size.passed and "400" in size.evidence
        rescores = store.rescores(episode)
        assert [r.id for r in rescores] == [same.rescore_id, second.rescore_id]
        assert rescores[-1].task_sha256 == changed.sha256 != task.sha256
        assert rescores[-1].evaluator == evaluator_version()
        assert store.get_episode(episode).passed is True  # the original stays


async def test_archives_share_blobs_and_the_cap_is_recorded(tmp_path: Path) -> None:
    task = load_task(task_copy(tmp_path))
    guest = guest_with_flipped_photo(tmp_path)
    size = guest.resolve("~/Desktop/photo-flipped.png").stat().st_size
    with Store(tmp_path / "db" / "lab.db") as store:
        first, _ = await score_and_keep(store, task, guest)
        second, _ = await score_and_keep(store, task, guest)
        blobs = [p for p in store.archive_root.rglob("*") if p.is_file()]
        a, b = store.get_archive(first), store.get_archive(second)
        assert a is not None and b is not None
        assert a.manifest["files"] == b.manifest["files"]
        # One image blob and one stat result per episode (mtimes are equal: one blob).
        assert len(blobs) == 2

        capped, kept = await score_and_keep(store, task, guest, cap=size - 1)
        assert kept.over_cap == ("~/Desktop/photo-flipped.png",)  # type: ignore[attr-defined]
        record = store.get_archive(capped)
        assert record is not None and record.over_cap_bytes == size
        entry = record.manifest["files"]["~/Desktop/photo-flipped.png"]
        assert entry["over_cap"] is True and entry["size"] == size
        again = await rescore(store, capped, task)
        exists = next(c for c in again.result.checks if c.name == "file_exists")
        assert not exists.passed and "over the archive's cap" in exists.evidence


async def test_a_file_the_evaluator_now_reads_was_not_archived(tmp_path: Path) -> None:
    path = task_copy(tmp_path)
    task = load_task(path)
    guest = guest_with_flipped_photo(tmp_path)
    with Store(tmp_path / "db" / "lab.db") as store:
        episode, _ = await score_and_keep(store, task, guest)
        path.write_text(
            path.read_text().replace(MODIFIED_CHECK, MODIFIED_CHECK.replace("photo-", "other-"))
        )
        result = (await rescore(store, episode, load_task(path))).result
        new = next(c for c in result.checks if c.name == "file_modified_after_start")
        assert not new.passed and "not in the archive" in new.evidence


def test_cli_rescore_of_a_batch_and_show_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Synchronous: the command line runs its own event loop.
    path = task_copy(tmp_path)
    task = load_task(path)
    guest = guest_with_flipped_photo(tmp_path)
    db = tmp_path / "db" / "lab.db"
    with Store(db) as store:
        store.create_batch(
            "b1", {"tasks": [{"id": task.id}], "agents": ["reference"], "repeats": 1}
        )
        episode, _ = asyncio.run(score_and_keep(store, task, guest))
        with store.db.write("tagging") as conn:  # the batch runner's job, done by hand
            conn.execute(
                "UPDATE episodes SET batch_id = 'b1', batch_agent = 'reference',"
                " batch_repeat = 0, batch_attempt = 0 WHERE id = ?",
                (episode,),
            )
    path.write_text(path.read_text().replace("height: 300", "height: 301"))
    assert main(["--db", str(db), "score", "--batch", "b1", "--rescore"]) == 0
    out = capsys.readouterr().out
    assert f"episode {episode} ({task.id}): original 1.00 -> rescore 1:" in out
    assert "image_size: PASS 1.00 -> FAIL 0.00" in out
    assert main(["--db", str(db), "score", str(episode)]) == 0
    out = capsys.readouterr().out
    assert "final-state archive:" in out and "rescore 1 (" in out
    assert "integrity: not checked" in out
    # The report says which score it counts, and shows both.
    assert main(["--db", str(db), "report", "--score", "both"]) == 0
    original, latest = capsys.readouterr().out.split("scores: the latest rescore")
    assert "scores: the original score of each episode" in original
    assert "(1 episode(s) re-scored)" in latest
    assert "success with them 100% (n=1)" in original
    assert "success with them 0% (n=1)" in latest
    # An episode without an archive is refused with the reason, not re-scored.
    with Store(db) as store:
        bare = start(store, task)
        store.finish_episode(bare, status="finished", end_reason="done", steps=0)
    assert main(["--db", str(db), "score", str(bare), "--rescore"]) == 2
    assert "has no final-state archive" in capsys.readouterr().out


OWN_TASK = """\
id: own-task
app: gimp
level: L1
title: A file is there
instruction: Leave NAME in your home.
setup: []
evaluate: {check: file_exists, path: ~/NAME}
"""


def own_task(folder: Path, name: str) -> Path:
    """`folder/tasks/gimp/own-task.yaml`, which checks that `~/name` exists."""
    path = folder / "tasks" / "gimp" / "own-task.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(OWN_TASK.replace("NAME", name))
    return path


def test_a_rescore_from_another_folder_uses_the_episodes_own_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from app.agents.null import NullAgent
    from app.episode.runner import EpisodeRunner
    from app.users.simulated import SimulatedUser
    from tests.episode.test_archive_phases import FolderDesktop

    # The lab's task wants ~/a.txt; another folder has its own copy, wanting ~/b.txt.
    lab, other = tmp_path / "lab", tmp_path / "other"
    own_task(lab, "a.txt")
    own_task(other, "b.txt")
    desktop = FolderDesktop(tmp_path)
    (desktop.home / "a.txt").write_text("there")
    db = str(tmp_path / "lab.db")
    monkeypatch.chdir(lab)  # run as `deskloop run tasks/gimp/own-task.yaml` from the lab
    with Store(db) as store:
        task = load_task(Path("tasks/gimp/own-task.yaml"))
        runner = EpisodeRunner(task, desktop, NullAgent(), SimulatedUser(), store, backend="local")
        result = asyncio.run(runner.run())
    assert result.status == "finished" and result.passed
    monkeypatch.chdir(other)
    for tasks_dir in ([], ["--tasks-dir", str(other / "tasks")]):
        assert main(["--db", db, *tasks_dir, "score", str(result.episode_id), "--rescore"]) == 0
        out = capsys.readouterr().out
        assert "original 1.00 -> rescore" in out and "1.00 · passed yes" in out, out


def test_a_task_found_elsewhere_must_be_what_the_episode_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Databases recorded the task's path as given, relative to where the episode ran.
    lab, other = tmp_path / "lab", tmp_path / "other"
    task = load_task(own_task(lab, "Desktop/photo-flipped.png"))
    edited = own_task(other, "Desktop/other.png")
    guest = guest_with_flipped_photo(tmp_path)
    db = tmp_path / "db" / "lab.db"
    with Store(db) as store:
        episode, _ = asyncio.run(score_and_keep(store, task, guest))
        with store.db.write("as recorded before paths were absolute") as conn:
            conn.execute(
                "UPDATE episodes SET task_path = 'tasks/gimp/own-task.yaml' WHERE id = ?",
                (episode,),
            )
    rescore_cmd = ["--db", str(db), "score", str(episode), "--rescore"]
    monkeypatch.chdir(other)
    # This folder's copy says something else: refused, naming it.
    assert main(rescore_cmd) == 2
    out = capsys.readouterr().out
    assert f"{edited} (sha256 {load_task(edited).sha256[:12]})" in out, out
    assert "not what episode" in out and "--task FILE" in out
    # The lab's copy, found by id under --tasks-dir, is the one the episode ran.
    assert main(["--tasks-dir", str(lab / "tasks"), *rescore_cmd]) == 0
    assert "1.00 · passed yes" in capsys.readouterr().out
    # From the lab, the recorded path is the lab's file.
    monkeypatch.chdir(lab)
    assert main(rescore_cmd) == 0
    assert "1.00 · passed yes" in capsys.readouterr().out
    # Named with --task, another file is taken as asked (a changed task, on purpose).
    assert main([*rescore_cmd, "--task", str(edited)]) == 0
    assert "0.00 · passed no" in capsys.readouterr().out
    # Gone everywhere: refused, naming what the episode ran.
    (lab / "tasks" / "gimp" / "own-task.yaml").unlink()
    assert main(rescore_cmd) == 2
    assert "tasks/gimp/own-task.yaml" in capsys.readouterr().out
