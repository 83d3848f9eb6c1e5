"""Compile a recording into a reference script that replays it.

The raw input events are coalesced into actions by the same `InputRecorder` that
records a person live (`app.rfb.proxy`), fed the recording's own times, so typing
becomes one ``type`` and quick presses one double click. A key or a click where the
replay's pointer is not yet gets a ``move`` there first (keys go to the area under the
pointer in Blender, and its widgets take a press only once the pointer has arrived).
Before each action comes a guard that waits on meaning, never a fixed sleep:

- the focused window's title, whenever it differs from the one the last guard waited
  for (``wait_for: {window: ^exact title$}``): a dialog has opened, the image was
  renamed, the app has finished loading;
- for a click, drag or scroll, an image anchor: the region around the pointer cut from
  the last frame recorded before the press (`app.agents.anchors`), which the replay
  waits to see before it acts (a menu drawn, a button enabled).

Each boundary the author marked ends a sub-goal: the reference says ``done`` there and
then expects the next phase's message (whose draft is the mark's note), and the
compiled `Boundary` says which actions belong to which sub-goal, for the phases of the
task and for skip replays.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
from PIL import Image

from app.agents.anchors import cut_anchor
from app.authoring.recording import (
    FrameEvent,
    KeyEvent,
    MarkEvent,
    PointerEvent,
    Recording,
    RecordingError,
    WindowEvent,
)
from app.core.actions import Action, Click, Drag, GuiAction, Move, Scroll, compact_action
from app.desktops.local.reaper import SESSION_PREFIX
from app.rfb import wire
from app.rfb.proxy import CLICK_SLOP, InputRecorder

_Timed = TypeVar("_Timed", WindowEvent, FrameEvent)
_BUTTONS = wire.BUTTON_MASKS["left"] | wire.BUTTON_MASKS["middle"] | wire.BUTTON_MASKS["right"]

ANCHOR_HALF = 24
"""Half the side of an anchor's square (pixels): big enough to tell a button from its
neighbours, small enough that what changes elsewhere on the screen does not matter."""
WINDOW_TIMEOUT = 60.0
ANCHOR_TIMEOUT = 30.0
MIN_ANCHOR_SPREAD = 2.0
"""An anchor whose pixels barely vary (a flat canvas) proves nothing; none is made."""
EXPECT_PREFIX = 40
"""Characters of a mark's note the reference expects to find in the phase's message."""


@dataclass(frozen=True)
class TimedAction:
    action: GuiAction
    started: float
    """When its first input event came (seconds since the recording began)."""


@dataclass(frozen=True)
class Boundary:
    """A sub-goal mark: the actions before it (from the previous one) are its sub-goal."""

    note: str
    t: float
    actions_before: int
    """How many of the recording's actions come before this mark."""


@dataclass
class CompiledReference:
    """A recording compiled: the script's steps, its anchors' pixels, the sub-goals."""

    steps: list[Any]
    """Steps in the reference-script format (`app.agents.reference_script`), anchors named
    relative to the script's folder."""
    anchors: dict[str, npt.NDArray[np.uint8]] = field(default_factory=dict)
    """Anchor file name (relative to the script's folder) → RGB pixels."""
    actions: list[TimedAction] = field(default_factory=list)
    boundaries: list[Boundary] = field(default_factory=list)
    ignored_events: int = 0
    """Input events that map to no action (unknown keysyms, sideways wheel)."""

    @property
    def subgoals(self) -> list[range]:
        """Each sub-goal's actions (indices into `actions`), first to last."""
        edges = [0, *(b.actions_before for b in self.boundaries), len(self.actions)]
        return [range(a, b) for a, b in itertools.pairwise(edges)]

    def script(self, description: str) -> dict[str, Any]:
        return {"kind": "demonstration", "description": description, "steps": self.steps}

    def write_anchors(self, folder: Path) -> None:
        """Write the anchor PNGs under `folder` (the script's folder)."""
        for name, pixels in self.anchors.items():
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            Image.fromarray(pixels).save(path)


