"""A recording on disk: what a researcher did on a desktop, written as it happens.

A recording is a folder:

- ``meta.json`` — what was recorded: the app, the start state (a task's id or the
  assets opened), the desktop's geometry, when it began. Written once, atomically,
  before the first event.
- ``events.jsonl`` — one event per line, in order, each with ``t``, the seconds since
  the recording began (monotonic clock). Every line is flushed to the operating
  system as it is written, so a crash of DeskLoop, the viewer or the desktop keeps
  everything up to that moment (a killed process loses at most a half-written last
  line, which the reader drops and reports).
- ``frames/`` — PNG screenshots the ``frame`` events name, one at each input event
  and more at a steady rate.

The events are raw RFB input, not actions: the compiler (`app.authoring.compile`)
coalesces them into actions afterwards, with the same rules as the live recorder,
so a recording can be compiled again when those rules improve.

| line | meaning |
|---|---|
| ``{"t": 1.2, "pointer": [mask, x, y]}`` | an RFB PointerEvent (button mask, position) |
| ``{"t": 1.3, "key": [down, keysym]}`` | an RFB KeyEvent (1 pressed, 0 released) |
| ``{"t": 1.4, "frame": "frames/000003.png"}`` | the screen at that moment |
| ``{"t": 1.4, "window": "Export Image"}`` | the focused window's title changed |
| ``{"t": 9.0, "mark": "note"}`` | a sub-goal boundary the author marked |
| ``{"t": 9.5, "end": "why"}`` | the recording ended normally |
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any, ClassVar, Literal

from app.core.errors import DeskLoopError
from app.core.files import write_atomic
from app.core.vocabulary import ErrorKind

FORMAT_VERSION = 1
META_FILE = "meta.json"
EVENTS_FILE = "events.jsonl"
FRAMES_DIR = "frames"


class RecordingError(DeskLoopError):
    """A recording folder is missing, unreadable or not in the recording format."""

    title = "Invalid recording"
    kind: ClassVar[ErrorKind] = "other"


@dataclass(frozen=True)
class RecordingMeta:
    """What a recording is of (``meta.json``)."""

    app: str
    width: int
    height: int
    started: str
    """When the recording began, ISO 8601 wall time (UTC)."""
    task: str | None = None
    """The task whose start state the desktop began in, if any."""
    assets: tuple[str, ...] = ()
    """Files uploaded to the desktop's home and opened in the app (names in the home)."""
    format: int = FORMAT_VERSION

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["assets"] = list(self.assets)
        return data

    @classmethod
    def from_json(cls, data: Any, where: str) -> RecordingMeta:
        if not isinstance(data, dict):
            raise RecordingError(f"{where}: must be a JSON object")
        if data.get("format") != FORMAT_VERSION:
            raise RecordingError(
                f"{where}: format: {data.get('format')!r} is not recording format {FORMAT_VERSION}"
            )
        try:
            meta = cls(
                app=_typed(data, "app", str, where),
                width=_typed(data, "width", int, where),
                height=_typed(data, "height", int, where),
                started=_typed(data, "started", str, where),
                task=_typed(data, "task", str, where, optional=True),
                assets=tuple(_typed(data, "assets", list, where, optional=True) or ()),
            )
        except TypeError as exc:  # an unexpected shape inside a field
            raise RecordingError(f"{where}: {exc}") from None
        unknown = set(data) - {f for f in cls.__dataclass_fields__}
        if unknown:
            raise RecordingError(f"{where}: unknown fields {sorted(unknown)}")
        return meta


def _typed(data: dict[str, Any], key: str, kind: type, where: str, optional: bool = False) -> Any:
    value = data.get(key)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, kind):
        raise RecordingError(f"{where}: {key}: must be {kind.__name__}, got {value!r}")
    return value


@dataclass(frozen=True)
class PointerEvent:
    t: float
    mask: int
    x: int
    y: int


