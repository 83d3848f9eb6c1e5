"""A compiled window guard must match the same window on another desktop."""

from __future__ import annotations

import re
from pathlib import Path

from app.authoring.compile import compile_recording, title_pattern
from app.authoring.recording import (
    EndEvent,
    Event,
    KeyEvent,
    MarkEvent,
    Recording,
    RecordingMeta,
    RecordingWriter,
    WindowEvent,
    read_recording,
)


def test_a_local_session_home_in_a_title_matches_any_home() -> None:
    recorded = "Blender* [/tmp/deskloop-sowasnbj/home/Desktop/product.blend]"
    pattern = f"^{title_pattern(recorded)}$"
    assert re.search(pattern, recorded)
    assert re.search(pattern, "Blender* [/tmp/deskloop-k2j4_x9q/home/Desktop/product.blend]")
    assert re.search(pattern, "Blender* [/home/user/Desktop/product.blend]")
    # Everything else stays literal: another file or the clean title is another window.
    assert not re.search(pattern, "Blender* [/tmp/deskloop-k2j4x9q/home/Desktop/cube.blend]")
    assert not re.search(pattern, "Blender [/tmp/deskloop-k2j4x9q/home/Desktop/product.blend]")


def test_a_title_without_a_session_home_is_matched_literally() -> None:
    assert title_pattern("[photo] (imported)-1.0 – GIMP") == r"\[photo\] \(imported\)-1\.0 – GIMP"
    assert title_pattern("Blender File View") == "Blender File View"


def _recording(tmp_path: Path, events: list[Event]) -> Recording:
    meta = RecordingMeta(app="blender", width=640, height=480, started="2026-12-01T00:00:00Z")
    writer = RecordingWriter(tmp_path / "rec", meta)
    writer.open()
    for event in events:
        writer.write(event)
    writer.close()
    return read_recording(tmp_path / "rec")


def test_done_waits_for_the_title_the_person_saw_when_marking(tmp_path: Path) -> None:
    """ctrl+s, then a mark once the '*' left the title: the replay must not say DONE
    (and have the sub-goal's checks judged) before the save has happened."""
    ctrl, s = 0xFFE3, ord("s")
    recording = _recording(
        tmp_path,
        [
            WindowEvent(0.0, "Blender* [/tmp/deskloop-abc123/home/Desktop/a.blend]"),
            KeyEvent(1.0, True, ctrl),
            KeyEvent(1.1, True, s),
            KeyEvent(1.2, False, s),
            KeyEvent(1.3, False, ctrl),
            WindowEvent(3.0, "Blender [/tmp/deskloop-abc123/home/Desktop/a.blend]"),
            MarkEvent(4.0, "Now the next file"),
            KeyEvent(5.0, True, ctrl),
            KeyEvent(5.1, True, s),
            KeyEvent(5.2, False, s),
            KeyEvent(5.3, False, ctrl),
            WindowEvent(6.0, "Blender* [/tmp/deskloop-abc123/home/Desktop/a.blend]"),
            WindowEvent(7.0, "Blender [/tmp/deskloop-abc123/home/Desktop/a.blend]"),
            EndEvent(8.0, "end key"),
        ],
    )
    steps = compile_recording(recording, "anchors/x").steps
    clean = {"wait_for": {"window": r"^Blender \[.*/Desktop/a\.blend\]$", "timeout": 60.0}}
    dirty = {"wait_for": {"window": r"^Blender\* \[.*/Desktop/a\.blend\]$", "timeout": 60.0}}
    assert steps == [
        dirty,
        {"key": "ctrl+s"},
        clean,
        "done",
        {"expect": {"message": "Now the next file"}},
        {"key": "ctrl+s"},
        clean,  # the title went '*' and back after the save: wait for the saved one
        "done",
    ]
