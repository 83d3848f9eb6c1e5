"""Record a person's work on a live desktop, through the recording proxy, to a folder.

The person's viewer connects to an `RFBRecordingProxy` (127.0.0.1, its own random
password) and drives the desktop live. A tap on the proxy writes every raw input event
to the recording (`app.authoring.recording`) with its time, and before a button or key
press reaches the desktop it notes what the screen showed and which window had the
focus (the compiler's anchors and window guards come from these). A steady frame every
`frame_every` seconds fills the gaps.

The author marks sub-goal boundaries with a key combination the proxy swallows (the
desktop never sees it: ctrl+alt+shift+M by default), with `mark()` (the TUI), or by
appending a line to the folder's ``control.jsonl`` (``deskloop author mark`` from another
terminal). Ctrl+Alt+Shift+Q, `stop()` or a ``{"end": ...}`` control line ends it.

The desktop's state is captured (`app.authoring.state`) at the start, at each boundary
and at the end, and analysed (`app.authoring.analysis`) when the recording stops, on
the recording's own desktop (Blender scenes and media are probed there): the diffs and
proposals of `app.authoring.propose` come from these snapshots. A capture at a mark
runs in the background, one after the other, so the person's input is never held up.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt
from PIL import Image

from app.authoring.analysis import analyse_snapshot
from app.authoring.recording import (
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
)
from app.authoring.start_state import StartState
from app.authoring.state import StateSnapshot, boundary_label, capture_state
from app.core.errors import DeskLoopError, VNCError
from app.core.files import write_atomic
from app.core.frames import Frame
from app.desktops.base import Desktop
from app.desktops.xwindows import active_window_title
from app.episode.setup_steps import run_setup
from app.rfb.client import VNCClient, connect
from app.rfb.proxy import InputRecorder, ProxyAddress, RFBRecordingProxy

CONTROL_FILE = "control.jsonl"
CONTROL_POLL_SECONDS = 0.2
FRAME_EVERY_SECONDS = 1.0

_CTRL = {0xFFE3, 0xFFE4}
_ALT = {0xFFE9, 0xFFEA}
_SHIFT = {0xFFE1, 0xFFE2}
MARK_KEYSYMS = {ord("m"), ord("M")}
END_KEYSYMS = {ord("q"), ord("Q")}
CHORD_HELP = "ctrl+alt+shift+M marks a sub-goal boundary, ctrl+alt+shift+Q ends"


def append_control(folder: Path, line: dict[str, str]) -> None:
    """What `deskloop author mark` does: ask a running recorder for a mark or the end.

    Raises:
        RecordingError: `folder` is not a recording, or the line cannot be written.
    """
    if not (folder / "meta.json").is_file():
        raise RecordingError(f"{folder}: not a recording folder (no meta.json)")
    try:
        with open(folder / CONTROL_FILE, "a", encoding="utf-8") as f:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    except OSError as exc:
        raise RecordingError(f"{folder / CONTROL_FILE}: cannot write: {exc}") from None


class DemonstrationRecorder:
    """Records `desktop` (already in its start state) into `writer`'s folder."""

    def __init__(
        self,
        desktop: Desktop,
        writer: RecordingWriter,
        *,
        port: int = 0,
        frame_every: float = FRAME_EVERY_SECONDS,
        on_event: Callable[[Event], None] | None = None,
        capture: bool = True,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self._desktop = desktop
        self._writer = writer
        self._port = port
        self._frame_every = frame_every
        self._on_event = on_event
        self._capture = capture
        self._progress = progress
        self._snapshots: list[StateSnapshot] = []
        self._captures: asyncio.Task[None] | None = None
        self._marks = 0
        self._start = 0.0
        self._proxy: RFBRecordingProxy | None = None
        self._client: VNCClient | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._saves: set[asyncio.Task[None]] = set()
        self._pointer_mask = 0
        self._last_frame: tuple[npt.NDArray[np.uint8], str] | None = None
        self._held: set[int] = set()
        self._swallowed: set[int] = set()
        self._title: str | None = None
        self._ended = asyncio.Event()
        self.end_reason = ""
        self.problems: list[str] = []
        """What went wrong without stopping the recording (a frame not saved...)."""

    @property
    def address(self) -> ProxyAddress | None:
        return None if self._proxy is None else self._proxy.address

    @property
    def folder(self) -> Path:
        return self._writer.folder

    async def start(self) -> ProxyAddress:
        """Open the recording, the desktop connection and the viewer's proxy.

        Raises:
            RecordingError: the folder cannot be written.
            DesktopError / VNCError: the desktop has no VNC endpoint or cannot be reached.
        """
        endpoint = self._desktop.info().vnc
        if endpoint is None:
            raise RecordingError("the desktop has no VNC endpoint to record through")
        self._writer.open()
        if self._capture:
            self._say("capturing the start state")
            await self._capture_state("start")
        self._start = time.monotonic()
        self._client = await connect(endpoint.host, endpoint.port, endpoint.password)
        await self._client.frame()
        await self._note_window()
        await self._save_frame(self._client.current_frame())
        # Actions are not needed live (the compiler coalesces the raw events), but the
        # proxy's recorder is its parser's other half; this one's output is dropped.
        self._proxy = RFBRecordingProxy(
            endpoint, InputRecorder(lambda _: None), self._port, tap=self
        )
        address = await self._proxy.start()
        self._tasks = [
            asyncio.create_task(self._steady_frames()),
            asyncio.create_task(self._read_control()),
        ]
        return address

    async def wait(self) -> str:
        """Until the recording is ended (chord, control line or `stop`); the reason."""
        await self._ended.wait()
        return self.end_reason

    def mark(self, note: str = "") -> None:
        """A sub-goal boundary now (the TUI's key, the control file)."""
        at = self._now()
        self._write(MarkEvent(at, note))
        self._writer.sync()
        self._marks += 1
        # The chord is swallowed by the proxy: this line is the author's only sign of it.
        said = (
            f"note: {note}"
            if note.strip()
            else (
                f"no note: give phase {self._marks}'s message with "
                f"`author draft --message {self._marks}=TEXT`"
            )
        )
        self._say(f"boundary {self._marks} marked at {at:.1f} s ({said})")
        if self._capture:
            self._after_captures(boundary_label(self._marks))

    def end(self, reason: str) -> None:
        if not self._ended.is_set():
            self.end_reason = reason
            self._ended.set()

    async def stop(self, reason: str = "stopped") -> None:
        """End the recording, write its end and close everything. Safe to call twice."""
        self.end(reason)
        if self._proxy is not None:
            await self._proxy.close()
            self._proxy = None
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        await asyncio.gather(*self._saves, return_exceptions=True)
        if self._client is not None:
            with contextlib.suppress(Exception):
                await self._client.close()
            self._client = None
            self._write(EndEvent(self._now(), self.end_reason))
            self._writer.close()
            if self._capture:
                self._after_captures("end")
                assert self._captures is not None
                await self._captures
                await self._analyse()

    # -- the desktop's state ------------------------------------------------------------

    def _after_captures(self, label: str) -> None:
        """Capture `label` once the captures before it are done (each builds on the last)."""
        before = self._captures

        async def chained() -> None:
            if before is not None:
                await before
            await self._capture_state(label)

        self._captures = asyncio.create_task(chained())

    async def _capture_state(self, label: str) -> None:
        previous = self._snapshots[-1] if self._snapshots else None
        try:
            snapshot = await capture_state(
                self._desktop.guest, self.folder, label, previous=previous
            )
        except DeskLoopError as exc:
            self.problems.append(f"state {label}: {exc}")
            return
        self._snapshots.append(snapshot)

    async def _analyse(self) -> None:
        """The facts of every snapshot, on this desktop (before it is closed)."""
        for snapshot in self._snapshots:
            self._say(f"analysing the {snapshot.label} state")
            try:
                await analyse_snapshot(self.folder, snapshot, self._desktop.guest)
            except DeskLoopError as exc:
                self.problems.append(f"analysis of {snapshot.label}: {exc}")

    def _say(self, text: str) -> None:
        if self._progress is not None:
            self._progress(text)

    # -- the proxy's tap --------------------------------------------------------------

    async def pointer(self, mask: int, x: int, y: int) -> None:
        pressed = mask & ~self._pointer_mask
        if pressed:
            await self._before_press()
        self._pointer_mask = mask
        self._write(PointerEvent(self._now(), mask, x, y))

    async def key(self, down: bool, keysym: int) -> bool:
        if not down:
            self._held.discard(keysym)
            if keysym in self._swallowed:
                self._swallowed.discard(keysym)
                return False
        else:
            chord = all(self._held & group for group in (_CTRL, _ALT, _SHIFT))
            if chord and keysym in MARK_KEYSYMS | END_KEYSYMS:
                self._swallowed.add(keysym)
                if keysym in MARK_KEYSYMS:
                    self.mark()
                else:
                    self.end("the author's end key")
                return False
            self._held.add(keysym)
            await self._before_press()
        self._write(KeyEvent(self._now(), down, keysym))
        return True

    # -- what the screen showed -------------------------------------------------------

    async def _before_press(self) -> None:
        """Note the focused window and the screen before a press takes effect."""
        await self._note_window()
        if self._client is not None:
            with contextlib.suppress(VNCError):
                await self._save_frame(self._client.current_frame())

    async def _note_window(self) -> None:
        try:
            title = await active_window_title(self._desktop.guest)
        except DeskLoopError as exc:
            self.problems.append(f"window title: {exc}")
            return
        if title != self._title:
            self._title = title
            self._write(WindowEvent(self._now(), title))

    async def _save_frame(self, frame: Frame) -> None:
        if self._last_frame is not None and np.array_equal(frame.pixels, self._last_frame[0]):
            # The screen has not changed since the last frame (typing into a field that
            # repaints nothing yet, a steady frame of an idle desktop): name that file
            # again instead of writing the same picture twice.
            self._write(FrameEvent(self._now(), self._last_frame[1]))
            return
        name = self._writer.frame_name()
        self._last_frame = (frame.pixels, name)
        self._write(FrameEvent(self._now(), name))
        # The line comes first so events stay in time order; the PNG follows in a
        # thread (the compiler skips a frame a crash left unwritten).
        task = asyncio.create_task(asyncio.to_thread(self._png, frame, self.folder / name))
        self._saves.add(task)
        task.add_done_callback(self._saved)

    def _saved(self, task: asyncio.Task[None]) -> None:
        self._saves.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self.problems.append(f"frame: {task.exception()}")

    @staticmethod
    def _png(frame: Frame, path: Path) -> None:
        png = io.BytesIO()
        Image.fromarray(frame.pixels).save(png, format="PNG", compress_level=1)
        write_atomic(path, png.getvalue())

    async def _steady_frames(self) -> None:
        while True:
            await asyncio.sleep(self._frame_every)
            if self._client is None:
                return
            try:
                frame = await self._client.frame()
            except VNCError as exc:
                self.problems.append(f"steady frame: {exc}")
                self.end(f"the desktop's screen was lost: {exc}")
                return
            await self._note_window()
            await self._save_frame(frame)

    async def _read_control(self) -> None:
        path = self.folder / CONTROL_FILE
        offset = 0
        while True:
            await asyncio.sleep(CONTROL_POLL_SECONDS)
            try:
                with open(path, "rb") as f:
                    f.seek(offset)
                    data = f.read()
            except FileNotFoundError:
                continue
            complete = data[: data.rfind(b"\n") + 1]
            offset += len(complete)
            for line in complete.splitlines():
                self._control(line)

    def _control(self, line: bytes) -> None:
        try:
            order = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError):
            self.problems.append(f"{CONTROL_FILE}: not a JSON line: {line[:80]!r}")
            return
        if isinstance(order, dict) and isinstance(order.get("mark"), str):
            self.mark(order["mark"])
        elif isinstance(order, dict) and isinstance(order.get("end"), str):
            self.end(order["end"] or "ended from the command line")
        else:
            self.problems.append(f"{CONTROL_FILE}: not a mark or end: {line[:80]!r}")

    def _now(self) -> float:
        return time.monotonic() - self._start

    def _write(self, event: Event) -> None:
        self._writer.write(event)
        if self._on_event is not None:
            self._on_event(event)


async def start_demonstration(
    desktop: Desktop,
    start: StartState,
    folder: Path,
    *,
    from_task: str | None = None,
    port: int = 0,
    frame_every: float = FRAME_EVERY_SECONDS,
    on_event: Callable[[Event], None] | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> tuple[DemonstrationRecorder, ProxyAddress]:
    """Reset `desktop` to `start` (its setup, with progress), then start recording
    into `folder`: the running recorder and where the author's VNC viewer connects.
    `author record` and the TUI's recordings start this way; each then waits for the
    recorder's end and stops it. `from_task` is the task the start state came from."""
    await desktop.reset()
    await run_setup(start.task, desktop, progress)
    info = desktop.info()
    meta = RecordingMeta(
        app=start.task.app,
        width=info.width,
        height=info.height,
        started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        task=from_task,
        assets=start.assets,
    )
    recorder = DemonstrationRecorder(
        desktop,
        RecordingWriter(folder, meta),
        port=port,
        frame_every=frame_every,
        on_event=on_event,
        progress=progress,
    )
    return recorder, await recorder.start()