@dataclass(frozen=True)
class KeyEvent:
    t: float
    down: bool
    keysym: int


@dataclass(frozen=True)
class FrameEvent:
    t: float
    file: str
    """Relative to the recording folder (``frames/000001.png``)."""


@dataclass(frozen=True)
class WindowEvent:
    t: float
    title: str


@dataclass(frozen=True)
class MarkEvent:
    t: float
    note: str


@dataclass(frozen=True)
class EndEvent:
    t: float
    reason: str


Event = PointerEvent | KeyEvent | FrameEvent | WindowEvent | MarkEvent | EndEvent
EventName = Literal["pointer", "key", "frame", "window", "mark", "end"]


def event_to_json(event: Event) -> dict[str, Any]:
    t = round(event.t, 4)
    if isinstance(event, PointerEvent):
        return {"t": t, "pointer": [event.mask, event.x, event.y]}
    if isinstance(event, KeyEvent):
        return {"t": t, "key": [int(event.down), event.keysym]}
    if isinstance(event, FrameEvent):
        return {"t": t, "frame": event.file}
    if isinstance(event, WindowEvent):
        return {"t": t, "window": event.title}
    if isinstance(event, MarkEvent):
        return {"t": t, "mark": event.note}
    return {"t": t, "end": event.reason}


