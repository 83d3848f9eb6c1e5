"""Authoring by demonstration from the TUI: what `deskloop author record|compile|draft|
verify` do (`app.cli.author_cmd`), as state the Author screen shows.

- `RecordingSession` records a demonstration: the start state written into a new
  recording folder, a desktop of the task's image from the session's `DesktopPool`
  (so it shows in Desktops too), and the recording started as `author record` starts
  it (`app.authoring.recorder.start_demonstration`: setup with its progress, then the
  recorder) until the author ends it (the screen's key, or ctrl+alt+shift+Q in the
  viewer). It runs on the app's asyncio loop, as an episode does; the recorder calls
  `_on_event` there, which only counts and appends, and the screen reads the state on
  a timer (`version` says when it changed).
- `verify_task` proves an authored task file, loaded off the loop.

Reviewing and drafting are `app.authoring.review`'s, shared with the command line.

No Textual here: the services are tested without a terminal.
"""

from __future__ import annotations

import asyncio
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from app.authoring.recorder import (
    FRAME_EVERY_SECONDS,
    DemonstrationRecorder,
    start_demonstration,
)
from app.authoring.recording import (
    EndEvent,
    Event,
    FrameEvent,
    KeyEvent,
    MarkEvent,
    PointerEvent,
    WindowEvent,
)
from app.authoring.start_state import (
    AUTHOR_APPS,
    write_start_state,
)
from app.proving.prove import DEFAULT_REPEATS, Proof, prove_task
from app.rfb.client import VncEndpoint
from app.rfb.proxy import ProxyAddress
from app.store import Store
from app.tasks.loader import load_task
from app.tasks.model import Task
from app.ui.services.desktops import DesktopEntry, DesktopPool

RecordingState = Literal["starting", "recording", "ended", "failed"]
LOG_LINES = 200
"""Lines of the recording's log kept for the screen (windows, marks, progress)."""


def recording_folder(recordings: Path, task_id: str) -> Path:
    """A new recording folder for `task_id`, as `author record` names them."""
    return recordings / f"{task_id}-{time.strftime('%Y%m%d-%H%M%S')}"


def parse_assets(text: str) -> list[Path]:
    """The asset files typed in one line (shell quoting for names with spaces), with
    `~` expanded.

    Raises:
        ValueError: unbalanced quotes.
    """
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise ValueError(f"assets: {exc}") from None
    return [Path(word).expanduser() for word in words]


@dataclass
class StartRequest:
    """What the author chose: the task id, and a task to start from or the app and
    its files."""

    task_id: str
    app: str | None = None
    from_task: Task | None = None
    assets: list[Path] = field(default_factory=list)

    def problems(self) -> list[str]:
        out = []
        if not self.task_id.strip():
            out.append("id: the task id is needed")
        if self.from_task is None and self.app not in AUTHOR_APPS:
            out.append(f"app: choose one of {', '.join(AUTHOR_APPS)} (or a task to start from)")
        return out


