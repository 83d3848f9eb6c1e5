"""Compiling splits typing where the focused window changed: the reference waits for the
dialog before it types into it (a person types on quicker than the idle flush)."""

from __future__ import annotations

from pathlib import Path

from app.authoring.compile import compile_recording
from app.authoring.recording import (
    Event,
    KeyEvent,
    RecordingMeta,
    RecordingWriter,
    WindowEvent,
    read_recording,
)
from app.core.actions import Type

META = RecordingMeta(app="gimp", width=1280, height=800, started="2026-12-01T00:00:00Z")


def _typed(text: str, start: float, gap: float = 0.1) -> list[Event]:
    events: list[Event] = []
    for n, char in enumerate(text):
        at = start + n * gap
        events += [KeyEvent(at, True, ord(char)), KeyEvent(at + 0.01, False, ord(char))]
    return events


def test_typing_across_a_focus_change_waits_for_the_new_window(tmp_path: Path) -> None:
    events: list[Event] = [
        WindowEvent(0.0, "[photo] – GIMP"),
        *_typed("/", 1.0),
        WindowEvent(1.3, "Search Actions"),  # opened 0.3 s after the slash
        *_typed("crop", 1.4),
    ]
    writer = RecordingWriter(tmp_path / "rec", META)
    writer.open()
    for event in events:
        writer.write(event)
    writer.close()

    compiled = compile_recording(read_recording(tmp_path / "rec"), "anchors/x")

    assert [t.action for t in compiled.actions] == [Type("/"), Type("crop")]
    assert compiled.steps == [
        {"wait_for": {"window": r"^\[photo\] – GIMP$", "timeout": 60.0}},
        {"type": "/"},
        {"wait_for": {"window": "^Search Actions$", "timeout": 60.0}},
        {"type": "crop"},
        "done",
    ]


def test_typing_in_one_window_stays_one_action(tmp_path: Path) -> None:
    events: list[Event] = [WindowEvent(0.0, "Export Image"), *_typed("a.png", 1.0)]
    writer = RecordingWriter(tmp_path / "rec", META)
    writer.open()
    for event in events:
        writer.write(event)
    writer.close()

    compiled = compile_recording(read_recording(tmp_path / "rec"), "anchors/x")

    assert [t.action for t in compiled.actions] == [Type("a.png")]
