"""Authoring by demonstration from the TUI: what `deskloop author record|compile|draft|
verify` do (`app.cli.author_cmd`), as state the Author screen shows.

- `RecordingSession` records a demonstration: the start state written into a new
  recording folder, a desktop of the task's image from the session's `DesktopPool`
  (so it shows in Desktops too), the setup run with its progress, and the
  `DemonstrationRecorder` until the author ends it (the screen's key, or
  ctrl+alt+shift+Q in the viewer). It runs on the app's asyncio loop, as an episode
  does; the recorder calls `_on_event` there, which only counts and appends, and the
  screen reads the state on a timer (`version` says when it changed).
- `load_review` reads a recording and compiles it (blocking: call it in a thread);
  `proposals` gives the checks proposed for it; `parse_check` validates a check typed
  by hand; `write_task` drafts and writes the task (blocking); `verify_task` proves it.

No Textual here: the services are tested without a terminal.
"""

from __future__ import annotations

import asyncio
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from app.authoring.compile import CompiledReference, compile_recording
from app.authoring.draft import PhaseDraft, WrittenTask, draft_task, write_draft
from app.authoring.propose import propose_recording, subgoal_diffs
from app.authoring.recorder import FRAME_EVERY_SECONDS, DemonstrationRecorder
from app.authoring.recording import (
    EndEvent,
    Event,
    FrameEvent,
    KeyEvent,
    MarkEvent,
    PointerEvent,
    Recording,
    RecordingError,
    RecordingMeta,
    RecordingWriter,
    WindowEvent,
    read_recording,
)
from app.authoring.start_state import (
    AUTHOR_APPS,
    StartState,
    read_start_state,
    write_start_state,
)
from app.checks.tree import parse_tree
from app.core.actions import describe_action
from app.core.errors import TaskError
from app.episode.setup_steps import run_setup
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
            await desktop.reset()
            await run_setup(start.task, desktop, self._say)
            info = desktop.info()
            meta = RecordingMeta(
                app=start.task.app,
                width=info.width,
                height=info.height,
                started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                task=request.from_task.id if request.from_task else None,
                assets=start.assets,
            )
            recorder = DemonstrationRecorder(
                desktop,
                RecordingWriter(self.folder, meta),
                port=self._port,
                frame_every=self._frame_every or FRAME_EVERY_SECONDS,
                on_event=self._on_event,
                progress=self._say,
            )
            entry.busy = "recording a demonstration"
            self.address = await recorder.start()
            self._recorder = recorder
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


# -- review ---------------------------------------------------------------------------


@dataclass
class Review:
    """A recording compiled, for the researcher to review before drafting."""

    folder: Path
    recording: Recording
    start: StartState
    compiled: CompiledReference
    changed: list[str] = field(default_factory=list)
    """What each sub-goal changed in the home (the state diff), in sub-goal order;
    empty when the recording has no snapshots."""

    def subgoals(self) -> list[tuple[list[str], str | None]]:
        """Each sub-goal's actions (``12.30 s  click(...)``) and the note of the
        boundary that ends it (None for the last sub-goal, which no boundary ends)."""
        out: list[tuple[list[str], str | None]] = []
        marks, actions = self.compiled.boundaries, self.compiled.actions
        for n, span in enumerate(self.compiled.subgoals):
            lines = [
                f"{actions[i].started:7.2f} s  {describe_action(actions[i].action)}" for i in span
            ]
            out.append((lines, marks[n].note if n < len(marks) else None))
        return out

    @property
    def summary(self) -> str:
        recording, compiled = self.recording, self.compiled
        state = "ended normally" if recording.ended else "cut off (a crash or a kill)"
        return (
            f"{self.folder}: {len(recording.events)} events, {state}; "
            f"{len(compiled.actions)} actions, {len(compiled.boundaries)} boundaries, "
            f"{len(compiled.steps)} reference steps, {len(compiled.anchors)} anchors"
        )


def load_review(folder: Path) -> Review:
    """Read and compile the recording in `folder` (blocking: call it in a thread).

    Raises:
        RecordingError / StartStateError / TaskError: not a recording, no start state,
            or nothing to compile; the message names the file.
    """
    recording = read_recording(folder)
    start = read_start_state(folder)
    compiled = compile_recording(recording, "anchors/preview")
    try:
        changed = [d.words() for d in subgoal_diffs(folder)]
    except RecordingError:
        changed = []  # unreadable snapshots: the review goes on without them
    return Review(folder, recording, start, compiled, changed)


@dataclass(frozen=True)
class Proposal:
    """A check proposed for the task: an entry of its evaluate tree (or of phase
    `phase`'s checks), why it is proposed, and files it needs copied into the task
    (path relative to the task's folder → source)."""

    check: dict[str, Any]
    why: str
    files: dict[str, Path] = field(default_factory=dict)
    phase: int | None = None
    """1-based: a check of the phase delivered at that boundary; None: the task's."""


