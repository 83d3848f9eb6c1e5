"""What the TUI manages, without Textual: desktops, a running episode, a frame feed.

Screens call these services and show their state; everything here is plain asyncio
on the app's loop, so it is tested without a terminal.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from app.agents.base import Agent
from app.core.conversation import Message
from app.core.errors import DesktopError, VNCError
from app.core.vocabulary import UserKind, UserMode
from app.desktops.base import Desktop, DesktopInfo
from app.desktops.factory import make_desktop
from app.desktops.inventory import BackendListing, VmListing, vm_command
from app.episode.control import EpisodeControl
from app.episode.events import (
    EndedEvent,
    EpisodeResult,
    MessageEvent,
    PhaseEvent,
    RunnerEvent,
    StatusEvent,
    StepEvent,
    WaitingEvent,
)
from app.episode.launch import (
    desktop_spec,
    fits,
    launch,
    llm_cache_dir,
    make_spec_desktop,
    make_user,
)
from app.episode.runner import EpisodeRunner
from app.rfb.client import VNCClient, VncEndpoint, connect
from app.store import Store
from app.tasks.model import Task
from app.tasks.triggers import describe_trigger
from app.users.person import PersonUser
from app.users.simulated import User

Pixels = npt.NDArray[np.uint8]

# -- desktops ---------------------------------------------------------------------


@dataclass
class DesktopEntry:
    desktop: Desktop
    busy: str | None = None
    """The operation in progress ('starting', 'resetting', ...), if any."""
    episode: int | None = None
    """The episode running on it, if any."""
    error: str | None = None
    snapshots: list[str] = field(default_factory=list)
    """Keys of the snapshots taken of it in this session, oldest first."""

    def info(self) -> DesktopInfo:
        return self.desktop.info()


class DesktopPool:
    """The desktops this TUI session made, by name, with their lifecycle operations.

    The local backend has no snapshots: its reset starts a fresh session from the
    empty start state, which is what a snapshot restore gives a VM.
    """

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.entries: dict[str, DesktopEntry] = {}

    def new(self) -> DesktopEntry:
        """A new desktop of the backend's default (libvirt: $DESKLOOP_IMAGE, else gimp)."""
        return self._add(make_desktop(self.backend))

    def for_task(self, task: Task) -> tuple[DesktopEntry, bool]:
        """The desktop an episode of `task` runs on, and whether the episode starts it
        (and so stops it at its end).

        Local: a new desktop (one runs every app). Libvirt: the VM `run-IMAGE` of the
        task's image (`app.episode.launch`): this session's own desktop of that name is
        reused, running or not, since two objects must not drive one VM; a desktop of
        another image never runs the task.

        Raises:
            DesktopError: that desktop is busy or runs an episode.
        """
        spec = desktop_spec(self.backend, task)
        desktop = make_spec_desktop(spec)
        name = desktop.info().name
        entry = self.entries.get(name)
        if entry is None:
            return self._add(desktop), True
        if not fits(entry.desktop, spec):
            raise DesktopError(f"desktop {name} is not of the {spec.image} image {task.id} needs")
        if entry.busy or entry.episode is not None:
            doing = entry.busy or f"running episode {entry.episode}"
            raise DesktopError(f"desktop {name} is busy {doing}")
        return entry, entry.info().state != "running"

    def _add(self, desktop: Desktop) -> DesktopEntry:
        entry = DesktopEntry(desktop)
        self.entries[desktop.info().name] = entry
        return entry

    def get(self, name: str) -> DesktopEntry:
        try:
            return self.entries[name]
        except KeyError:
            raise DesktopError(f"no desktop named {name!r} in this session") from None

    async def _op(self, name: str, doing: str, call: Callable[[Desktop], object]) -> None:
        entry = self.get(name)
        if entry.busy:
            raise DesktopError(f"desktop {name} is busy {entry.busy}")
        if entry.episode is not None and doing != "stopping":
            raise DesktopError(f"desktop {name} runs episode {entry.episode}; abort it first")
        entry.busy, entry.error = doing, None
        try:
            result = call(entry.desktop)
            if asyncio.iscoroutine(result):
                await result
        except DesktopError as exc:
            entry.error = str(exc)
            raise
        finally:
            entry.busy = None

    async def start(self, name: str) -> None:
        """Start (or restart) the desktop in a fresh session."""
        await self._op(name, "starting", lambda d: d.reset())

    async def reset(self, name: str) -> None:
        """Back to the start state (a fresh session on the local backend)."""
        await self._op(name, "resetting", lambda d: d.reset())

    async def stop(self, name: str) -> None:
        await self._op(name, "stopping", lambda d: d.close())

    async def snapshot(self, name: str) -> str:
        """Save the running desktop as a start state; returns its key.

        Raises:
            DesktopError: the backend has no snapshots (local), or saving failed.
        """
        entry = self.get(name)
        save = getattr(entry.desktop, "save_state", None)
        if save is None:
            raise DesktopError(
                f"the {self.backend} backend cannot take snapshots: its reset always starts "
                "a fresh session (snapshots are a libvirt feature)"
            )
        key = snapshot_key()
        await self._op(name, "saving a snapshot", lambda _d: save(key))
        entry.snapshots.append(key)
        return key

    async def restore(self, name: str) -> str:
        """Back to the last snapshot taken here; returns its key.

        Raises:
            DesktopError: no snapshot was taken of this desktop in this session.
        """
        entry = self.get(name)
        restore = getattr(entry.desktop, "restore_state", None)
        if restore is None or not entry.snapshots:
            raise DesktopError(f"no snapshot of {name} was taken in this session (p takes one)")
        key = entry.snapshots[-1]
        await self._op(name, f"restoring {key}", lambda _d: restore(key))
        return key

    async def close_all(self) -> None:
        for entry in self.entries.values():
            with contextlib.suppress(Exception):
                await entry.desktop.close()


