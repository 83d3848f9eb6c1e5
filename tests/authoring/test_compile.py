"""Compiling a recording (no desktop): how its events become actions and guards."""

from __future__ import annotations

from pathlib import Path

from app.authoring.compile import compile_recording
from app.authoring.recording import (
    Event,
    KeyEvent,
    PointerEvent,
    RecordingMeta,
    RecordingWriter,
    WindowEvent,
    read_recording,
)
from app.core.actions import Click, Key, Move, Type
from app.rfb import wire

LEFT = wire.BUTTON_MASKS["left"]
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


def test_a_key_or_click_where_the_pointer_only_hovered_moves_there_first(tmp_path: Path) -> None:
    # Blender sends keys to the area under the pointer: the person moved it onto the
    # viewport before ctrl+2, and after a click elsewhere away again. A click comes
    # with the pointer's arrival; the replay moves there first (Blender's text fields
    # ignore a press that arrives with the pointer).
    events: list[Event] = [
        WindowEvent(0.0, "Blender [/home/u/Desktop/stool.blend]"),
        PointerEvent(0.5, 0, 640, 400),
        KeyEvent(1.0, True, 0xFFE3),  # ctrl
        *typed("2", 1.05),
        KeyEvent(1.1, False, 0xFFE3),
        *typed("x", 2.0),  # the pointer has not moved: no second move
        PointerEvent(3.0, 0, 620, 708),
        PointerEvent(3.1, LEFT, 620, 708),
        PointerEvent(3.15, 0, 621, 709),  # a click (within the slop): no move after it
        *typed("a", 4.0),
        PointerEvent(5.0, 0, 300, 300),
        *typed("b", 6.0),
    ]
    writer = RecordingWriter(tmp_path / "rec", META)
    writer.open()
    for event in events:
        writer.write(event)
    writer.close()

    compiled = compile_recording(read_recording(tmp_path / "rec"), "anchors/x")

    assert [t.action for t in compiled.actions] == [
        Move(640, 400),
        Key("ctrl+2"),
        Type("x"),
        Move(620, 708),  # the click's own move, a step before its press
        Click(620, 708),
        Type("a"),
        Move(300, 300),
        Type("b"),
    ]
    assert [t.started for t in compiled.actions][:2] == [1.0, 1.05]
    assert compiled.steps[1] == {"move": [640, 400]}
    # No frames were recorded, so no anchors: the click's move comes right before it.
    click = compiled.steps.index({"click": [620, 708]})
    assert compiled.steps[click - 1] == {"move": [620, 708]}
