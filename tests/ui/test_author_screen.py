"""The Author screen with Pilot: a recording made before is reviewed, its checks are
accepted, edited, dropped and added by hand (validated), and the task is written into
the library; a refused draft names the field and keeps what was typed.

The recording itself (a real desktop, the viewer's chords) is in
tests/ui/test_authoring_service.py and the end-to-end test at its end."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from textual.widgets import DataTable, Input, Static, TextArea

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
)
from app.authoring.review import CheckItem, Proposal
from app.authoring.start_state import write_start_state
from app.tasks.loader import load_task
from app.ui.app import DeskLoopApp
from app.ui.modals import HelpScreen, YamlScreen
from app.ui.screens.author import AuthorScreen
from app.ui.screens.author_review import ReviewPane
from tests.ui.helpers import wait_until, write_tasks

REPO = Path(__file__).resolve().parents[2]
PHOTO = REPO / "tasks" / "gimp" / "assets" / "photo.png"


def make_recording(folder: Path) -> Path:
    """A finished recording of two sub-goals (a click and 'a', then 'b'), offline."""
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
    write_start_state(folder, task_id="photo-l3", app="gimp", assets=[PHOTO])
    return folder


@pytest.fixture
def lab(tmp_path: Path) -> DeskLoopApp:
    return DeskLoopApp(
        db=tmp_path / "db" / "d.db", tasks_dir=write_tasks(tmp_path / "tasks"), start_mode="tasks"
    )


def checks(screen: AuthorScreen) -> list[CheckItem]:
    """The checks as the review pane holds them."""
    return screen.query_one(ReviewPane).checks


def result_text(screen: AuthorScreen) -> str:
    return str(screen.query_one("#author-result", Static).render())


async def test_a_recording_is_reviewed_and_written_with_checks_edited_by_hand(
    lab: DeskLoopApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = make_recording(tmp_path / "rec")
    # The proposals (from app.authoring.propose) replaced by two, to drive the list.
    monkeypatch.setattr(
        "app.ui.screens.author.proposals",
        lambda _folder, _task_id: [
            Proposal({"check": "file_exists", "path": "~/Desktop/photo.png"}, "the photo stays"),
            Proposal({"check": "file_exists", "path": "~/Desktop/gone.png"}, "made, then gone"),
        ],
    )
    async with lab.run_test(size=(160, 50)) as pilot:
        await pilot.press("a")
        await wait_until(pilot, lambda: isinstance(lab.screen, AuthorScreen), 5, "Author")
        screen = lab.screen
        assert isinstance(screen, AuthorScreen)
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(lab.screen, HelpScreen), 5, "help")
        text = lab.screen.text  # type: ignore[attr-defined]
        assert "**m** marks a sub-goal boundary" in text and "**a** Author" in text
        await pilot.press("escape")

        screen.query_one("#author-folder", Input).value = str(folder)
        screen.query_one("#author-folder", Input).focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: screen.stage == "review", 10, "the review")
        subgoals = str(screen.query_one("#author-subgoals", Static).render())
        assert "sub-goal 1" in subgoals and "sub-goal 2" in subgoals
        assert "boundary 1: Now make it smaller" in subgoals
        assert "click(100, 50)" in subgoals
        assert screen.query_one("#author-msg-1", Input).value == "Now make it smaller"
        table = screen.query_one("#author-checks", DataTable)
        assert table.row_count == 2 and [c.state for c in checks(screen)] == ["proposed"] * 2

        # Nothing accepted, no instruction: refused, naming both fields.
        await pilot.press("f5")
        await wait_until(pilot, lambda: "not written" in result_text(screen), 10, "refusal")
        assert "instruction: empty" in result_text(screen)
        assert "evaluate: no check accepted" in result_text(screen)

        screen.query_one("#author-instruction", TextArea).text = "Click the photo, type a."
        table.focus()
        await pilot.press("space")  # accept the first
        await pilot.press("down", "delete")  # drop the second
        assert [c.state for c in checks(screen)] == ["accepted", "dropped"]

        await pilot.press("n")  # a check by hand, wrong first
        await wait_until(pilot, lambda: isinstance(lab.screen, YamlScreen), 5, "the editor")
        editor = lab.screen
        assert isinstance(editor, YamlScreen)
        editor.query_one(TextArea).text = "{check: image_size, path: ~/a.png, width: wide}"
        await pilot.press("ctrl+s")
        error = str(editor.query_one("#yaml-error", Static).render())
        assert "check.width" in error and isinstance(lab.screen, YamlScreen)
        editor.query_one(TextArea).text = "{check: file_exists, path: ~/Desktop/photo.png}"
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: lab.screen is screen, 5, "the editor closed")
        assert [c.state for c in checks(screen)] == ["accepted", "dropped", "accepted"]
        assert checks(screen)[2].why == "added by hand"

        # An empty phase message is refused by name; what was typed stays.
        screen.query_one("#author-msg-1", Input).value = ""
        await pilot.press("f5")
        await wait_until(pilot, lambda: "phases[0].message" in result_text(screen), 10, "msg")
        assert screen.query_one("#author-instruction", TextArea).text == "Click the photo, type a."
        assert len(checks(screen)) == 3

        screen.query_one("#author-msg-1", Input).value = "Please make it smaller now."
        screen.query_one("#author-title", Input).value = "A photo, then smaller"
        await pilot.press("f5")
        await wait_until(pilot, lambda: screen.written is not None, 10, "written")
        written = screen.written
        assert written is not None
        assert str(written.task) in result_text(screen)
        task = load_task(written.task)
        assert task.title == "A photo, then smaller"
        assert [p.message for p in task.phases] == ["Please make it smaller now."]
        assert task.instruction == "Click the photo, type a."
        # Two accepted checks, the dropped one left out.
        assert "gone.png" not in written.task.read_text()
        assert written.task.read_text().count("file_exists") == 2
        assert "photo-l3" in {t.id for t in lab.tasks}  # the library was reloaded

        # A second write of the same id is refused unless replacing is ticked.
        await pilot.press("f5")
        await wait_until(pilot, lambda: "exists" in result_text(screen), 10, "exists")
