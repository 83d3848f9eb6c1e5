"""The Desktop contract: the one seam between the lab and a live graphical session.

Every backend (local Xvnc, libvirt VMs) implements `Desktop` and `Guest`. Callers
(the runner, scoring, setup) only use these shapes, so tasks, runner, store and
checks never change when a backend is added. All methods are async, cancellable
and bounded in time; a method that cannot finish in its timeout raises
`DesktopError` / `GuestError` naming the operation.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from app.core.actions import GuiAction
from app.core.commands import CommandResult
from app.core.frames import Frame, SettleResult
from app.core.integrity import ExecLog, LastWrite, WindowLog
from app.rfb.client import VncEndpoint


class Guest(Protocol):
    """The command and file channel into a desktop's session.

    Paths may start with '~/' (the session user's home). Commands are argv lists,
    never shell strings. Backends confine file access as documented for each.
    """

    @property
    def home(self) -> str:
        """The session user's home directory, as the guest sees it."""
        ...

    async def run(self, argv: list[str], timeout: float = 30.0) -> CommandResult:
        """Run a program in the session (DISPLAY set) and wait for it.

        A leading '~/' (or a bare '~') in any argv item expands to `home`, on every
        backend, so probes and setup steps can name '~/Desktop/x.png' portably.

        Raises:
            GuestError: the program could not be started or ran past `timeout`.
        """
        ...

    async def launch(self, argv: list[str]) -> None:
        """Start a program in the session and return without waiting for it.

        Raises:
            GuestError: the program could not be started (on the local backend, also
                one that exits with an error within moments of its start; its output
                is in the message).
        """
        ...

    async def read_file(self, path: str, max_bytes: int = 64 * 1024 * 1024) -> bytes:
        """The file's bytes.

        Raises:
            GuestError: missing, unreadable, outside the allowed area, or over max_bytes.
        """
        ...

    async def write_file(self, path: str, data: bytes) -> None:
        """Create or replace a file, making parent folders.

        Raises:
            GuestError: the path is outside the allowed area or cannot be written.
        """
        ...

    async def exists(self, path: str) -> bool:
        """Whether a file or folder exists at `path`."""
        ...


@dataclass
class DesktopInfo:
    """What the UI and CLI show about a desktop."""

    name: str
    backend: str
    state: str
    width: int
    height: int
    vnc: VncEndpoint | None = None
    details: dict[str, str] = field(default_factory=dict)
    time_scale: float = 1.0
    """How many times slower than a native desktop this one runs (a guest under
    software emulation). Waits written for a native desktop, such as a task's
    `wait_window` timeout or a reference's `wait_for` guard, are multiplied by it."""


class Desktop(Protocol):
    """One live graphical session an agent can see and drive."""

    @property
    def guest(self) -> Guest: ...

    def info(self) -> DesktopInfo: ...

    async def reset(self) -> None:
        """Bring the desktop to a clean start state (fresh session, no leftovers).

        Task setup steps are run afterwards by `app.episode.setup_steps.run_setup` over `guest`.

        Raises:
            DesktopError: the session could not be (re)started.
        """
        ...

    async def frame(self, timeout: float = 5.0) -> Frame:
        """The current screen, read after this call began (never a stale frame).

        Raises:
            DesktopError: no frame within `timeout`.
        """
        ...

    async def act(self, action: GuiAction) -> None:
        """Deliver one GUI action (Wait sleeps). Returns once the input was sent.

        Raises:
            DesktopError: the input could not be delivered.
        """
        ...

    async def settle(
        self,
        timeout: float = 3.0,
        quiet: float = 0.1,
        change_wait: float = 0.3,
        *,
        adaptive: bool = False,
    ) -> SettleResult:
        """Wait for the screen to change (up to `change_wait`) and then stay quiet
        for `quiet` seconds, never longer than `timeout` in all. Tiny changes
        (blinking text cursors) do not count. `adaptive`: `quiet` is the most it
        waits, sized from what the screen did after earlier actions of the last
        action's kind (`app.rfb.pace`)."""
        ...

    async def until_dead(self) -> str:
        """Return what died (naming the desktop) once the running desktop has died:
        its process exited, its domain stopped, its VNC server went away. Never
        returns while it lives, and a dropped connection that reopens is not a death.
        Cancel it to stop watching; `app.desktops.liveness.while_alive` races it
        against other work."""
        ...

    async def close(self) -> None:
        """Stop the session and remove everything it made. Safe to call twice."""
        ...


@runtime_checkable
class SavesStartStates(Protocol):
    """A desktop that can save a task's start state and restore it later (libvirt:
    memory snapshots), instead of replaying the setup every episode."""

    async def reset_to(self, setup_key: str, setup: Callable[[], Awaitable[None]]) -> bool:
        """Restore the start state saved under `setup_key`, or, the first time, reset,
        await `setup()`, settle and save it. True when it was restored."""
        ...


@runtime_checkable
class SavesStates(Protocol):
    """A desktop that can save its running state under a key and go back to it later
    (libvirt: the domain's memory and disk; `deskloop vm snapshot`, the TUI's snapshots).
    A desktop without it has no states to go back to: its reset starts a fresh session
    (the local backend), which is the state every episode starts from."""

    async def save_state(self, key: str) -> object:
        """Save the running desktop as state `key` (replacing one with that key); it
        keeps running.

        Returns:
            What the backend keeps of the state (libvirt: its `StartState`).

        Raises:
            DesktopError: the desktop is not running, or saving failed.
        """
        ...

    async def restore_state(self, key: str) -> None:
        """Bring the desktop back to state `key`, running.

        Raises:
            DesktopError: it has no state `key`, or restoring failed.
        """
        ...


@runtime_checkable
class WatchesWindows(Protocol):
    """A desktop that sees every window as it opens (the local backend:
    app/desktops/local/windows.py), so a console opened for a moment is not missed."""

    def window_log(self) -> WindowLog:
        """Every window opened in the running session so far, with its title."""
        ...


@runtime_checkable
class MarksProcesses(Protocol):
    """A desktop whose every process carries a marker in its environment (the local
    backend: app/desktops/local/reaper.py), so the processes can be found, measured and
    killed by it."""

    @property
    def marker(self) -> str | None:
        """The running session's marker; None when it is not running."""
        ...


class PageScript(Protocol):
    """A web page DeskLoop scripts: what scoring and setup need of the page a guest
    shows (app/desktops/web/cdp.py's `WebPage` is one)."""

    async def evaluate(self, expression: str, timeout: float = 10.0) -> Any:
        """The JSON value of a JavaScript expression in the page (promises awaited).

        Raises:
            GuestError: the expression threw, its value is not JSON, or the page is gone.
        """
        ...


@runtime_checkable
class HostsWebPages(Protocol):
    """A guest channel that can show a web page in a kiosk browser and reach the
    page's contract over a private DevTools channel (app/desktops/web/kiosk.py). The local
    backend's guest does, and a VM's (app/desktops/remote/ssh_web.py: the pipe relayed over
    SSH); a guest without it cannot run `app: web` tasks."""

    async def open_page(self, url: str, timeout: float = 30.0) -> PageScript:
        """Start a fresh browser (closing one this guest opened before) on `url`,
        wait until the page defines the page contract, and return it.

        Raises:
            GuestError: the browser did not start, or the page has no contract in time.
        """
        ...

    @property
    def web_page(self) -> PageScript | None:
        """The page `open_page` opened, or None when none was. A VM's guest always
        returns its page: one opened before a start state was saved is still there
        after a restore, and the page's first call finds it or says there is none."""
        ...


@runtime_checkable
class WatchesPrograms(Protocol):
    """A desktop that can list every program started in it so far, short-lived ones
    too (the local backend: app/desktops/local/exec_trace.py), for the integrity flags."""

    def exec_log(self) -> ExecLog:
        """The execs seen, or `covered=False` with why none could be."""
        ...


@runtime_checkable
class ReadsGuestWatch(Protocol):
    """A desktop whose program and write watches are logs in the guest, read once the
    agent has ended (libvirt VMs: app/desktops/libvirt/watch.py)."""

    async def read_watch(self, app: str) -> None:
        """Read them now, for a task of `app` (its own programs are told apart)."""
        ...


@runtime_checkable
class WatchesWrites(Protocol):
    """A desktop that can say which program last wrote a file (the local backend:
    app/desktops/local/write_watch.py with the exec trace), for the integrity flags."""

    @property
    def writes_note(self) -> str:
        """How writes are watched, or why they are not."""
        ...

    def last_write(self, path: str) -> LastWrite | None:
        """The last write of guest path `path` seen this session; None if none was."""
        ...