@dataclass
class VmOperation:
    """A `deskloop vm` command running on a libvirt desktop made outside this session."""

    doing: str
    last: str = ""
    """The last line it printed (its progress)."""


class LibvirtDesktops:
    """The libvirt desktops that exist beside this session's (other runs made them):
    the latest listing and the operations running on them.

    Listing is blocking (`refresh` runs in a thread); operations are `deskloop vm`
    child processes (see `app.desktops.inventory`), so this process never holds a
    desktop's lock and other DeskLoop processes can use it as soon as one ends.
    """

    def __init__(self, source: Callable[[], BackendListing]) -> None:
        self.source = source
        self.listing: BackendListing | None = None
        """None until the first listing arrives."""
        self.operations: dict[str, VmOperation] = {}
        self.errors: dict[str, str] = {}
        """The last failed operation's reason, by desktop name (cleared by the next)."""

    def refresh(self) -> BackendListing:
        """List them now (blocking: call it in a thread); the caller stores the result.

        Never raises: a listing that fails says why in its `error`, which the screen
        shows in place of the desktops (a periodic refresh must not open a dialog
        every few seconds).
        """
        try:
            return self.source()
        except Exception as exc:
            return BackendListing("libvirt", "", error=f"{type(exc).__name__}: {exc}")

    def get(self, name: str) -> VmListing | None:
        if self.listing is None:
            return None
        return next((vm for vm in self.listing.desktops if vm.name == name), None)

    def check_free(self, name: str) -> VmListing:
        """The desktop, if this session may start an operation on it now.

        Raises:
            DesktopError: unknown, busy here, or driven by another DeskLoop process.
        """
        vm = self.get(name)
        if vm is None:
            raise DesktopError(f"no libvirt desktop {name} (listed again every few seconds)")
        operation = self.operations.get(name)
        if operation is not None:
            raise DesktopError(f"desktop {name} is busy {operation.doing}")
        if vm.locked_by is not None and vm.locked_by != os.getpid():
            raise DesktopError(
                f"desktop {name} is in use by DeskLoop process {vm.locked_by}, which refuses "
                "other drivers; watching it (v) and a VNC viewer (o) still work"
            )
        return vm

    async def run(self, name: str, doing: str, action: str, *args: str) -> None:
        """`deskloop vm ACTION NAME ARGS`, with `doing` shown until it ends.

        Raises:
            DesktopError: refused (see `check_free`) or the command failed.
        """
        self.check_free(name)
        operation = VmOperation(doing)
        self.operations[name] = operation
        self.errors.pop(name, None)

        def progress(line: str) -> None:
            operation.last = line

        try:
            await vm_command(action, name, *args, progress=progress)
        except DesktopError as exc:
            self.errors[name] = str(exc)
            raise
        finally:
            del self.operations[name]


