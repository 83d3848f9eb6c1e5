"""Compiling a recording (no desktop): how its events become actions and guards."""

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

META = RecordingMeta(
    app="kdenlive", width=1280, height=800, started="2026-12-01T00:00:00Z", assets=()
)


def typed(text: str, start: float, gap: float = 0.05) -> list[Event]:
    out: list[Event] = []
    for i, char in enumerate(text):
        at = start + i * gap
        out += [KeyEvent(at, True, ord(char)), KeyEvent(at + 0.01, False, ord(char))]
    return out


def test_typing_is_split_where_the_focused_window_changes(tmp_path: Path) -> None:
    # `g` opens Kdenlive's Edit Guide dialog; the name is typed 0.4 s later, well
    # within the idle flush, into the dialog.
    events: list[Event] = [
        WindowEvent(0.0, "rough-cut / 640x360 25.00fps — Kdenlive"),
        *typed("g", 1.0),
        WindowEvent(1.3, "Edit Guide — Kdenlive"),
        *typed("Harbour", 1.4),
    ]
    writer = RecordingWriter(tmp_path / "rec", META)
    writer.open()
    for event in events:
        writer.write(event)
    writer.close()

    compiled = compile_recording(read_recording(tmp_path / "rec"), "anchors/x")

    assert [t.action for t in compiled.actions] == [Type("g"), Type("Harbour")]
    assert compiled.steps == [
        {"wait_for": {"window": "^rough-cut / 640x360 25\\.00fps — Kdenlive$", "timeout": 60.0}},
        {"type": "g"},
        {"wait_for": {"window": "^Edit Guide — Kdenlive$", "timeout": 60.0}},
        {"type": "Harbour"},
        # Before DONE, the window seen at the end (its save or dialog has finished).
        {"wait_for": {"window": "^Edit Guide — Kdenlive$", "timeout": 60.0}},
        "done",
    ]


def test_typing_in_one_window_stays_one_action(tmp_path: Path) -> None:
    events: list[Event] = [
        WindowEvent(0.0, "Edit Guide — Kdenlive"),
        *typed("Har", 1.0),
        WindowEvent(1.2, "Edit Guide — Kdenlive"),  # noted again, not changed
        *typed("bour", 1.25),
    ]
    writer = RecordingWriter(tmp_path / "rec", META)
    writer.open()
    for event in events:
        writer.write(event)
    writer.close()

    compiled = compile_recording(read_recording(tmp_path / "rec"), "anchors/x")

    assert [t.action for t in compiled.actions] == [Type("Harbour")]