def coalesce(recording: Recording) -> tuple[list[TimedAction], list[Boundary], int]:
    """The recording's actions (with when each began), its boundaries, and how many
    input events made no action.

    A key or a button pressed where the replay's pointer is not yet (the person's
    pointer only hovered there) is preceded by a ``move`` to that place: apps like
    Blender send keys to the area under the pointer and take a press only on a widget
    that has seen the pointer arrive, and the replay's pointer is wherever its last
    pointer action left it."""
    actions: list[TimedAction] = []
    boundaries: list[Boundary] = []
    pointer: tuple[int, int] | None = None
    """Where the person's pointer is."""
    placed: tuple[int, int] | None = None
    """Where the replay's pointer is after the actions so far (None: not yet placed)."""

    def emit(action: Action) -> None:
        nonlocal placed
        assert isinstance(action, GuiAction)  # input events only make GUI actions
        actions.append(TimedAction(action, recorder.last_started))
        if isinstance(action, Click | Scroll):
            placed = (action.x, action.y)
        elif isinstance(action, Drag):
            placed = (action.x2, action.y2)

    def hovered_elsewhere() -> bool:
        return pointer is not None and (
            placed is None
            or max(abs(pointer[0] - placed[0]), abs(pointer[1] - placed[1])) > CLICK_SLOP
        )

    recorder = InputRecorder(emit, live=False)
    focused: str | None = None
    mask = 0
    for event in recording.events:
        if isinstance(event, WindowEvent):
            if focused is not None and event.title != focused:
                # Keys typed on both sides of a focus change are two actions: the
                # reference must wait for the new window before typing into it.
                recorder.flush()
            focused = event.title
        elif isinstance(event, PointerEvent):
            pressed = event.mask & ~mask & _BUTTONS
            mask = event.mask
            pointer = (event.x, event.y)
            if pressed and hovered_elsewhere():
                # The press comes with the pointer's arrival; a replay moves there as a
                # step of its own first, so the app sees the hover before the press
                # (Blender's text fields ignore a press that arrives with the pointer).
                recorder.flush()
                if hovered_elsewhere():
                    actions.append(TimedAction(Move(*pointer), event.t))
                    placed = pointer
            recorder.pointer(event.mask, event.x, event.y, at=event.t)
        elif isinstance(event, KeyEvent):
            if event.down and hovered_elsewhere():
                recorder.flush()  # a pending click places the pointer first
                if hovered_elsewhere():
                    assert pointer is not None
                    actions.append(TimedAction(Move(*pointer), event.t))
                    placed = pointer
            recorder.key(event.down, event.keysym, at=event.t)
        elif isinstance(event, MarkEvent):
            recorder.flush()  # what was typed before the mark belongs to its sub-goal
            boundaries.append(Boundary(event.note, event.t, len(actions)))
    recorder.flush()
    return actions, boundaries, recorder.ignored