def snapshot_key() -> str:
    """The key of a snapshot taken from the TUI (a saved start state)."""
    return time.strftime("tui-%Y%m%d-%H%M%S")


def viewer_command() -> str | None:
    """The external VNC viewer on PATH (TigerVNC's), if any."""
    for name in ("vncviewer", "xtigervncviewer"):
        found = shutil.which(name)
        if found:
            return found
    return None


def open_viewer(endpoint: VncEndpoint) -> subprocess.Popen[bytes]:
    """Start the external viewer on `endpoint` with a private password file.

    Raises:
        DesktopError: no viewer installed, or it could not start.
    """
    from app.desktops.local import vnc_password_file_bytes

    viewer = viewer_command()
    if viewer is None:
        raise DesktopError(
            "no VNC viewer (vncviewer) is installed; connect any viewer to "
            f"{endpoint.host}:{endpoint.port} with password {endpoint.password}"
        )
    fd, path = tempfile.mkstemp(prefix="deskloop-vncpass-")
    with os.fdopen(fd, "wb") as file:
        file.write(vnc_password_file_bytes(endpoint.password))
    try:
        return subprocess.Popen(
            [viewer, "-passwd", path, f"{endpoint.host}::{endpoint.port}"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError as exc:
        raise DesktopError(f"cannot start {viewer}: {exc}") from exc


# -- a running episode ------------------------------------------------------------


@dataclass
class StepLine:
    idx: int
    description: str
    agent_seconds: float
    act_seconds: float
    settle_seconds: float
    error: str | None


@dataclass
class PhaseLine:
    index: int
    message: str
    trigger: str
    delivered_step: int | None = None


@dataclass
class EpisodeSession:
    """One episode started from the TUI and what has happened in it so far."""

    task: Task
    agent_spec: str
    user_mode: UserMode
    store: Store
    desktop: Desktop
    backend: str
    agent: Agent | None = None
    """The agent built from `agent_spec` (built at run time when None)."""
    control: EpisodeControl = field(default_factory=EpisodeControl)
    user: User = field(init=False)
    runner: EpisodeRunner | None = None
    status: str = "starting"
    steps: list[StepLine] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    phases: list[PhaseLine] = field(default_factory=list)
    waiting: WaitingEvent | None = None
    """What the runner waits for from the person (set by its event, before the
    person object itself is asked), or None."""
    result: EpisodeResult | None = None
    clock_start: float | None = None
    """Monotonic time the agent loop began (for the time budget)."""
    listeners: list[Callable[[RunnerEvent], None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        # Built now, not with the runner: the chat pane answers through a person user
        # from the moment the episode is shown.
        self.user = make_user(self.user_mode, self.task, cache_dir=llm_cache_dir(self.store))
        self.phases = [
            PhaseLine(i, p.message, describe_trigger(p.parsed_trigger))
            for i, p in enumerate(self.task.phases)
        ]

    @property
    def episode_id(self) -> int | None:
        """Known once the runner has recorded the episode's start."""
        return self.runner.episode_id if self.runner is not None else None

    @property
    def person(self) -> PersonUser | None:
        return self.user if isinstance(self.user, PersonUser) else None

    @property
    def ended(self) -> bool:
        return self.result is not None

    @property
    def active_instruction(self) -> str:
        for message in reversed(self.messages):
            if message.role == "user":
                return message.text
        return self.task.instruction

    @property
    def pending_phase(self) -> PhaseLine | None:
        return next((p for p in self.phases if p.delivered_step is None), None)

    def budget_left(self, now: float | None = None) -> tuple[int, float]:
        """(steps, seconds) left of the task's budget."""
        steps = self.task.budget.steps - len(self.steps)
        seconds = self.task.budget.seconds
        if self.clock_start is not None:
            seconds -= (now if now is not None else time.monotonic()) - self.clock_start
        return steps, max(0.0, seconds)

    def _on_event(self, event: RunnerEvent) -> None:
        match event:
            case StatusEvent(text):
                self.status = text
            case StepEvent():
                if self.clock_start is None:
                    spent = event.agent_seconds + event.act_seconds + event.settle_seconds
                    self.clock_start = time.monotonic() - spent
                self.steps.append(
                    StepLine(
                        event.idx,
                        event.description,
                        event.agent_seconds,
                        event.act_seconds,
                        event.settle_seconds,
                        event.error,
                    )
                )
                self.waiting = None
            case MessageEvent(message):
                self.messages.append(message)
            case PhaseEvent(index, step):
                self.phases[index].delivered_step = step
            case WaitingEvent():
                self.waiting = event
                self.status = (
                    "waiting for your answer" if event.what == "answer" else "waiting for review"
                )
            case EndedEvent(result):
                self.result = result
                self.waiting = None
                self.status = f"ended: {result.status} ({result.end_reason})"
        for listener in list(self.listeners):
            listener(event)

    async def run(self) -> EpisodeResult:
        """Run the episode on `desktop`, which stays the caller's (the pool's)."""
        episode = launch(
            self.task,
            self.store,
            backend=self.backend,
            agent=self.agent or self.agent_spec,
            user=self.user,
            desktop=self.desktop,
            on_event=self._on_event,
            control=self.control,
        )
        self.runner = episode.runner
        return await episode.run()

    def send(self, text: str, kind: UserKind) -> str:
        """The chat pane's Enter: answers a waiting ASK, gives feedback on a waiting
        DONE, else injects `text` as `kind`. Returns what was done, for the UI."""
        person = self.person
        if self.ended:
            raise ValueError("the episode has ended")
        if person is not None and person.waiting == "answer":
            person.provide_answer(text)
            self.waiting = None
            return "answer sent"
        if person is not None and person.waiting == "review":
            person.give_feedback(text)
            self.waiting = None
            return "feedback sent: the episode continues"
        self.control.inject(text, kind)
        return f"{kind} queued for the agent's next step"

    def accept(self) -> None:
        person = self.person
        if person is None or person.waiting != "review":
            raise ValueError("nothing to accept: the agent has not said DONE")
        person.accept()
        self.waiting = None

    def toggle_pause(self) -> bool:
        """Pause or resume; returns whether the episode is now paused."""
        if self.control.paused:
            self.control.resume()
        else:
            self.control.pause()
        return self.control.paused


# -- a live frame feed ------------------------------------------------------------


async def frame_feed(
    endpoint: Callable[[], VncEndpoint | None],
    *,
    fps: float = 12.0,
    idle_poll: float = 0.5,
) -> AsyncIterator[tuple[float, Pixels]]:
    """Frames of a desktop from our own (shared) VNC connection, at most `fps` a second.

    Yields (monotonic time, RGB pixels) when the screen changed. `endpoint` is asked
    again whenever the connection drops, since a reset moves a local desktop to a new
    port. Updates are requested incrementally, so an unchanged screen costs nothing.
    """
    period = 1.0 / fps
    client: VNCClient | None = None
    where: VncEndpoint | None = None
    try:
        while True:
            current = endpoint()
            if client is None or client.closed or current != where:
                if client is not None:
                    await client.close()
                    client = None
                where = current
                if where is None:
                    await asyncio.sleep(idle_poll)
                    continue
                try:
                    client = await connect(where.host, where.port, where.password)
                    frame = await client.frame()
                except VNCError:
                    client = None
                    await asyncio.sleep(idle_poll)
                    continue
                yield time.monotonic(), frame.pixels
            started = time.monotonic()
            try:
                result = await client.settle(
                    timeout=max(period, idle_poll), quiet=0.0, change_wait=idle_poll, min_area=0
                )
            except VNCError:
                continue
            if result.changed:
                yield time.monotonic(), client.current_frame().pixels
            rest = period - (time.monotonic() - started)
            if rest > 0:
                await asyncio.sleep(rest)
    finally:
        if client is not None:
            await client.close()


def flow(text: str) -> str:
    """Task text with the YAML file's line breaks undone (blank lines kept), for
    panes that wrap text themselves."""
    paragraphs = re.split(r"\n\s*\n", text.strip())
    return "\n\n".join(" ".join(p.split()) for p in paragraphs)