class RecordingSession:
    """One demonstration recorded from the TUI, and what has happened in it so far."""

    def __init__(
        self,
        request: StartRequest,
        pool: DesktopPool,
        folder: Path,
        *,
        port: int = 0,
        frame_every: float | None = None,
    ) -> None:
        self.request = request
        self.pool = pool
        self.folder = folder
        self._port = port
        self._frame_every = frame_every
        self.state: RecordingState = "starting"
        self.status = "writing the start state"
        self.log: list[str] = []
        """Progress, focused windows and marks, in order (the screen's list): the
        latest `LOG_LINES` of them."""
        self.lines_total = 0
        """Lines ever logged (the screen writes those it has not shown yet)."""
        self.marks: list[MarkEvent] = []
        self.counts = {"pointer": 0, "key": 0, "frame": 0}
        self.window: str | None = None
        self.address: ProxyAddress | None = None
        """Where the author's VNC viewer connects (the recording proxy)."""
        self.end_reason = ""
        self.error: str | None = None
        self.problems: list[str] = []
        self.entry: DesktopEntry | None = None
        self.version = 0
        """Bumped on every change, so a screen redraws only when there is news."""
        self._recorder: DemonstrationRecorder | None = None
        self._end_requested: str | None = None

    # -- what the screen shows ------------------------------------------------------

    @property
    def ended(self) -> bool:
        return self.state in ("ended", "failed")

    def endpoint(self) -> VncEndpoint | None:
        """The desktop's own VNC endpoint, for the live view's shared connection
        (watching never sends input, so nothing of it is recorded)."""
        if self.entry is None or self.ended:
            return None
        return self.entry.desktop.info().vnc

    def _say(self, line: str) -> None:
        self.status = line
        self._note(line)

    def _note(self, line: str) -> None:
        self.log.append(line)
        self.lines_total += 1
        del self.log[:-LOG_LINES]
        self.version += 1

    def _on_event(self, event: Event) -> None:
        # Called by the recorder on the loop for every input event: cheap bookkeeping.
        match event:
            case PointerEvent():
                self.counts["pointer"] += 1
            case KeyEvent():
                self.counts["key"] += 1
            case FrameEvent():
                self.counts["frame"] += 1
            case WindowEvent(t, title):
                self.window = title
                self._note(f"{t:7.1f} s  window: {title}")
            case MarkEvent(t, note):
                self.marks.append(event)
                self._note(f"{t:7.1f} s  boundary {len(self.marks)}: {note or '(no note)'}")
            case EndEvent(t, reason):
                self._note(f"{t:7.1f} s  end: {reason}")
        self.version += 1

    # -- the author's actions -------------------------------------------------------

    def mark(self, note: str = "") -> None:
        """A sub-goal boundary now.

        Raises:
            ValueError: not recording (still starting, or ended).
        """
        if self._recorder is None or self.state != "recording":
            raise ValueError(f"cannot mark: the recording is {self.state}")
        self._recorder.mark(note)

    def end(self, reason: str = "ended in the TUI") -> None:
        """End the recording (or, while it starts, as soon as it has started)."""
        if self._recorder is not None:
            self._recorder.end(reason)
        else:
            self._end_requested = reason

    # -- the recording ----------------------------------------------------------------

    async def run(self) -> Path:
        """Start state, desktop, setup, record until the end; returns the folder.

        Raises:
            DeskLoopError: the start state, the desktop, the setup or the recorder
                failed (also kept in `error`, with `state` "failed").
        """
        try:
            await self._run()
        except BaseException as exc:
            self.state = "failed"
            self.error = str(exc) or type(exc).__name__
            self._note(f"failed: {self.error}")
            raise
        return self.folder

    async def _run(self) -> None:
        request = self.request
        start = await asyncio.to_thread(
            write_start_state,
            self.folder,
            task_id=request.task_id,
            app=request.app,
            assets=request.assets,
            from_task=request.from_task,
        )
        self._note(f"start state written to {self.folder}")
        entry, started_here = self.pool.for_task(start.task)
        self.entry = entry
        desktop = entry.desktop
        try:
            entry.busy = "starting for a recording"
            self._say(f"starting a {self.pool.backend} desktop for {start.task.app}")
            recorder, self.address = await start_demonstration(
                desktop,
                start,
                self.folder,
                from_task=request.from_task.id if request.from_task else None,
                port=self._port,
                frame_every=self._frame_every or FRAME_EVERY_SECONDS,
                on_event=self._on_event,
                progress=self._say,
            )
            self._recorder = recorder
            entry.busy = "recording a demonstration"
            self.state = "recording"
            self._say("recording")
            if self._end_requested is not None:
                recorder.end(self._end_requested)
            try:
                self.end_reason = await recorder.wait()
            finally:
                await recorder.stop("the TUI stopped")
                self.problems = list(recorder.problems)
            self.state = "ended"
            self._say(f"recording ended: {self.end_reason}")
        finally:
            entry.busy = None
            if started_here:
                await desktop.close()
            self.version += 1


async def verify_task(
    task_file: Path,
    store: Store,
    backend: str,
    *,
    repeats: int = DEFAULT_REPEATS,
    progress: Callable[[str], None] | None = None,
) -> Proof:
    """`deskloop author verify`: the task file loaded in a thread, then every proof."""
    task = await asyncio.to_thread(load_task, task_file)
    return await prove_task(task, store, backend, repeats=repeats, progress=progress)