def proposals(folder: Path, task_id: str) -> list[Proposal]:
    """The checks proposed from the recording's state diff (`app.authoring.propose`):
    the task's (start → end), then each phase's (its sub-goal's diff); expected files
    named under the task's own ``assets/TASK_ID/expected``. Blocking: call it in a
    thread. A recording without state snapshots proposes nothing.
    """
    try:
        found = propose_recording(folder, f"assets/{task_id}/expected")
    except RecordingError:
        return []
    marks = len(read_recording(folder).marks)
    out = [Proposal(p.entry, p.why, dict(p.assets)) for p in found.final]
    for n, phase in enumerate(found.phases[:marks], 1):
        out += [Proposal(p.entry, f"phase {n}: {p.why}", dict(p.assets), n) for p in phase]
    return out


def retarget(value: Any, old: str, new: str) -> Any:
    """`value` with task-relative paths under ``assets/OLD/`` moved to ``assets/NEW/``
    (the id was changed in the review after the checks were proposed)."""
    if old == new:
        return value
    if isinstance(value, str) and value.startswith(f"assets/{old}/"):
        return f"assets/{new}/" + value.removeprefix(f"assets/{old}/")
    if isinstance(value, dict):
        return {k: retarget(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [retarget(v, old, new) for v in value]
    return value


CheckState = Literal["proposed", "accepted", "dropped"]


@dataclass
class CheckItem:
    """One check in the review: proposed (not yet accepted), accepted or dropped."""

    check: dict[str, Any]
    why: str
    state: CheckState = "proposed"
    files: dict[str, Path] = field(default_factory=dict)
    phase: int | None = None
    """1-based: a check of the phase delivered at that boundary; None: the task's."""

    @classmethod
    def proposed(cls, proposal: Proposal) -> CheckItem:
        return cls(
            dict(proposal.check), proposal.why, "proposed", dict(proposal.files), proposal.phase
        )

    @property
    def text(self) -> str:
        """The check as YAML, one flow mapping (what an edit starts from)."""
        return yaml.safe_dump(self.check, default_flow_style=True, sort_keys=False).strip()


def parse_check(text: str, where: str = "check") -> dict[str, Any]:
    """A check entry typed as YAML (``{check: file_exists, path: ~/a.png}``, or a
    group with ``all``/``any``), validated like a task's evaluate tree.

    Raises:
        TaskError: not YAML, or not a valid check; the message names the field
            (``check.path: file_exists needs this parameter``).
    """
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise TaskError(f"{where}: not YAML ({exc})".replace("\n", " ")) from None
    parse_tree(value, where)  # TreeError (a TaskError) names the field
    assert isinstance(value, dict)  # parse_tree refuses anything but a mapping
    return value


@dataclass
class DraftForm:
    """What the researcher typed in the review."""

    task_id: str
    title: str
    instruction: str
    messages: list[str]
    """One phase message per boundary."""
    checks: list[CheckItem]
    overwrite: bool = False
    proposed_for: str = ""
    """The task id the checks were proposed for (their expected files' folder)."""

    @property
    def accepted(self) -> list[CheckItem]:
        return [c for c in self.checks if c.state == "accepted"]


def write_task(review: Review, form: DraftForm, tasks_dir: Path) -> WrittenTask:
    """Draft the task from the reviewed recording and write it into `tasks_dir`
    (blocking: call it in a thread). Only accepted checks go in.

    Raises:
        TaskError: the draft or the written task does not validate (the message names
            the field); then nothing is left in the library.
    """
    task_id = form.task_id.strip()
    proposed_for = form.proposed_for or task_id
    files: dict[str, bytes] = {}
    for item in form.accepted:
        for name, source in item.files.items():
            try:
                files[retarget(name, proposed_for, task_id)] = source.read_bytes()
            except OSError as exc:
                raise TaskError(f"{source}: cannot read the file a check needs: {exc}") from None

    def checks_of(phase: int | None) -> list[dict[str, Any]]:
        return [
            retarget(item.check, proposed_for, task_id)
            for item in form.accepted
            if item.phase == phase
        ]

    draft = draft_task(
        review.recording,
        review.start,
        task_id=task_id,
        title=form.title.strip() or task_id,
        instruction=form.instruction,
        phases=[
            PhaseDraft(message, checks=checks_of(n)) for n, message in enumerate(form.messages, 1)
        ],
        checks=checks_of(None),
        files=files,
    )
    return write_draft(draft, tasks_dir, overwrite=form.overwrite)


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


def proof_rows(proof: Proof) -> list[tuple[str, bool, str, str]]:
    """The proof as table rows: (what ran, ok, episode, reason)."""
    rows: list[tuple[str, bool, str, str]] = [
        (run.mode, run.ok, "" if run.episode_id is None else str(run.episode_id), run.reason)
        for run in proof.runs
    ]
    rows += [
        (
            f"skip {skip.subgoal + 1}",
            skip.ok,
            "" if skip.episode_id is None else str(skip.episode_id),
            skip.reason,
        )
        for skip in proof.skips
    ]
    return rows
