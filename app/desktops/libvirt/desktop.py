"""`LibvirtDesktop`: a `Desktop` that is a libvirt domain, from its definition to its
removal, and the start states it is reset to.

`reset()` brings the desktop to its *boot* state; `reset_to(key, setup)` to a task's
start state. The first time, a state is made by booting (or resetting to the boot
state), running `setup`, letting the screen settle, and saving the domain with its
memory (`virDomainSave`); its disk overlay is frozen beside the memory file. Every
later reset discards the working overlay, makes a fresh one on top of the frozen disk
and restores the memory file: nothing written in one episode (disk or memory)
reaches the next.

The desktop decides what happens when and keeps its state; `Machine` (the domain,
its host, record and lock) and `GuestLink` (VNC and SSH) do the work.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Awaitable, Callable

import libvirt

from app.core.errors import DesktopError
from app.core.settings import read_settings
from app.desktops.base import DesktopInfo
from app.desktops.libvirt.config import DEFAULT_IMAGE, LibvirtConfig, validate_name
from app.desktops.libvirt.link import QEMU_TYPE_DELAY, GuestLink
from app.desktops.libvirt.machine import Machine
from app.desktops.libvirt.states import BOOT_STATE, StartState, state_key, state_keys
from app.desktops.libvirt.watch import GuestWatching
from app.desktops.lifecycle import DesktopLifecycle
from app.desktops.remote.ssh_guest import SSHGuest, lab_key
from app.desktops.vnc_screen import VncScreen
from app.rfb.client import VncEndpoint, VNCSession

# Domain states in which the desktop is gone ("undefined": someone removed it).
_DEAD_STATES = ("shut off", "crashed", "undefined")


class LibvirtDesktop(DesktopLifecycle, GuestWatching, VncScreen):
    """A `Desktop` that is a libvirt domain (`deskloop-NAME`).

    `ephemeral=True` (tests, one-off runs): `close()` removes everything. Otherwise
    `close()` only stops the domain and its start states stay for the next run;
    `remove()` deletes it all. While a process uses a desktop it holds a lock on its
    folder, so two processes never drive one domain. The integrity watch reads the
    guest's process accounting and write log after an episode (`GuestWatching`).
    """

    backend_label = "libvirt desktop"

    def __init__(
        self,
        name: str | None = None,
        image: str | None = None,
        width: int = 1280,
        height: int = 800,
        config: LibvirtConfig | None = None,
        ephemeral: bool = False,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__()
        self.config = config or LibvirtConfig()
        image_name = image or read_settings().image or DEFAULT_IMAGE
        self.name = validate_name(name or f"{image_name}-{secrets.token_hex(3)}")
        if width < 320 or height < 200:
            raise DesktopError(f"libvirt desktop size {width}x{height} is too small")
        self.ephemeral = ephemeral
        self.progress = progress or (lambda _text: None)
        self._vm = Machine(
            self.name,
            image_name,
            width,
            height,
            self.config,
            lambda text: self.progress(text),
            self._on_domain_state,
        )
        self.dir = self._vm.dir
        self.domain_name = self._vm.domain_name
        self._link = GuestLink(
            self._vm.where, self.dir / "known_hosts", lambda: (self.width, self.height)
        )
        self._clock_task: asyncio.Task[None] | None = None
        self.timings: dict[str, float] = {}

    # The desktop's record, once read, has the last word on these.

    @property
    def image_name(self) -> str:
        return self._vm.image_name

    @property
    def width(self) -> int:
        return self._vm.width

    @property
    def height(self) -> int:
        return self._vm.height

    @property
    def virt_type(self) -> str:
        return self._vm.virt_type

    @property
    def virt_reason(self) -> str:
        return self._vm.virt_reason

    # ------------------------------------------------------------ contract

    @property
    def guest(self) -> SSHGuest:
        if self._link.guest is None or self._state != "running":
            raise DesktopError(f"libvirt desktop {self.name} is {self._state}; call reset() first")
        return self._link.guest

    def info(self) -> DesktopInfo:
        vnc = None
        details = {
            "domain": self.domain_name,
            "image": self.image_name,
            "virt": f"{self.virt_type}: {self.virt_reason}",
            "uri": self.config.uri,
        }
        host, record = self._vm.host, self._vm.record
        if host is not None and not host.local:
            details["host"] = host.label
        if self._state == "running" and record is not None and self._link.vnc_port:
            # QEMU's server: a person's input through the proxy is typed as the
            # desktop's own (app.desktops.libvirt.link).
            vnc = VncEndpoint(
                "127.0.0.1",
                self._link.vnc_port,
                record.vnc_password,
                explicit_shift=True,
                type_delay=QEMU_TYPE_DELAY,
            )
        if self._link.guest is not None:
            details["ip"] = self._link.guest.host
        return DesktopInfo(
            name=self.name,
            backend="libvirt",
            state=self._state,
            width=self.width,
            height=self.height,
            vnc=vnc,
            details=details,
            time_scale=self.config.scale_for(self.virt_type),
        )

    async def _reset(self) -> None:
        """Restore the boot state (made by a cold boot the first time)."""
        await self._reset_to(BOOT_STATE, None)

    async def reset_to(self, setup_key: str, setup: Callable[[], Awaitable[None]]) -> bool:
        """Bring the desktop to the start state keyed by `setup_key` (a hash of a
        task's setup steps, say). The first time, reset to the boot state, await
        `setup()`, settle and save; later, restore. True when it was restored."""
        async with self._lock:
            return await self._reset_to(setup_key, setup)

    async def _close(self) -> None:
        """Stop the domain (ephemeral desktops: remove everything)."""
        if self.ephemeral:
            await self._remove()
        else:
            await self._stop()
        self._state = "closed"
        await asyncio.to_thread(self._vm.disconnect)

    # ------------------------------------------------------------ management

    async def create(self) -> None:
        """Define the domain and its folder (no boot). Idempotent."""
        async with self._lock:
            await self._vm.prepare()

    async def stop(self) -> None:
        """Power off (discarding memory); start states stay."""
        async with self._lock:
            await self._vm.prepare(define=False)
            await self._stop()

    async def remove(self) -> None:
        """Delete the domain, its overlay, start states and folder."""
        async with self._lock:
            await self._remove()
            await asyncio.to_thread(self._vm.disconnect)

    async def save_state(self, key: str) -> StartState:
        """Save the running desktop as start state `key` (replacing one with that
        key), then restore it so the desktop keeps running."""
        async with self._lock:
            if self._state != "running":
                raise DesktopError(f"libvirt desktop {self.name} is {self._state}; nothing to save")
            state = await self._save(key, 0.0)
            await self._restore(state)
            return state

    async def save_running(self, key: str) -> StartState:
        """Save the desktop as it runs now, whichever process started it, as start
        state `key`; it keeps running (`deskloop vm snapshot`)."""
        await self.attach_running()
        return await self.save_state(key)

    async def restore_state(self, key: str) -> None:
        async with self._lock:
            await self._vm.prepare()
            state = await asyncio.to_thread(self._vm.find_state, key)
            if state is None:
                raise DesktopError(
                    f"libvirt desktop {self.name} has no start state {key!r} "
                    f"(have: {', '.join(self.state_keys()) or 'none'})"
                )
            await self._restore(state)

    async def attach_running(self) -> None:
        """Take over a desktop that is already running (another process started it)."""
        async with self._lock:
            await self._vm.prepare(define=False)
            if self._vm.record is None or self._vm.dom is None:
                raise DesktopError(f"no libvirt desktop {self.name} (see `deskloop vm list`)")
            if self._vm.watch.state != "running":
                raise DesktopError(
                    f"libvirt desktop {self.name} is {self._vm.watch.state}; "
                    f"`deskloop vm start {self.name}` first"
                )
            ip = await self._vm.wait_ip(30.0)
            await self._attach(ip, 60.0)
            self._state = "running"

    def state_keys(self) -> list[str]:
        return state_keys(self.dir)

    # ------------------------------------------------------------ internals

    def _vnc_session(self) -> VNCSession:
        if self._link.vnc is None or self._state != "running":
            raise DesktopError(f"libvirt desktop {self.name} is {self._state}; call reset() first")
        return self._link.vnc

    async def _backend_death(self) -> str:
        """The domain stopped or crashed (libvirt's lifecycle events say so at once)."""
        if not self._vm.watch.watching:  # no events: the VNC connection alone tells
            return await super()._backend_death()
        while True:
            # Waits are bounded; the watch reports any change well before an hour.
            with contextlib.suppress(DesktopError):
                await self._vm.watch.wait(_DEAD_STATES, 3600.0, "running")
                return f"its domain {self.domain_name} is {self._vm.watch.state}"

    def _on_domain_state(self, state: str) -> None:
        if state in ("shut off", "crashed") and self._state == "running":
            self._state = "stopped"

    async def _reset_to(self, key: str, setup: Callable[[], Awaitable[None]] | None) -> bool:
        await self._vm.prepare()
        assert self._vm.record is not None
        full_key = (
            BOOT_STATE
            if setup is None
            else state_key(self._vm.image(), self.width, self.height, key)
        )
        state = await asyncio.to_thread(self._vm.find_state, full_key)
        if state is not None:
            self.progress(f"restoring start state {full_key}")
            await self._restore(state)
            return True
        t0 = time.monotonic()
        if setup is None:
            await self._cold_boot()
        else:
            boot = await asyncio.to_thread(self._vm.find_state, BOOT_STATE)
            if boot is None:
                await self._cold_boot()
                boot = await self._save(BOOT_STATE, time.monotonic() - t0)
            await self._restore(boot)
            self.progress("running setup to make the start state")
            await setup()
            await self._link.settle_screen()
        made = time.monotonic() - t0
        self.progress(f"saving start state {full_key} (made in {made:.0f} s)")
        state = await self._save(full_key, made)
        await self._restore(state)
        return False

    async def _cold_boot(self) -> None:
        """Boot on a fresh overlay of the image and wait for a usable desktop."""
        assert self._vm.conn is not None and self._vm.record is not None
        await self._stop()
        t0 = time.monotonic()
        self.progress(f"cold boot of {self.domain_name} ({self.virt_type}: {self.virt_reason})")
        await self._vm.fresh_boot()
        self._state = "starting"
        try:
            await self._vm.start()
        except DesktopError:
            self._state = "failed"
            raise
        timeout = self.config.boot_timeout
        try:
            await self._vm.watch.wait(("running",), 30.0, "starting")
            ip = await self._vm.wait_ip(timeout)
            await self._attach(ip, timeout - (time.monotonic() - t0))
            await self._wait_session(timeout - (time.monotonic() - t0))
        except BaseException:
            self._state = "failed"
            raise
        self.timings["cold_boot"] = time.monotonic() - t0

    async def _attach(self, ip: str, timeout: float, wait_ssh: bool = True) -> None:
        """Connect VNC and SSH (a new connection: a restore kills old TCP state).
        With `wait_ssh=False` SSH comes up in the background (guest calls wait)."""
        key, _public = await asyncio.to_thread(lab_key, self.config.cache / "ssh" / "id_ed25519")
        host_port = await asyncio.to_thread(self._vm.vnc_port)
        assert self._vm.record is not None
        password = self._vm.record.vnc_password
        self.timings["attach"] = await self._link.attach(
            self._vm.host_now(), ip, key, host_port, password, timeout, wait_ssh
        )

    async def _wait_session(self, timeout: float) -> None:
        """Wait until X runs at the right size with openbox managing it, then until
        the VNC screen has that size and has gone quiet."""
        deadline = time.monotonic() + max(timeout, 10.0)
        await self._link.wait_x_session(
            self.width, self.height, deadline, timeout, self._vm.console()
        )
        self._state = "running"
        await self._link.wait_screen(self.width, self.height, deadline)

    async def _save(self, key: str, made_seconds: float) -> StartState:
        """Save the domain's memory and freeze its disk as start state `key`.
        The domain is stopped afterwards."""
        assert self._vm.dom is not None and self._link.guest is not None
        ip = self._link.guest.host
        await self._detach()
        state = await self._vm.clear_state(key, ip, made_seconds)
        t0 = time.monotonic()
        try:
            await self._vm.save(state)
        except DesktopError:
            self._state = "failed"
            raise
        self._state = "stopped"
        self.timings["save"] = time.monotonic() - t0
        await self._vm.freeze_disk(state)
        return state

    async def _restore(self, state: StartState) -> None:
        """Fresh overlay on the state's frozen disk, memory from its file, reconnect."""
        await self._stop()
        t0 = time.monotonic()
        await asyncio.to_thread(self._vm.new_overlay, state.disk)
        self._state = "starting"
        try:
            await self._vm.restore(state)
        except DesktopError:
            self._state = "failed"
            raise
        await self._vm.watch.wait(("running",), 30.0, "restoring")
        self.timings["restore_domain"] = time.monotonic() - t0
        try:
            # The screen is what makes a desktop usable; SSH and the clock follow in
            # the background (guest calls wait for SSH).
            self._clock_task = asyncio.get_running_loop().create_task(self._sync_clock())
            await self._attach(state.ip, self.config.restore_timeout, wait_ssh=False)
            self._state = "running"
            assert self._link.vnc is not None
            await self._link.vnc.frame(self.config.restore_timeout)
        except BaseException:
            self._state = "failed"
            raise
        self.timings["restore"] = time.monotonic() - t0

    async def _sync_clock(self) -> None:
        """The clock stood still while the state was on disk: set it (best effort,
        via the guest agent) so file times in the guest make sense."""
        t0 = time.monotonic()
        with contextlib.suppress(libvirt.libvirtError):
            await asyncio.to_thread(self._vm.sync_time)
        self.timings["restore_clock"] = time.monotonic() - t0

    async def _detach(self) -> None:
        if self._clock_task is not None:
            # A libvirt call in a worker thread: let it finish rather than race a stop.
            with contextlib.suppress(Exception):
                async with asyncio.timeout(10.0):
                    await asyncio.shield(self._clock_task)
            self._clock_task = None
        await self._link.detach()

    async def _stop(self) -> None:
        """Destroy the running domain (if any); never removes files."""
        await self._detach()
        await self._vm.destroy()
        if self._state not in ("closed",):
            self._state = "stopped"

    async def _remove(self) -> None:
        await self._vm.prepare(define=False)
        await self._stop()
        self._link.close_guest()
        await self._vm.remove()
