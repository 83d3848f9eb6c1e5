"""The desktops the TUI shows: this session's pool (with their lifecycle operations),
the libvirt desktops other runs made (listed, and driven through `deskloop vm`), and the
external VNC viewer."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from app.core.errors import DesktopError
from app.desktops.factory import make_desktop
from app.desktops.inventory import BackendListing, VmListing, VmStats, vm_command, vm_stats

if TYPE_CHECKING:
    # Annotations only, and `app.episode.launch` where an episode's desktop is chosen:
    # the TUI makes a pool at start, and the episode runner and the desktop base (numpy,
    # the VNC client) behind these were a sixth of its first screen.
    from app.desktops.base import Desktop, DesktopInfo
    from app.rfb.client import VncEndpoint
    from app.tasks.model import Task


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
    progress: str = ""
    """The backend's latest word on a long operation (a VM's cold boot), shown in the
    Desktops screen's detail instead of written to the terminal under the TUI."""

    def info(self) -> DesktopInfo:
        return self.desktop.info()


class _Progress:
    """A desktop's progress, made before its entry exists and bound to it after."""

    def __init__(self) -> None:
        self.entry: DesktopEntry | None = None

    def __call__(self, text: str) -> None:
        if self.entry is not None:
            self.entry.progress = text


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
        heard = _Progress()
        return self._add(make_desktop(self.backend, progress=heard), heard)

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
        from app.episode.launch import desktop_spec, fits, make_spec_desktop

        spec = desktop_spec(self.backend, task)
        heard = _Progress()
        desktop = make_spec_desktop(spec, heard)
        name = desktop.info().name
        entry = self.entries.get(name)
        if entry is None:
            return self._add(desktop, heard), True
        if not fits(entry.desktop, spec):
            raise DesktopError(f"desktop {name} is not of the {spec.image} image {task.id} needs")
        if entry.busy or entry.episode is not None:
            doing = entry.busy or f"running episode {entry.episode}"
            raise DesktopError(f"desktop {name} is busy {doing}")
        return entry, entry.info().state != "running"

    def _add(self, desktop: Desktop, heard: _Progress | None = None) -> DesktopEntry:
        entry = DesktopEntry(desktop)
        if heard is not None:  # the desktop's progress is this entry's from now on
            heard.entry = entry
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

    def remove(self, name: str) -> None:
        """Take a desktop that is not running off the list (it holds nothing any more:
        a closed local desktop's processes and files are gone).

        Raises:
            DesktopError: it is running, busy or runs an episode: stop it first.
        """
        entry = self.get(name)
        state = entry.info().state
        if entry.busy or entry.episode is not None or state in ("running", "starting"):
            doing = entry.busy or (
                f"running episode {entry.episode}" if entry.episode is not None else state
            )
            raise DesktopError(f"desktop {name} is {doing}: stop it (x) before removing it")
        del self.entries[name]

    def cannot_snapshot(self, name: str) -> str | None:
        """Why desktop `name` has no snapshots (a documented limitation of the local
        backend, not an error), or None when it has them."""
        from app.desktops.base import SavesStates  # loaded with any desktop already

        if isinstance(self.get(name).desktop, SavesStates):
            return None
        return (
            f"The {self.backend} backend has no snapshots: z (reset) starts a fresh "
            "session, the state every episode starts from. Snapshots are a libvirt feature."
        )

    async def snapshot(self, name: str) -> str:
        """Save the running desktop as a start state; returns its key.

        Raises:
            DesktopError: the backend has no snapshots (local), or saving failed.
        """
        from app.desktops.base import SavesStates

        entry = self.get(name)
        desktop = entry.desktop
        if not isinstance(desktop, SavesStates):
            raise DesktopError(
                f"the {self.backend} backend cannot take snapshots: its reset always starts "
                "a fresh session (snapshots are a libvirt feature)"
            )
        key = snapshot_key()
        await self._op(name, "saving a snapshot", lambda _d: desktop.save_state(key))
        entry.snapshots.append(key)
        return key

    async def restore(self, name: str) -> str:
        """Back to the last snapshot taken here; returns its key.

        Raises:
            DesktopError: no snapshot was taken of this desktop in this session.
        """
        from app.desktops.base import SavesStates

        entry = self.get(name)
        desktop = entry.desktop
        if not isinstance(desktop, SavesStates) or not entry.snapshots:
            raise DesktopError(f"no snapshot of {name} was taken in this session (p takes one)")
        key = entry.snapshots[-1]
        await self._op(name, f"restoring {key}", lambda _d: desktop.restore_state(key))
        return key

    async def close_all(self) -> None:
        for entry in self.entries.values():
            with contextlib.suppress(Exception):
                await entry.desktop.close()


@dataclass(frozen=True)
class VmRequest:
    """A VM to create from the TUI: `deskloop vm create NAME --image IMAGE [--memory
    MIB] [--vcpus N]`, then `deskloop vm start NAME` when `start`."""

    name: str
    image: str
    memory_mib: int | None = None
    """None: the image's default."""
    vcpus: int | None = None
    """None: the configuration's (2, or $DESKLOOP_VM_VCPUS)."""
    start: bool = True

    def create_args(self) -> tuple[str, ...]:
        args = ["--image", self.image]
        if self.memory_mib:
            args += ["--memory", str(self.memory_mib)]
        if self.vcpus:
            args += ["--vcpus", str(self.vcpus)]
        return tuple(args)


def built_images() -> list[tuple[str, int]]:
    """The images a VM can be created from: (name, default MiB of memory), built ones
    only (`deskloop image list`). Blocking (reads the cache's manifests)."""
    from app.vmimages.cache import list_images

    return [(image.name, image.memory_mib) for image in list_images()]


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

    def __init__(
        self,
        source: Callable[[], BackendListing],
        stats: Callable[[], dict[str, VmStats]] = vm_stats,
    ) -> None:
        self.source = source
        self.stats = stats
        """Running VMs' CPU time and memory (blocking; `app.ui.services.usage`)."""
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

    def check_new(self, name: str) -> None:
        """Refuse a name a new VM cannot take.

        Raises:
            DesktopError: not a valid desktop name, or a desktop of that name exists
                (listed, or being created here).
        """
        from app.desktops.libvirt.config import validate_name

        validate_name(name)
        if self.get(name) is not None or name in self.operations:
            raise DesktopError(f"a libvirt desktop named {name} exists already: pick another name")

    async def create(self, request: VmRequest) -> None:
        """Define a VM (`deskloop vm create`), then boot it (`deskloop vm start`) when
        asked, each in a child process like every other action on VMs, so this process
        never holds its lock. The row shows it (`pending`) before the listing has it.

        Raises:
            DesktopError: refused (see `check_new`) or a command failed.
        """
        name = request.name
        self.check_new(name)
        operation = VmOperation("creating")
        self.operations[name] = operation
        self.errors.pop(name, None)

        def progress(line: str) -> None:
            operation.last = line

        try:
            await vm_command("create", name, *request.create_args(), progress=progress)
            if request.start:
                operation.doing, operation.last = "starting", "cold boot"
                await vm_command("start", name, progress=progress)
        except DesktopError as exc:
            self.errors[name] = str(exc)
            raise
        finally:
            del self.operations[name]

    def pending(self) -> list[str]:
        """Names of the VMs being created here that the listing does not show yet."""
        return [n for n in self.operations if self.get(n) is None]

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
    from app.rfb.wire import vnc_password_file_bytes

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