def _ints(value: Any, count: int) -> list[int] | None:
    if (
        isinstance(value, list)
        and len(value) == count
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        return value
    return None


def event_from_json(data: Any) -> Event:
    """One ``events.jsonl`` line's object as an event.

    Raises:
        ValueError: not an event; the message says which part is wrong.
    """
    if not isinstance(data, dict) or len(data) != 2 or "t" not in data:
        raise ValueError(
            "an event is an object with 't' and one of pointer, key, frame, window, mark, end"
        )
    t = data["t"]
    if isinstance(t, bool) or not isinstance(t, int | float) or t < 0:
        raise ValueError(f"t: must be a non-negative number of seconds, got {t!r}")
    ((name, value),) = ((k, v) for k, v in data.items() if k != "t")
    if name == "pointer":
        numbers = _ints(value, 3)
        if numbers is None:
            raise ValueError(f"pointer: must be [mask, x, y] integers, got {value!r}")
        return PointerEvent(float(t), *numbers)
    if name == "key":
        numbers = _ints(value, 2)
        if numbers is None or numbers[0] not in (0, 1):
            raise ValueError(f"key: must be [down 0|1, keysym], got {value!r}")
        return KeyEvent(float(t), bool(numbers[0]), numbers[1])
    if name in ("frame", "window", "mark", "end"):
        if not isinstance(value, str):
            raise ValueError(f"{name}: must be a string, got {value!r}")
        if name == "frame":
            return FrameEvent(float(t), value)
        if name == "window":
            return WindowEvent(float(t), value)
        if name == "mark":
            return MarkEvent(float(t), value)
        return EndEvent(float(t), value)
    raise ValueError(f"unknown event {name!r}")


@dataclass
class Recording:
    """A recording as read back: its meta, its events in order, what was dropped."""

    folder: Path
    meta: RecordingMeta
    events: list[Event] = field(default_factory=list)
    truncated: bool = False
    """The last line was cut off (the recorder died while writing it) and was dropped."""

    @property
    def ended(self) -> bool:
        """Whether the recording ended normally (else it was cut off by a crash)."""
        return any(isinstance(e, EndEvent) for e in self.events)

    @property
    def marks(self) -> list[MarkEvent]:
        return [e for e in self.events if isinstance(e, MarkEvent)]

    def frame_path(self, event: FrameEvent) -> Path:
        return frame_file(self.folder, event.file)


def frame_file(folder: Path, name: str) -> Path:
    """The frame `name` of a recording, refused if it points outside its frames folder."""
    path = (folder / name).resolve()
    frames = (folder / FRAMES_DIR).resolve()
    if not path.is_relative_to(frames):
        raise RecordingError(f"{folder / EVENTS_FILE}: frame {name!r} is outside {frames}")
    return path


def read_recording(folder: Path) -> Recording:
    """Read a recording folder, keeping everything up to a crash.

    Raises:
        RecordingError: no such folder, a bad ``meta.json``, or a bad line before the
            last one (naming the file and line).
    """
    meta_path = folder / META_FILE
    try:
        meta_data = json.loads(meta_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RecordingError(f"{meta_path}: no such file (is {folder} a recording?)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecordingError(f"{meta_path}: cannot read: {exc}") from None
    recording = Recording(folder, RecordingMeta.from_json(meta_data, str(meta_path)))
    events_path = folder / EVENTS_FILE
    try:
        raw = events_path.read_bytes()
    except FileNotFoundError:
        return recording  # died before the first event: an empty recording
    except OSError as exc:
        raise RecordingError(f"{events_path}: cannot read: {exc.strerror or exc}") from None
    lines = raw.split(b"\n")
    complete, last = lines[:-1], lines[-1]
    if last.strip():
        # No newline at the end: the writer died mid-line. Keep it if it parses.
        try:
            complete.append(last)
            _parse_line(last, len(complete), events_path)
        except RecordingError:
            complete.pop()
            recording.truncated = True
    previous = 0.0
    for number, line in enumerate(complete, 1):
        if not line.strip():
            continue
        event = _parse_line(line, number, events_path)
        if event.t < previous:
            raise RecordingError(
                f"{events_path}: line {number}: t {event.t} is before the previous "
                f"event's {previous}"
            )
        previous = event.t
        recording.events.append(event)
    return recording


def _parse_line(line: bytes, number: int, path: Path) -> Event:
    try:
        return event_from_json(json.loads(line.decode("utf-8")))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecordingError(f"{path}: line {number}: not a JSON line ({exc})") from None
    except ValueError as exc:
        raise RecordingError(f"{path}: line {number}: {exc}") from None


class RecordingWriter:
    """Appends events to a new recording folder, each line flushed as it is written."""

    def __init__(self, folder: Path, meta: RecordingMeta) -> None:
        self.folder = folder
        self.meta = meta
        self._events: IO[str] | None = None
        self._frames = 0

    def open(self) -> None:
        """Create the folder and write ``meta.json`` (the start state may be there already).

        Raises:
            RecordingError: the folder holds a recording already, or cannot be written.
        """
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            if (self.folder / META_FILE).exists() or (self.folder / EVENTS_FILE).exists():
                raise RecordingError(f"{self.folder}: already holds a recording; pick a new folder")
            (self.folder / FRAMES_DIR).mkdir()
            meta = json.dumps(self.meta.to_json(), indent=2) + "\n"
            write_atomic(self.folder / META_FILE, meta.encode("utf-8"))
            # Line buffering: each event reaches the OS when its line ends.
            self._events = open(  # noqa: SIM115 (closed by close())
                self.folder / EVENTS_FILE, "a", encoding="utf-8", buffering=1
            )
        except OSError as exc:
            raise RecordingError(f"{self.folder}: cannot write: {exc.strerror or exc}") from None

    def write(self, event: Event) -> None:
        if self._events is None:
            raise RecordingError(f"{self.folder}: the recording is not open")
        self._events.write(json.dumps(event_to_json(event), ensure_ascii=False) + "\n")

    def frame_name(self) -> str:
        """The name for the next frame file (relative to the folder)."""
        self._frames += 1
        return f"{FRAMES_DIR}/{self._frames:06d}.png"

    def sync(self) -> None:
        """Make what is written survive a machine crash too (marks and the end call it)."""
        if self._events is not None:
            self._events.flush()
            os.fsync(self._events.fileno())

    def close(self) -> None:
        if self._events is not None:
            self.sync()
            self._events.close()
            self._events = None
