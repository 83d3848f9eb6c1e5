"""The recording folder: written as it goes, read back up to a crash."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from app.authoring.recording import (
    EVENTS_FILE,
    EndEvent,
    Event,
    FrameEvent,
    KeyEvent,
    MarkEvent,
    PointerEvent,
    RecordingError,
    RecordingMeta,
    RecordingWriter,
    WindowEvent,
    frame_file,
    read_recording,
)

REPO = Path(__file__).resolve().parents[2]
META = RecordingMeta(
    app="gimp", width=1280, height=800, started="2026-12-01T00:00:00Z", assets=("photo.png",)
)


def test_what_is_written_reads_back_in_order(tmp_path: Path) -> None:
    events: list[Event] = [
        WindowEvent(0.0, "GNU Image Manipulation Program"),
        FrameEvent(0.01, "frames/000001.png"),
        PointerEvent(0.5, 1, 100, 200),
        PointerEvent(0.6, 0, 100, 200),
        KeyEvent(1.0, True, 0x61),
        KeyEvent(1.05, False, 0x61),
        MarkEvent(2.0, "flipped — now export"),
        EndEvent(3.0, "ctrl-c"),
    ]
    writer = RecordingWriter(tmp_path / "rec", META)
    writer.open()
    for event in events:
        writer.write(event)
    writer.close()
    recording = read_recording(tmp_path / "rec")
    assert recording.meta == META
    assert recording.events == events
    assert recording.ended and not recording.truncated
    assert [m.note for m in recording.marks] == ["flipped — now export"]


def test_a_writer_refuses_a_folder_that_holds_a_recording(tmp_path: Path) -> None:
    RecordingWriter(tmp_path, META).open()
    with pytest.raises(RecordingError, match="already holds a recording"):
        RecordingWriter(tmp_path, META).open()


def test_a_killed_recorder_keeps_every_complete_line(tmp_path: Path) -> None:
    # A real process writes events until it is SIGKILLed mid-stream.
    folder = tmp_path / "rec"
    script = f"""
import sys, itertools
sys.path.insert(0, {str(REPO)!r})
from app.authoring.recording import RecordingWriter, RecordingMeta, PointerEvent
w = RecordingWriter(__import__("pathlib").Path({str(folder)!r}),
                    RecordingMeta(app="gimp", width=8, height=8, started="x"))
w.open()
for n in itertools.count():
    w.write(PointerEvent(n * 0.001, 0, n % 8, n % 8))
    if n == 500:
        print("ready", flush=True)
"""
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == b"ready"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    recording = read_recording(folder)
    assert not recording.ended
    assert len(recording.events) > 500
    ts = [e.t for e in recording.events]
    assert ts == sorted(ts)


def test_a_half_written_last_line_is_dropped_and_reported(tmp_path: Path) -> None:
    writer = RecordingWriter(tmp_path, META)
    writer.open()
    writer.write(PointerEvent(0.1, 0, 1, 2))
    writer.close()
    with open(tmp_path / EVENTS_FILE, "a", encoding="utf-8") as f:
        f.write('{"t": 0.2, "poin')
    recording = read_recording(tmp_path)
    assert recording.truncated
    assert recording.events == [PointerEvent(0.1, 0, 1, 2)]


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ('{"t": 1, "pointer": [1, 2]}', "pointer: must be [mask, x, y]"),
        ('{"t": 1, "key": [2, 65]}', "key: must be [down 0|1, keysym]"),
        ('{"t": -1, "mark": "x"}', "t: must be a non-negative"),
        ('{"t": 1, "teleport": 3}', "unknown event 'teleport'"),
        ('{"t": true, "mark": "x"}', "t: must be a non-negative"),
        ("[1, 2]", "an event is an object"),
        ("not json", "not a JSON line"),
    ],
)
def test_a_bad_line_names_the_file_and_line(tmp_path: Path, line: str, words: str) -> None:
    writer = RecordingWriter(tmp_path, META)
    writer.open()
    writer.write(PointerEvent(0.1, 0, 1, 2))
    writer.close()
    with open(tmp_path / EVENTS_FILE, "a", encoding="utf-8") as f:
        f.write(line + "\n" + json.dumps({"t": 5, "end": "x"}) + "\n")
    with pytest.raises(RecordingError) as caught:
        read_recording(tmp_path)
    assert f"{tmp_path / EVENTS_FILE}: line 2: " in str(caught.value)
    assert words in str(caught.value)


def test_events_out_of_order_are_refused(tmp_path: Path) -> None:
    writer = RecordingWriter(tmp_path, META)
    writer.open()
    writer.write(PointerEvent(2.0, 0, 1, 2))
    writer.write(PointerEvent(1.0, 0, 1, 2))
    writer.close()
    with pytest.raises(RecordingError, match=r"line 2: t 1\.0 is before"):
        read_recording(tmp_path)


def test_meta_problems_name_the_field(tmp_path: Path) -> None:
    with pytest.raises(RecordingError, match="no such file"):
        read_recording(tmp_path)
    (tmp_path / "meta.json").write_text(json.dumps({**META.to_json(), "width": "wide"}))
    with pytest.raises(RecordingError, match=r"meta\.json: width: must be int"):
        read_recording(tmp_path)
    (tmp_path / "meta.json").write_text(json.dumps({**META.to_json(), "format": 9}))
    with pytest.raises(RecordingError, match="format: 9 is not recording format 1"):
        read_recording(tmp_path)


def test_a_frame_name_cannot_leave_the_frames_folder(tmp_path: Path) -> None:
    assert frame_file(tmp_path, "frames/000001.png") == (tmp_path / "frames/000001.png").resolve()
    with pytest.raises(RecordingError, match="outside"):
        frame_file(tmp_path, "frames/../../etc/passwd")