def compile_recording(
    recording: Recording, anchor_dir: str, expected_messages: list[str] | None = None
) -> CompiledReference:
    """Compile `recording` into a reference whose anchors live under `anchor_dir`
    (relative to the script's folder, e.g. ``anchors/gimp-poster-l3``). After each
    boundary the reference expects the phase message `expected_messages` gives for it
    (default: the mark's note, the message's first draft).

    Raises:
        RecordingError: the recording holds no action, or a frame it names is not an image.
    """
    actions, boundaries, ignored = coalesce(recording)
    if not actions:
        raise RecordingError(f"{recording.folder}: the recording holds no input to compile")
    compiled = CompiledReference([], actions=actions, boundaries=boundaries, ignored_events=ignored)
    titles = [e for e in recording.events if isinstance(e, WindowEvent)]
    frames = [e for e in recording.events if isinstance(e, FrameEvent)]
    cache: dict[str, npt.NDArray[np.uint8] | None] = {}
    guarded_title: str | None = None
    if expected_messages is not None:
        if len(expected_messages) != len(boundaries):
            raise RecordingError(
                f"{recording.folder}: {len(expected_messages)} phase messages for "
                f"{len(boundaries)} boundaries"
            )
        boundaries = [
            Boundary(message, b.t, b.actions_before)
            for b, message in zip(boundaries, expected_messages, strict=True)
        ]
    marks = iter(boundaries)
    next_mark = next(marks, None)

    def guard_title(t: float, always: bool = False) -> None:
        nonlocal guarded_title
        title = _last_before(titles, t)
        if title is None:
            return
        pattern = f"^{title_pattern(title.title)}$"
        last = compiled.steps[-1] if compiled.steps else None
        again = always and last != {"wait_for": {"window": pattern, "timeout": WINDOW_TIMEOUT}}
        if title.title != guarded_title or again:
            guarded_title = title.title
            compiled.steps.append({"wait_for": {"window": pattern, "timeout": WINDOW_TIMEOUT}})

    anchored = -1
    """The index of a click whose anchor its own move already waited for."""
    for index, timed in enumerate(actions):
        while next_mark is not None and next_mark.actions_before == index:
            # The person saw the sub-goal done (a save's '*' gone from the title)
            # before marking it: the replay waits for the same before it says done.
            guard_title(next_mark.t, always=True)
            compiled.steps += _boundary_steps(next_mark)
            next_mark = next(marks, None)
        guard_title(timed.started)
        target = timed
        following = actions[index + 1] if index + 1 < len(actions) else None
        if (
            isinstance(timed.action, Move)
            and following is not None
            and _target(following.action) == (timed.action.x, timed.action.y)
        ):
            # A click's own move: the replay waits for the click's target to look as
            # recorded before the pointer goes there (a window is mapped before it
            # paints; a widget that gets the pointer before it exists never sees it
            # arrive), then moves, then clicks.
            target, anchored = following, index + 1
        point = None if index == anchored else _target(target.action)
        frame = _last_before(frames, target.started)
        pixels = None
        if point is not None and frame is not None:
            if frame.file not in cache:
                cache[frame.file] = _read_frame(recording, frame)
            pixels = cache[frame.file]
        if point is not None and pixels is not None:
            cut, left, top = cut_anchor(pixels, point[0], point[1], ANCHOR_HALF)
            if cut.size and float(cut.std()) >= MIN_ANCHOR_SPREAD:
                name = f"{anchor_dir}/{len(compiled.anchors) + 1:03d}.png"
                compiled.anchors[name] = cut
                anchor = {"image": name, "at": [left, top]}
                compiled.steps.append({"wait_for": {"anchor": anchor, "timeout": ANCHOR_TIMEOUT}})
        compiled.steps.append(compact_action(timed.action))
    while next_mark is not None:  # marks after the last action
        guard_title(next_mark.t, always=True)
        compiled.steps += _boundary_steps(next_mark)
        next_mark = next(marks, None)
    if recording.events:
        guard_title(recording.events[-1].t, always=True)
    compiled.steps.append("done")
    return compiled


def _boundary_steps(mark: Boundary) -> list[Any]:
    steps: list[Any] = ["done"]
    words = mark.note.strip()[:EXPECT_PREFIX]
    if words:
        steps.append({"expect": {"message": literal(words)}})
    return steps


def literal(text: str) -> str:
    """`text` as a regex that matches it literally, escaping only what is special (so
    a title stays readable: ``\\[photo\\] \\(imported\\)-1\\.0 – GIMP``)."""
    return re.sub(r"([.^$*+?{}\[\]\\|()])", r"\\\1", text)


# A local desktop's home is a fresh session folder (`/tmp/deskloop-XXXXXXXX/home`), and
# apps that show a file's full path in their title (Blender: `Blender [/tmp/…/scene.blend]`)
# name it: a replay on another desktop has another folder there.
_SESSION_HOME = re.compile(
    r"/[^\s\[\]()]*?/" + re.escape(SESSION_PREFIX) + r"[A-Za-z0-9_]+/home(?=/)"
)


def title_pattern(text: str) -> str:
    """A window title as a regex that matches it literally (`literal`), except that a
    local desktop's session home in it matches any home (``.*``)."""
    parts = _SESSION_HOME.split(text)
    return ".*".join(literal(part) for part in parts)


def _target(action: GuiAction) -> tuple[int, int] | None:
    """Where on the screen a pointer action acts (None for keys and text)."""
    if isinstance(action, Click | Scroll):
        return action.x, action.y
    if isinstance(action, Drag):
        return action.x1, action.y1
    return None


def _last_before(events: list[_Timed], t: float) -> _Timed | None:
    found = None
    for event in events:
        if event.t > t:
            break
        found = event
    return found


def _read_frame(recording: Recording, frame: FrameEvent) -> npt.NDArray[np.uint8] | None:
    """The frame's pixels; None when its file was never written (the recorder died
    between writing the frame's line and its PNG): that action goes without an anchor.

    Raises:
        RecordingError: the file is there but is not a readable image.
    """
    path = recording.frame_path(frame)
    try:
        with Image.open(path) as image:
            return np.asarray(image.convert("RGB"), dtype=np.uint8)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise RecordingError(f"{path}: cannot read the recorded frame: {exc}") from None
