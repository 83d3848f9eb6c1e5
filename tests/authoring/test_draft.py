"""Drafting a task from a recording: written into a library, valid as it is, and
nothing left behind when it does not validate."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from app.agents.reference_script import load_script
from app.authoring.draft import PhaseDraft, draft_task, write_draft
from app.authoring.recording import (
    EndEvent,
    Event,
    FrameEvent,
    KeyEvent,
    MarkEvent,
    PointerEvent,
    RecordingMeta,
    RecordingWriter,
    WindowEvent,
    read_recording,
)
from app.authoring.start_state import StartStateError, read_start_state, write_start_state
from app.core.errors import TaskError
from app.tasks.loader import load_task
from app.tasks.model import UploadStep

REPO = Path(__file__).resolve().parents[2]
PHOTO = REPO / "tasks" / "gimp" / "assets" / "photo.png"


def make_recording(folder: Path) -> None:
    writer = RecordingWriter(folder, RecordingMeta("gimp", 320, 200, "2026-12-01T00:00:00Z"))
    writer.open()
    rng = np.random.default_rng(3)
    Image.fromarray(rng.integers(0, 255, (200, 320, 3), dtype=np.uint8)).save(
        folder / "frames" / "000001.png"
    )
    events: list[Event] = [
        WindowEvent(0.0, "[photo] (imported)-1.0 – GIMP"),
        FrameEvent(0.1, "frames/000001.png"),
        PointerEvent(1.0, 1, 100, 50),
        PointerEvent(1.1, 0, 100, 50),
        KeyEvent(2.0, True, ord("a")),
        KeyEvent(2.1, False, ord("a")),
        MarkEvent(3.0, "Now make it smaller"),
        KeyEvent(4.0, True, ord("b")),
        KeyEvent(4.1, False, ord("b")),
        EndEvent(70.0, "ended"),
    ]
    for event in events:
        writer.write(event)
    writer.close()


def test_a_draft_is_written_as_a_valid_task_with_its_reference(tmp_path: Path) -> None:
    folder = tmp_path / "rec"
    make_recording(folder)
    write_start_state(folder, task_id="photo-l3", app="gimp", assets=[PHOTO])
    start = read_start_state(folder)
    assert start.assets == ("~/Desktop/photo.png",)
    draft = draft_task(
        read_recording(folder),
        start,
        task_id="photo-l3",
        title="A photo, then smaller",
        instruction="Click the photo and type a.",
        phases=[
            PhaseDraft(
                "Please make it smaller now.",
                checks=[{"check": "file_exists", "path": "~/Desktop/photo.png"}],
            )
        ],
        checks=[
            {
                "check": "image_similarity",
                "path": "~/Desktop/photo.png",
                "reference": "assets/photo-l3/expected/photo.png",
                "threshold": 0.9,
            }
        ],
        files={"assets/photo-l3/expected/photo.png": PHOTO.read_bytes()},
    )
    library = tmp_path / "tasks"
    written = write_draft(draft, library)

    task = load_task(written.task)
    assert (task.id, task.app, task.level) == ("photo-l3", "gimp", "L3")
    assert task.budget.steps == 30 and task.budget.seconds == 600  # the floors
    upload = task.setup[0]
    assert isinstance(upload, UploadStep) and upload.upload.src == "assets/photo-l3/photo.png"
    assert (
        library / "gimp" / "assets" / "photo-l3" / "photo.png"
    ).read_bytes() == PHOTO.read_bytes()
    assert [p.message for p in task.phases] == ["Please make it smaller now."]
    assert task.phase_tree(0) is not None
    assert task.reference == "references/photo-l3.yaml"
    entries = load_script(written.reference)
    assert len(entries) >= 6  # guard, anchor, click, type, done, expect, type, done
    text = written.reference.read_text()
    assert "Please make it smaller now\\." in text  # the final message is expected
    assert (library / "gimp" / "references" / "anchors" / "photo-l3" / "001.png").is_file()

    with pytest.raises(TaskError, match="a task of this id exists"):
        write_draft(draft, library)


def test_a_replaced_draft_leaves_none_of_its_own_files_behind(tmp_path: Path) -> None:
    folder = tmp_path / "rec"
    make_recording(folder)
    write_start_state(folder, task_id="photo-l3", app="gimp", assets=[PHOTO])
    library = tmp_path / "tasks"
    expected = "assets/photo-l3/expected/photo.png"
    first = draft_task(
        read_recording(folder),
        read_start_state(folder),
        task_id="photo-l3",
        title="t",
        instruction="i",
        phases=[PhaseDraft("m")],
        checks=[
            {"check": "image_similarity", "path": "~/Desktop/photo.png", "reference": expected}
        ],
        files={expected: PHOTO.read_bytes()},
    )
    write_draft(first, library)
    other_task = library / "gimp" / "assets" / "photo.png"  # another task's asset stays
    other_task.write_bytes(b"x")
    second = draft_task(
        read_recording(folder),
        read_start_state(folder),
        task_id="photo-l3",
        title="t",
        instruction="i",
        phases=[PhaseDraft("m")],
        checks=[{"check": "file_exists", "path": "~/Desktop/photo.png"}],
    )
    written = write_draft(second, library, overwrite=True)

    assert not (library / "gimp" / expected).exists()
    assert not (library / "gimp" / "assets" / "photo-l3" / "expected").exists()
    assert (library / "gimp" / "assets" / "photo-l3" / "photo.png").is_file()
    assert (library / "gimp" / "references" / "anchors" / "photo-l3" / "001.png").is_file()
    assert other_task.is_file()
    load_task(written.task)


def test_a_draft_that_does_not_validate_leaves_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "rec"
    make_recording(folder)
    write_start_state(folder, task_id="photo-l3", app="gimp", assets=[PHOTO])
    draft = draft_task(
        read_recording(folder),
        read_start_state(folder),
        task_id="photo-l3",
        title="t",
        instruction="i",
        phases=[PhaseDraft("m")],
        checks=[{"check": "image_size", "path": "~/Desktop/photo.png", "width": "wide"}],
    )
    library = tmp_path / "tasks"
    with pytest.raises(TaskError, match=r"evaluate\.all\[0\]"):
        write_draft(draft, library)
    assert [p for p in library.rglob("*") if p.is_file()] == []


def test_draft_problems_name_the_field(tmp_path: Path) -> None:
    folder = tmp_path / "rec"
    make_recording(folder)
    write_start_state(folder, task_id="photo-l3", app="gimp", assets=[PHOTO])
    with pytest.raises(TaskError) as caught:
        draft_task(
            read_recording(folder),
            read_start_state(folder),
            task_id="Photo L3",
            title="t",
            instruction="",
            phases=[PhaseDraft(" "), PhaseDraft("x")],
            checks=[],
        )
    message = str(caught.value)
    for words in (
        "id: 'Photo L3'",
        "phases: 2 given, but the recording has 1",
        "phases[0].message: empty",
        "evaluate: no check",
        "instruction: empty",
    ):
        assert words in message


def test_start_states_refuse_what_they_cannot_open(tmp_path: Path) -> None:
    with pytest.raises(StartStateError, match="no such file"):
        write_start_state(tmp_path, task_id="x", app="gimp", assets=[tmp_path / "none.png"])
    odd = tmp_path / "two words.png"
    odd.write_bytes(PHOTO.read_bytes())
    with pytest.raises(StartStateError, match="asset names may hold"):
        write_start_state(tmp_path / "b", task_id="x", app="gimp", assets=[odd])
    with pytest.raises(StartStateError, match="--app"):
        write_start_state(tmp_path / "c", task_id="x", app="paint", assets=[])


def test_a_start_state_from_a_task_copies_its_uploads(tmp_path: Path) -> None:
    source = load_task(REPO / "tasks" / "gimp" / "gimp-badge-interactive.yaml")
    state = write_start_state(tmp_path, task_id="badge-l3", from_task=source)
    assert state.task.app == "gimp"
    assert state.assets == ("~/Desktop/badge.png",)
    assert (tmp_path / "start" / "assets" / "badge.png").is_file()
    assert [type(s).__name__ for s in state.task.setup] == [type(s).__name__ for s in source.setup]


def test_a_draft_pins_the_recordings_screen(tmp_path: Path) -> None:
    folder = tmp_path / "rec"
    make_recording(folder)  # recorded at 320×200
    write_start_state(folder, task_id="photo-l3", app="gimp", assets=[PHOTO])
    draft = draft_task(
        read_recording(folder),
        read_start_state(folder),
        task_id="photo-l3",
        title="t",
        instruction="i",
        phases=[PhaseDraft("m")],
        checks=[{"check": "file_exists", "path": "~/Desktop/photo.png"}],
    )
    task = load_task(write_draft(draft, tmp_path / "tasks").task)
    assert task.screen_size == (320, 200)
    assert load_task(REPO / "tasks" / "gimp" / "gimp-flip-export.yaml").screen_size == (1280, 800)


def test_an_image_a_phase_and_the_end_both_expect_is_stored_once(tmp_path: Path) -> None:
    """The exported file was made before the boundary and left as it was: the phase's
    and the task's similarity checks name one stored copy, not two identical ones."""
    from app.authoring.review import CheckItem, DraftForm, load_review, write_task

    folder = tmp_path / "rec"
    make_recording(folder)
    write_start_state(folder, task_id="photo-l3", app="gimp", assets=[PHOTO])
    copy = tmp_path / "blob.png"  # the recording's blob of the produced file
    copy.write_bytes(PHOTO.read_bytes())

    def similar(reference: str, phase: int | None) -> CheckItem:
        check = {"check": "image_similarity", "path": "~/Desktop/photo.png",
                 "reference": reference, "threshold": 0.9}  # fmt: skip
        return CheckItem(check, "produced", "accepted", {reference: copy}, phase)

    form = DraftForm(
        task_id="photo-l3",
        title="A photo",
        instruction="Click the photo and type a.",
        messages=["Please make it smaller now."],
        checks=[
            similar("assets/photo-l3/expected/Desktop/photo.png", None),
            similar("assets/photo-l3/expected/boundary-1/Desktop/photo.png", 1),
        ],
    )
    written = write_task(load_review(folder), form, tmp_path / "tasks")
    task = load_task(written.task)
    stored = sorted(p for p in (task.folder / "assets" / "photo-l3").rglob("*.png"))
    assert [p.relative_to(task.folder).as_posix() for p in stored] == [
        "assets/photo-l3/expected/Desktop/photo.png",
        "assets/photo-l3/photo.png",  # the start state's upload
    ]
    text = written.task.read_text()
    assert "boundary-1" not in text
    assert text.count("reference: assets/photo-l3/expected/Desktop/photo.png") == 2


def test_a_proposed_track_is_kept_only_where_the_instruction_names_it() -> None:
    from app.authoring.review import CheckItem, Proposal, unpinned_track

    clips = {"check": "kdenlive_clips", "path": "~/Videos/edit.kdenlive", "track": "V1",
             "clips": [{"source": "harbour.mp4", "position": 0}]}  # fmt: skip
    proposed = CheckItem.proposed(Proposal(dict(clips), "clips changed V1"))
    assert "track" not in unpinned_track(proposed, ["Put the harbour clip on the timeline."])
    for said in ("Put it on track V1.", "Use video track 1 for it.", "...on v1 please"):
        assert unpinned_track(proposed, [said]) == clips, said
    # A phase message names it: kept.
    assert unpinned_track(proposed, ["Add the clip.", "Now move it to V1."]) == clips
    # Edited, or written by hand: the author's own, kept as it is.
    edited = CheckItem.proposed(Proposal(dict(clips), "clips changed V1"))
    edited.check = {**clips, "tolerance": 2}
    assert unpinned_track(edited, ["Add the clip."])["track"] == "V1"
    by_hand = CheckItem(dict(clips), "added by hand", "accepted")
    assert unpinned_track(by_hand, ["Add the clip."]) == clips
