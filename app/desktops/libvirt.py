"""The libvirt backend: each desktop is a libvirt domain booted from a DeskLoop image.

A desktop `NAME` is the libvirt domain `deskloop-NAME` (`virsh list` shows it) and
a folder `<cache>/vms/NAME/` holding everything else it owns: `vm.json` (its
settings), `disk.qcow2` (a copy-on-write overlay on the shared, read-only image),
`states/<key>/` (saved start states), `known_hosts` (the guest's pinned SSH host
key) and `console.log` (the serial console). `remove()` deletes both; nothing
else is made per desktop. All desktops share one isolated libvirt network.

Remote hosts. For a `qemu+ssh://` URI the files QEMU uses (the overlay, the console
log, each state's memory and frozen disk, and the image) live in the same layout in
that host's DeskLoop folder, made over SSH; `vm.json`, `known_hosts` and the states'
`meta.json` stay here. VNC and guest SSH are tunnelled (`vm_host.RemoteHost`).

Start states. `reset()` brings the desktop to its *boot* state; `reset_to(key,
setup)` to a task's start state. The first time, a state is made by booting (or
resetting to the boot state), running `setup`, letting the screen settle, and
saving the domain with its memory (`virDomainSave`); its disk overlay is frozen
beside the memory file. Every later reset discards the working overlay, makes a
fresh one on top of the frozen disk and restores the memory file: nothing written
in one episode (disk or memory) reaches the next.

Frames and input go over QEMU's VNC server (127.0.0.1, password) through the same
RFB client as the local backend; the guest channel is SSH (`SSHGuest`).
Blocking libvirt calls run in worker threads; lifecycle changes arrive as libvirt
events on a thread running libvirt's default event loop, never by polling.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import os
import secrets
import shutil
import string
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar
from xml.sax.saxutils import escape

import libvirt

from app.core.actions import GuiAction, Wait
from app.core.errors import DesktopError, GuestError, VNCError
from app.core.frames import Frame, SettleResult
from app.desktops.base import DesktopInfo
from app.desktops.ssh_guest import SSHGuest, lab_key
from app.desktops.vm_host import ImageFiles, VmHost, is_local_uri, open_host
from app.rfb.client import VncEndpoint, VNCSession
from app.vmimages.cache import Image, cache_dir, find_image, require_image
from app.vmimages.recipes import RECIPES_DIR

DOMAIN_PREFIX = "deskloop-"
NETWORK_NAME = "deskloop-net"
NETWORK_BRIDGE = "deskloop0"
DEFAULT_URI = "qemu:///system"
DEFAULT_IMAGE = "gimp"
BOOT_STATE = "boot"
_PASSWORD_ALPHABET = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
# The /24 of the isolated network; override with $DESKLOOP_SUBNET (e.g. 10.99.1).
DEFAULT_SUBNET = "10.213.77"

_T = TypeVar("_T")


# ---------------------------------------------------------------- settings


def detect_virt_type(exists: Callable[[str], bool] = os.path.exists) -> tuple[str, str]:
    """('kvm' | 'qemu', why): the libvirt domain type a host can run; `exists`
    looks at that host's files (this machine's by default).

    Ordinary KVM (kvm_intel / kvm_amd loaded) boots stock guest kernels. A PVM
    `/dev/kvm` (the kvm_pvm module) runs only specially built guest kernels, so
    such hosts use software emulation (TCG), as do hosts without /dev/kvm.
    $DESKLOOP_VIRT_TYPE overrides the choice.
    """
    forced = os.environ.get("DESKLOOP_VIRT_TYPE", "").strip().lower()
    if forced:
        if forced not in ("kvm", "qemu"):
            raise DesktopError(f"DESKLOOP_VIRT_TYPE={forced!r}: expected 'kvm' or 'qemu'")
        return forced, "set by DESKLOOP_VIRT_TYPE"
    if exists("/sys/module/kvm_pvm"):
        return "qemu", "software emulation (TCG): /dev/kvm is PVM, which cannot boot a stock kernel"
    if not exists("/dev/kvm"):
        return "qemu", "software emulation (TCG): no /dev/kvm"
    for module in ("kvm_intel", "kvm_amd"):
        if exists(f"/sys/module/{module}"):
            return "kvm", f"hardware virtualization (KVM, {module})"
    return "qemu", "software emulation (TCG): neither kvm_intel nor kvm_amd is loaded"


# Seconds between typed characters on QEMU's VNC server: it passes key events to the
# guest 10 ms apart (a press, a release, and Shift around some characters).
QEMU_TYPE_DELAY = 0.05

# Tasks wait 90 s for GIMP's or Kdenlive's window, written for a native desktop where
# they open in 3-13 s; under TCG they take about 2 min (FIELD_NOTES), so waits are
# stretched this much there (270 s for those windows).
TCG_TIME_SCALE = 3.0


@dataclass
class LibvirtConfig:
    """Settings for libvirt desktops; every field has an environment override."""

    uri: str = field(default_factory=lambda: os.environ.get("DESKLOOP_LIBVIRT_URI", DEFAULT_URI))
    virt_type: str | None = None  # None: detect_virt_type()
    vcpus: int = field(default_factory=lambda: int(os.environ.get("DESKLOOP_VM_VCPUS", "2")))
    memory_mib: int | None = None  # None: the image's default
    subnet: str = field(default_factory=lambda: os.environ.get("DESKLOOP_SUBNET", DEFAULT_SUBNET))
    cache: Path = field(default_factory=cache_dir)
    recipes: Path = RECIPES_DIR
    boot_timeout: float = 420.0
    restore_timeout: float = 120.0
    time_scale: float | None = field(default_factory=lambda: _env_float("DESKLOOP_TIME_SCALE"))
    """Multiplier for waits written for a native desktop; None: TCG_TIME_SCALE under
    software emulation, 1 under KVM."""
    remote_cache: str | None = field(
        default_factory=lambda: os.environ.get("DESKLOOP_REMOTE_CACHE") or None
    )
    """On a remote libvirt host: the absolute folder for images and desktop files
    there; None: ~/.cache/deskloop of the SSH user."""

    def virt(self, exists: Callable[[str], bool] = os.path.exists) -> tuple[str, str]:
        if self.virt_type:
            return self.virt_type, "set in the configuration"
        return detect_virt_type(exists)

    @property
    def local(self) -> bool:
        return is_local_uri(self.uri)

    def open_host(self) -> VmHost:
        """The machine that runs this URI's domains (blocking; connects over SSH)."""
        return open_host(self.uri, self.cache, self.remote_cache)

    def scale_for(self, virt_type: str) -> float:
        if self.time_scale is not None:
            return self.time_scale
        return TCG_TIME_SCALE if virt_type == "qemu" else 1.0


def _env_float(name: str) -> float | None:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        raise DesktopError(f"${name}={raw!r}: expected a number such as 3") from None
    if value <= 0:
        raise DesktopError(f"${name}={raw!r}: must be positive")
    return value


def validate_name(name: str) -> str:
    if not name or len(name) > 40 or not all(c.isalnum() or c in "-_" for c in name):
        raise DesktopError(
            f"desktop name {name!r}: use 1-40 letters, digits, '-' or '_' "
            f"(the libvirt domain is {DOMAIN_PREFIX}NAME)"
        )
    return name


def _fill(template_path: Path, values: dict[str, str]) -> str:
    try:
        text = template_path.read_text()
    except OSError as exc:
        raise DesktopError(f"cannot read the template {template_path}: {exc}") from exc
    try:
        return string.Template(text).substitute(
            {k: escape(v, {"'": "&apos;", '"': "&quot;"}) for k, v in values.items()}
        )
    except (KeyError, ValueError) as exc:
        raise DesktopError(f"{template_path}: bad or missing placeholder {exc}") from exc


# ---------------------------------------------------------------- libvirt plumbing

_event_lock = threading.Lock()
_event_thread: threading.Thread | None = None


def _ensure_event_loop() -> None:
    """Register libvirt's default event loop once and run it on a daemon thread.

    It must be registered before the first connection is opened; lifecycle
    callbacks and connection keepalives are dispatched from it.
    """
    global _event_thread
    with _event_lock:
        if _event_thread is not None:
            return
        libvirt.virEventRegisterDefaultImpl()

        def run() -> None:
            while True:
                libvirt.virEventRunDefaultImpl()

        _event_thread = threading.Thread(target=run, name="libvirt-events", daemon=True)
        _event_thread.start()


def _silence_libvirt_stderr() -> None:
    # libvirt prints every error to stderr as well as raising it; we report them.
    libvirt.registerErrorHandler(lambda _ctx, _err: None, None)


def open_connection(uri: str) -> libvirt.virConnect:
    """A libvirt connection with the event loop running (blocking).

    Raises:
        DesktopError: libvirtd is not reachable at `uri`.
    """
    _ensure_event_loop()
    _silence_libvirt_stderr()
    try:
        conn = libvirt.open(uri)
    except libvirt.libvirtError as exc:
        hint = " (start it with scripts/services.sh)" if uri == DEFAULT_URI else ""
        raise DesktopError(f"cannot connect to libvirt at {uri}{hint}: {exc}") from exc
    with contextlib.suppress(libvirt.libvirtError):
        conn.setKeepAlive(5, 3)
    return conn


def ensure_network(conn: libvirt.virConnect, subnet: str, recipes: Path = RECIPES_DIR) -> None:
    """Define (once) and start the isolated network all desktops share (blocking)."""
    try:
        net = conn.networkLookupByName(NETWORK_NAME)
    except libvirt.libvirtError:
        xml = _fill(
            recipes / "network.xml",
            {"name": NETWORK_NAME, "bridge": NETWORK_BRIDGE, "prefix": subnet},
        )
        try:
            net = conn.networkDefineXML(xml)
        except libvirt.libvirtError as exc:
            # Another process may have defined it at the same moment.
            try:
                net = conn.networkLookupByName(NETWORK_NAME)
            except libvirt.libvirtError:
                raise DesktopError(f"cannot define the network {NETWORK_NAME}: {exc}") from exc
    if not net.isActive():
        try:
            net.create()
        except libvirt.libvirtError as exc:
            if not net.isActive():
                raise DesktopError(
                    f"cannot start the network {NETWORK_NAME} ({subnet}.0/24): {exc}; "
                    "if the subnet is taken, set DESKLOOP_SUBNET"
                ) from exc
    with contextlib.suppress(libvirt.libvirtError):
        net.setAutostart(True)


def _dhcp_hosts(net: libvirt.virNetwork) -> dict[str, str]:
    """MAC → IP of the network's fixed DHCP host entries."""
    root = ET.fromstring(net.XMLDesc(0))
    return {
        str(h.get("mac", "")).lower(): str(h.get("ip", "")) for h in root.findall("./ip/dhcp/host")
    }


_NETWORK_UPDATE_FLAGS = (
    libvirt.VIR_NETWORK_UPDATE_AFFECT_LIVE | libvirt.VIR_NETWORK_UPDATE_AFFECT_CONFIG
)


def _leased_addresses(net: libvirt.virNetwork) -> dict[str, str]:
    """IP → MAC of the network's current DHCP leases."""
    try:
        leases = net.DHCPLeases()
    except libvirt.libvirtError:
        return {}
    return {str(lease["ipaddr"]): str(lease["mac"]).lower() for lease in leases}


def _reserve_address(conn: libvirt.virConnect, mac: str, name: str, subnet: str) -> str:
    """A fixed address for `mac` (a DHCP host entry on the network; blocking).

    Fixed, because a clone's DHCP client id changes with its machine-id at every cold
    boot, and leases that never expire would otherwise pile up per MAC. An address
    still leased to another MAC is skipped: dnsmasq will not hand a reserved address
    to a new MAC while an old lease holds it (the guest then got a range address and
    never answered SSH on the reserved one).
    """
    net = conn.networkLookupByName(NETWORK_NAME)
    hosts = _dhcp_hosts(net)
    if mac in hosts:
        return hosts[mac]
    leased = {ip for ip, owner in _leased_addresses(net).items() if owner != mac}
    taken = set(hosts.values()) | leased
    start = int.from_bytes(hashlib.sha256(name.encode()).digest()[:2], "big") % 190
    for step in range(190):
        ip = f"{subnet}.{10 + (start + step) % 190}"
        if ip not in taken:
            break
    else:
        raise DesktopError(
            f"no free address left on {NETWORK_NAME}: {len(hosts)} desktops and "
            f"{len(leased)} leases hold all 190 (see `virsh net-dhcp-leases {NETWORK_NAME}`)"
        )
    try:
        net.update(
            libvirt.VIR_NETWORK_UPDATE_COMMAND_ADD_LAST,
            libvirt.VIR_NETWORK_SECTION_IP_DHCP_HOST,
            -1,
            f"<host mac='{mac}' ip='{ip}'/>",
            _NETWORK_UPDATE_FLAGS,
        )
    except libvirt.libvirtError as exc:
        raise DesktopError(f"cannot reserve {ip} for {mac} on {NETWORK_NAME}: {exc}") from exc
    return ip


def _release_address(conn: libvirt.virConnect, mac: str, host: VmHost) -> None:
    """Drop `mac`'s host entry and its lease.

    Leases never expire (network.xml says why), so without a release the address of
    a removed desktop stays taken. dnsmasq-utils' `dhcp_release` tells dnsmasq the
    client let go; it runs on the network's host (over SSH for a remote one).
    """
    with contextlib.suppress(libvirt.libvirtError):
        net = conn.networkLookupByName(NETWORK_NAME)
        ip = _dhcp_hosts(net).get(mac)
        if ip:
            net.update(
                libvirt.VIR_NETWORK_UPDATE_COMMAND_DELETE,
                libvirt.VIR_NETWORK_SECTION_IP_DHCP_HOST,
                -1,
                f"<host mac='{mac}' ip='{ip}'/>",
                _NETWORK_UPDATE_FLAGS,
            )
        bridge = net.bridgeName()
        # dnsmasq handles the release after the host-entry change above has made it
        # reload, and may miss one sent meanwhile: send again until the lease is gone.
        deadline = time.monotonic() + 10.0
        while True:
            mine = [ip for ip, owner in _leased_addresses(net).items() if owner == mac]
            if not mine or time.monotonic() > deadline:
                return
            for leased_ip in mine:
                if not host.release_lease(bridge, leased_ip, mac):
                    return  # no dhcp_release there: the lease stays (setup.sh installs it)
            time.sleep(0.5)


def _state_name(code: int) -> str:
    names = {
        libvirt.VIR_DOMAIN_RUNNING: "running",
        libvirt.VIR_DOMAIN_PAUSED: "paused",
        libvirt.VIR_DOMAIN_SHUTDOWN: "shutting down",
        libvirt.VIR_DOMAIN_SHUTOFF: "shut off",
        libvirt.VIR_DOMAIN_CRASHED: "crashed",
        libvirt.VIR_DOMAIN_PMSUSPENDED: "suspended",
    }
    return names.get(code, "unknown")


# ---------------------------------------------------------------- the desktop


@dataclass
class VmRecord:
    """What `vm.json` keeps about a desktop."""

    name: str
    image: str
    image_dir: str
    recipe_hash: str
    mac: str
    vnc_password: str
    width: int
    height: int
    memory_mib: int
    vcpus: int
    virt_type: str
    created: float
    ip: str = ""
    uri: str = ""  # "" in records made before remote hosts: the default URI
    host_dir: str = ""  # the desktop's folder on the libvirt host; "": the local folder

    @classmethod
    def load(cls, path: Path) -> VmRecord:
        try:
            data = json.loads(path.read_text())
            return cls(**data)
        except (OSError, ValueError, TypeError) as exc:
            raise DesktopError(f"{path}: unreadable desktop record: {exc}") from exc


@dataclass
class StartState:
    """A saved start state: its metadata in `dir` here, and its memory and frozen
    disk in `host_dir` on the libvirt host (the same folder on this machine)."""

    key: str
    dir: Path
    host_dir: str
    ip: str
    made_seconds: float

    @property
    def memory(self) -> str:
        return f"{self.host_dir}/memory.save"

    @property
    def disk(self) -> str:
        return f"{self.host_dir}/disk.qcow2"


def state_key(image: Image, width: int, height: int, setup: str) -> str:
    """The key of a start state: the image build, the screen size and the setup."""
    material = f"{image.recipe_hash}\0{width}x{height}\0{setup}"
    return hashlib.sha256(material.encode()).hexdigest()[:20]


class LibvirtDesktop:
    """A `Desktop` that is a libvirt domain (`deskloop-NAME`).

    `ephemeral=True` (tests, one-off runs): `close()` removes everything. Otherwise
    `close()` only stops the domain and its start states stay for the next run;
    `remove()` deletes it all. While a process uses a desktop it holds a lock on its
    folder, so two processes never drive one domain.
    """

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
        self.config = config or LibvirtConfig()
        self.image_name = image or os.environ.get("DESKLOOP_IMAGE", DEFAULT_IMAGE)
        self.name = validate_name(name or f"{self.image_name}-{secrets.token_hex(3)}")
        if width < 320 or height < 200:
            raise DesktopError(f"libvirt desktop size {width}x{height} is too small")
        self.width = width
        self.height = height
        self.ephemeral = ephemeral
        self.progress = progress or (lambda _text: None)
        self.dir = self.config.cache / "vms" / self.name
        if self.config.local or self.config.virt_type:
            self.virt_type, self.virt_reason = self.config.virt()
        else:
            self.virt_type, self.virt_reason = "?", "asked of the host when connected"
        self._host: VmHost | None = None
        self._host_dir = str(self.dir)  # this desktop's folder on the libvirt host
        self._image_files: ImageFiles | None = None
        self._vnc_host_port = 0  # QEMU's VNC port on the libvirt host
        self._conn: libvirt.virConnect | None = None
        self._dom: libvirt.virDomain | None = None
        self._callback_id: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._state_event = asyncio.Event()
        self._domain_state = "undefined"
        self._state = "stopped"
        self._guest: SSHGuest | None = None
        self._vnc: VNCSession | None = None
        self._vnc_port = 0
        self._record: VmRecord | None = None
        self._lock_fd: int | None = None
        self._clock_task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self.timings: dict[str, float] = {}

    @property
    def domain_name(self) -> str:
        return DOMAIN_PREFIX + self.name

    # ------------------------------------------------------------ contract

    @property
    def guest(self) -> SSHGuest:
        if self._guest is None or self._state != "running":
            raise DesktopError(f"libvirt desktop {self.name} is {self._state}; call reset() first")
        return self._guest

    def info(self) -> DesktopInfo:
        vnc = None
        details = {
            "domain": self.domain_name,
            "image": self.image_name,
            "virt": f"{self.virt_type}: {self.virt_reason}",
            "uri": self.config.uri,
        }
        if self._host is not None and not self._host.local:
            details["host"] = self._host.label
        if self._state == "running" and self._record is not None and self._vnc_port:
            vnc = VncEndpoint("127.0.0.1", self._vnc_port, self._record.vnc_password)
        if self._guest is not None:
            details["ip"] = self._guest.host
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

    async def reset(self) -> None:
        """Restore the boot state (made by a cold boot the first time)."""
        async with self._lock:
            await self._reset_to(BOOT_STATE, None)

    async def reset_to(self, setup_key: str, setup: Callable[[], Awaitable[None]]) -> bool:
        """Bring the desktop to the start state keyed by `setup_key` (a hash of a
        task's setup steps, say). The first time, reset to the boot state, await
        `setup()`, settle and save; later, restore. True when it was restored."""
        async with self._lock:
            return await self._reset_to(setup_key, setup)

    async def frame(self, timeout: float = 5.0) -> Frame:
        try:
            return await self._vnc_session().frame(timeout)
        except VNCError as exc:
            raise DesktopError(f"libvirt desktop {self.name}: {exc}") from exc

    async def act(self, action: GuiAction) -> None:
        if isinstance(action, Wait):
            await asyncio.sleep(action.seconds)
            return
        try:
            await self._vnc_session().perform(action)
        except VNCError as exc:
            raise DesktopError(f"libvirt desktop {self.name}: {exc}") from exc

    async def settle(
        self, timeout: float = 3.0, quiet: float = 0.1, change_wait: float = 0.3
    ) -> SettleResult:
        try:
            return await self._vnc_session().settle(timeout, quiet, change_wait)
        except VNCError as exc:
            raise DesktopError(f"libvirt desktop {self.name}: {exc}") from exc

    async def close(self) -> None:
        """Stop the domain (ephemeral desktops: remove everything). Safe to call twice."""
        async with self._lock:
            if self.ephemeral:
                await self._remove()
            else:
                await self._stop()
            self._state = "closed"
            await asyncio.to_thread(self._disconnect)

    async def __aenter__(self) -> LibvirtDesktop:
        await self.reset()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # ------------------------------------------------------------ management

    async def create(self) -> None:
        """Define the domain and its folder (no boot). Idempotent."""
        async with self._lock:
            await self._prepare()

    async def stop(self) -> None:
        """Power off (discarding memory); start states stay."""
        async with self._lock:
            await self._prepare(define=False)
            await self._stop()

    async def remove(self) -> None:
        """Delete the domain, its overlay, start states and folder."""
        async with self._lock:
            await self._remove()
            await asyncio.to_thread(self._disconnect)

    async def save_state(self, key: str) -> StartState:
        """Save the running desktop as start state `key` (replacing one with that
        key), then restore it so the desktop keeps running."""
        async with self._lock:
            if self._state != "running":
                raise DesktopError(f"libvirt desktop {self.name} is {self._state}; nothing to save")
            state = await self._save(key, 0.0)
            await self._restore(state)
            return state

    async def restore_state(self, key: str) -> None:
        async with self._lock:
            await self._prepare()
            state = await self._call(self._find_state, key)
            if state is None:
                raise DesktopError(
                    f"libvirt desktop {self.name} has no start state {key!r} "
                    f"(have: {', '.join(self.state_keys()) or 'none'})"
                )
            await self._restore(state)

    async def attach_running(self) -> None:
        """Take over a desktop that is already running (another process started it)."""
        async with self._lock:
            await self._prepare(define=False)
            if self._record is None or self._dom is None:
                raise DesktopError(f"no libvirt desktop {self.name} (see `deskloop vm list`)")
            if self._domain_state != "running":
                raise DesktopError(
                    f"libvirt desktop {self.name} is {self._domain_state}; "
                    f"`deskloop vm start {self.name}` first"
                )
            ip = await self._wait_ip(30.0)
            await self._attach(ip, 60.0)
            self._state = "running"

    def state_keys(self) -> list[str]:
        states = self.dir / "states"
        if not states.is_dir():
            return []
        return sorted(p.name for p in states.iterdir() if (p / "meta.json").is_file())

    # ------------------------------------------------------------ internals

    def _vnc_session(self) -> VNCSession:
        if self._vnc is None or self._state != "running":
            raise DesktopError(f"libvirt desktop {self.name} is {self._state}; call reset() first")
        return self._vnc

    async def _call(self, fn: Callable[..., _T], *args: Any) -> _T:
        return await asyncio.to_thread(fn, *args)

    async def _prepare(self, define: bool = True) -> None:
        """Connect, take the folder lock, (re)load or write vm.json, define the domain."""
        self._loop = asyncio.get_running_loop()
        await self._call(self._take_lock)
        if self._record is None and (self.dir / "vm.json").is_file():
            record = VmRecord.load(self.dir / "vm.json")
            made_at = record.uri or DEFAULT_URI
            if made_at != self.config.uri:
                raise DesktopError(
                    f"libvirt desktop {self.name} lives at {made_at}, not {self.config.uri}: "
                    f"use that URI (--uri/--libvirt-uri or $DESKLOOP_LIBVIRT_URI) "
                    "or another desktop name"
                )
            self._record = record
            self.image_name = record.image
            self.width, self.height = record.width, record.height
        if self._conn is None:
            self._conn = await self._call(open_connection, self.config.uri)
        if self._host is None:
            self._host = await self._call(self.config.open_host)
            if not self._host.local and not self.config.virt_type:
                self.virt_type, self.virt_reason = await self._call(
                    self.config.virt, self._host.exists
                )
            self._host_dir = self._host.vm_dir(self.name)
        if self._record is not None and self._record.host_dir:
            self._host_dir = self._record.host_dir
        if define:
            await self._call(ensure_network, self._conn, self.config.subnet, self.config.recipes)
            if self._record is None:
                self._record = await self._call(self._new_record)
            if self._image_files is None:
                self._image_files = await self._call(
                    self._host.image_files, self._image(), self._progress_from_thread
                )
            await self._call(self._define)
        elif self._dom is None:
            conn = self._conn
            assert conn is not None
            with contextlib.suppress(libvirt.libvirtError):
                self._dom = await self._call(conn.lookupByName, self.domain_name)
        if self._dom is not None and self._callback_id is None:
            await self._call(self._register_events)

    def _progress_from_thread(self, text: str) -> None:
        # Uploads report from a worker thread; progress callbacks belong to the loop.
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self.progress, text)

    def _on_host(self, *parts: str) -> str:
        """A path in this desktop's folder on the libvirt host."""
        return "/".join((self._host_dir, *parts))

    def _console(self) -> str:
        path = self._on_host("console.log")
        return self._host.describe(path) if self._host is not None else path

    def _host_now(self) -> VmHost:
        assert self._host is not None, "_prepare() connects the host"
        return self._host

    def _take_lock(self) -> None:
        if self._lock_fd is not None:
            return
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.dir / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DesktopError(
                f"libvirt desktop {self.name} is in use by another DeskLoop process "
                f"(lock {self.dir / '.lock'})"
            ) from None
        self._lock_fd = fd

    def _release_lock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def _new_record(self) -> VmRecord:
        image = require_image(self.image_name, self.config.cache)
        digest = hashlib.sha256(self.name.encode()).digest()
        # Locally administered unicast MAC, stable for the name.
        mac = "52:54:00:" + ":".join(f"{b:02x}" for b in digest[:3])
        assert self._conn is not None
        ip = _reserve_address(self._conn, mac, self.name, self.config.subnet)
        record = VmRecord(
            ip=ip,
            name=self.name,
            image=self.image_name,
            image_dir=str(image.dir),
            recipe_hash=image.recipe_hash,
            mac=mac,
            vnc_password="".join(secrets.choice(_PASSWORD_ALPHABET) for _ in range(8)),
            width=self.width,
            height=self.height,
            memory_mib=self.config.memory_mib or image.memory_mib,
            vcpus=self.config.vcpus,
            virt_type=self.virt_type,
            created=time.time(),
            uri=self.config.uri,
            host_dir=self._host_dir,
        )
        (self.dir / "states").mkdir(parents=True, exist_ok=True)
        self._host_now().mkdir(self._on_host("states"))
        partial = self.dir / "vm.json.partial"
        partial.write_text(json.dumps(asdict(record), indent=2) + "\n")
        partial.chmod(0o600)
        partial.rename(self.dir / "vm.json")
        return record

    def _image(self) -> Image:
        record = self._record
        assert record is not None
        image = find_image(record.image, self.config.cache)
        image_dir = Path(record.image_dir)
        if image is not None and image.dir == image_dir:
            return image
        # The image was rebuilt since this desktop was made: keep using its build.
        manifest_path = image_dir / "manifest.json"
        try:
            manifest = json.loads(manifest_path.read_text())
        except (OSError, ValueError) as exc:
            raise DesktopError(
                f"libvirt desktop {self.name}: its image build {image_dir} is gone ({exc}); "
                f"remove it with `deskloop vm rm {self.name}`"
            ) from exc
        return Image(record.image, image_dir, manifest)

    def _domain_xml(self) -> str:
        record = self._record
        assert record is not None and self._image_files is not None
        files = self._image_files
        uid, gid = self._host_now().ids()
        _key, public = lab_key(self.config.cache / "ssh" / "id_ed25519")
        cmdline = " ".join(
            [
                "root=/dev/vda",
                "rw",
                "console=ttyS0",
                "quiet",
                "consoleblank=0",
                "mitigations=off",
                f"deskloop.geometry={record.width}x{record.height}",
                f"deskloop.sshkey={public}",
            ]
        )
        tcg = "<tcg><tb-cache unit='MiB'>256</tb-cache></tcg>" if record.virt_type == "qemu" else ""
        xml = _fill(
            self.config.recipes / "domain.xml",
            {
                "virt_type": record.virt_type,
                "name": self.domain_name,
                "image": record.image,
                "recipe_hash": record.recipe_hash,
                "vm_dir": self._host_dir,
                "memory_mib": str(record.memory_mib),
                "vcpus": str(record.vcpus),
                "kernel": files.kernel,
                "initrd": files.initrd,
                "cmdline": cmdline,
                "tcg_features": "@TCG@",
                "disk": self._on_host("disk.qcow2"),
                "network": NETWORK_NAME,
                "mac": record.mac,
                "vnc_password": record.vnc_password,
                "console_log": self._on_host("console.log"),
                "uid": str(uid),
                "gid": str(gid),
            },
        )
        # The features element is XML, not text: put it in after escaping the rest.
        return xml.replace("@TCG@", tcg)

    def _define(self) -> None:
        assert self._conn is not None and self._image_files is not None
        if not self._host_now().exists(self._on_host("disk.qcow2")):
            self._new_overlay(self._image_files.disk)
        xml = self._domain_xml()
        with contextlib.suppress(libvirt.libvirtError):
            # Redefining keeps the domain's identity: libvirt wants its UUID.
            uuid = self._conn.lookupByName(self.domain_name).UUIDString()
            xml = xml.replace("</name>", f"</name>\n  <uuid>{uuid}</uuid>", 1)
        try:
            self._dom = self._conn.defineXML(xml)
        except libvirt.libvirtError as exc:
            raise DesktopError(f"cannot define the domain {self.domain_name}: {exc}") from exc

    def _new_overlay(self, backing: str) -> None:
        try:
            self._host_now().new_overlay(backing, self._on_host("disk.qcow2"))
        except DesktopError as exc:
            raise DesktopError(f"libvirt desktop {self.name}: {exc}") from exc

    def _register_events(self) -> None:
        assert self._conn is not None and self._dom is not None
        code = self._dom.state()[0]
        self._on_state(_state_name(code))
        self._callback_id = self._conn.domainEventRegisterAny(
            self._dom, libvirt.VIR_DOMAIN_EVENT_ID_LIFECYCLE, self._lifecycle, None
        )

    def _lifecycle(
        self, _conn: libvirt.virConnect, dom: libvirt.virDomain, event: int, detail: int, _o: Any
    ) -> None:
        # Runs on the libvirt event thread: hand the news to the asyncio loop.
        names = {
            libvirt.VIR_DOMAIN_EVENT_STARTED: "running",
            libvirt.VIR_DOMAIN_EVENT_RESUMED: "running",
            libvirt.VIR_DOMAIN_EVENT_SUSPENDED: "paused",
            libvirt.VIR_DOMAIN_EVENT_STOPPED: "shut off",
            libvirt.VIR_DOMAIN_EVENT_SHUTDOWN: "shutting down",
            libvirt.VIR_DOMAIN_EVENT_CRASHED: "crashed",
            libvirt.VIR_DOMAIN_EVENT_UNDEFINED: "undefined",
        }
        state = names.get(event)
        if state is not None and self._loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed
                self._loop.call_soon_threadsafe(self._on_state, state)

    def _on_state(self, state: str) -> None:
        self._domain_state = state
        if state in ("shut off", "crashed") and self._state == "running":
            self._state = "stopped"
        self._state_event.set()

    async def _wait_domain(self, states: tuple[str, ...], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while self._domain_state not in states:
            self._state_event.clear()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DesktopError(
                    f"libvirt desktop {self.name}: {what}: domain is {self._domain_state}, "
                    f"not {' or '.join(states)} after {timeout:g} s"
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._state_event.wait(), remaining)

    def _find_state(self, key: str) -> StartState | None:
        """The saved state `key`, if its metadata is here and its files on the host."""
        folder = self.dir / "states" / key
        try:
            meta = json.loads((folder / "meta.json").read_text())
        except (OSError, ValueError):
            return None
        state = StartState(
            key,
            folder,
            self._on_host("states", key),
            str(meta["ip"]),
            float(meta.get("made_seconds", 0)),
        )
        host = self._host_now()
        if not (host.exists(state.memory) and host.exists(state.disk)):
            return None
        return state

    async def _reset_to(self, key: str, setup: Callable[[], Awaitable[None]] | None) -> bool:
        await self._prepare()
        assert self._record is not None
        full_key = (
            BOOT_STATE if setup is None else state_key(self._image(), self.width, self.height, key)
        )
        state = await self._call(self._find_state, full_key)
        if state is not None:
            self.progress(f"restoring start state {full_key}")
            await self._restore(state)
            return True
        t0 = time.monotonic()
        if setup is None:
            await self._cold_boot()
        else:
            boot = await self._call(self._find_state, BOOT_STATE)
            if boot is None:
                await self._cold_boot()
                boot = await self._save(BOOT_STATE, time.monotonic() - t0)
            await self._restore(boot)
            self.progress("running setup to make the start state")
            await setup()
            await self._settle_screen()
        made = time.monotonic() - t0
        self.progress(f"saving start state {full_key} (made in {made:.0f} s)")
        state = await self._save(full_key, made)
        await self._restore(state)
        return False

    async def _cold_boot(self) -> None:
        """Boot on a fresh overlay of the image and wait for a usable desktop."""
        assert self._conn is not None and self._record is not None
        await self._stop()
        t0 = time.monotonic()
        self.progress(f"cold boot of {self.domain_name} ({self.virt_type}: {self.virt_reason})")
        assert self._image_files is not None
        await self._call(self._new_overlay, self._image_files.disk)
        # A new overlay boots new host keys: forget the pinned one.
        with contextlib.suppress(FileNotFoundError):
            (self.dir / "known_hosts").unlink()
        await self._call(self._define)
        if self._callback_id is None:
            await self._call(self._register_events)
        self._state = "starting"
        try:
            assert self._dom is not None
            await self._call(self._dom.create)
        except libvirt.libvirtError as exc:
            self._state = "failed"
            raise DesktopError(
                f"cannot start {self.domain_name}: {exc} (console: {self._console()})"
            ) from exc
        try:
            await self._wait_domain(("running",), 30.0, "starting")
            ip = await self._wait_ip(self.config.boot_timeout)
            await self._attach(ip, self.config.boot_timeout - (time.monotonic() - t0))
            await self._wait_session(self.config.boot_timeout - (time.monotonic() - t0))
        except BaseException:
            self._state = "failed"
            raise
        self.timings["cold_boot"] = time.monotonic() - t0

    async def _wait_ip(self, timeout: float) -> str:
        """The guest's fixed address; for desktops made before fixed addresses,
        from the network's DHCP leases (bounded wait)."""
        assert self._dom is not None and self._record is not None
        if self._record.ip:
            return self._record.ip
        deadline = time.monotonic() + timeout
        mac = self._record.mac
        while time.monotonic() < deadline:
            if self._domain_state in ("shut off", "crashed"):
                raise DesktopError(
                    f"{self.domain_name} stopped while booting (console: {self._console()})"
                )
            try:
                found = await self._call(
                    self._dom.interfaceAddresses,
                    libvirt.VIR_DOMAIN_INTERFACE_ADDRESSES_SRC_LEASE,
                )
            except libvirt.libvirtError:
                found = {}
            for iface in found.values():
                if str(iface.get("hwaddr", "")).lower() != mac:
                    continue
                for addr in iface.get("addrs") or []:
                    if addr.get("type") == libvirt.VIR_IP_ADDR_TYPE_IPV4:
                        return str(addr["addr"])
            await asyncio.sleep(0.5)
        raise DesktopError(
            f"{self.domain_name} got no DHCP lease on {NETWORK_NAME} within {timeout:g} s "
            f"(console: {self._console()})"
        )

    async def _attach(self, ip: str, timeout: float, wait_ssh: bool = True) -> None:
        """Connect VNC and SSH (a new connection: a restore kills old TCP state).
        With `wait_ssh=False` SSH comes up in the background (guest calls wait)."""
        key, _public = await self._call(lab_key, self.config.cache / "ssh" / "id_ed25519")
        if self._guest is not None:
            self._guest.close()
        host = self._host_now()
        guest = SSHGuest(
            ip,
            key,
            self.dir / "known_hosts",
            where=f"libvirt desktop {self.name}",
            # On a remote host the guest's network is only reachable from there.
            sock_factory=None if host.local else lambda: host.guest_socket(ip, 22),
        )
        self._guest = guest
        host_port = await self._call(self._vnc_port_now)
        if self._vnc is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._vnc.close(), 2.0)
        assert self._record is not None
        if self._vnc_host_port and self._vnc_host_port != host_port:
            await self._call(host.drop_forward, self._vnc_host_port)
        port = await self._call(host.forward, host_port)
        self._vnc_host_port = host_port
        self._vnc_port = port
        # QEMU maps keysyms to scancodes without adding Shift, and drops key events
        # that overflow its queue (VNCClient.explicit_shift and .type_delay).
        vnc = VNCSession(
            "127.0.0.1",
            port,
            self._record.vnc_password,
            timeout=10.0,
            explicit_shift=True,
            type_delay=QEMU_TYPE_DELAY,
        )
        self._vnc = vnc

        t0 = time.monotonic()
        if wait_ssh:
            await asyncio.gather(guest.connect(max(timeout, 5.0)), vnc.connected())
        else:
            guest.connect_soon(max(timeout, 5.0))
            await vnc.connected()
        self.timings["attach"] = time.monotonic() - t0

    def _vnc_port_now(self) -> int:
        assert self._dom is not None
        root = ET.fromstring(self._dom.XMLDesc(0))
        graphics = root.find("./devices/graphics[@type='vnc']")
        port = int(graphics.get("port", "-1")) if graphics is not None else -1
        if port <= 0:
            raise DesktopError(f"{self.domain_name} has no VNC port in its live XML")
        return port

    async def _wait_session(self, timeout: float) -> None:
        """Wait until X runs at the right size with openbox managing it, then until
        the VNC screen has that size and has gone quiet."""
        assert self._guest is not None and self._vnc is not None
        deadline = time.monotonic() + max(timeout, 10.0)
        want = f"{self.width} {self.height}"
        last = ""
        while True:
            try:
                geometry = await self._guest.run(["xdotool", "getdisplaygeometry"], 10.0)
                wm = await self._guest.run(["xprop", "-root", "_NET_SUPPORTING_WM_CHECK"], 10.0)
                if geometry.stdout_text().strip() == want and b"window id" in wm.stdout:
                    break
                last = " / ".join(
                    (r.stdout_text() + r.stderr.decode(errors="replace")).strip()
                    for r in (geometry, wm)
                )
            except GuestError as exc:
                last = str(exc)
            if time.monotonic() > deadline:
                with contextlib.suppress(GuestError):
                    status = await self._guest.run(
                        ["systemctl", "status", "--no-pager", "-n", "15",
                         "deskloop-session", "deskloop-xserver"], 15.0
                    )  # fmt: skip
                    last += "\n" + status.stdout_text()[-2500:]
                raise DesktopError(
                    f"libvirt desktop {self.name}: the X session was not ready within "
                    f"{timeout:.0f} s (last: {last!r}; console: {self._console()})"
                )
            await asyncio.sleep(0.5)
        self._state = "running"
        while True:
            try:
                size = await self._vnc.size()
                frame = await self._vnc.frame(10.0)
                if size == (self.width, self.height) and frame.width == self.width:
                    break
                await self._vnc.reconnect()
            except VNCError as exc:
                last = str(exc)
            if time.monotonic() > deadline:
                raise DesktopError(
                    f"libvirt desktop {self.name}: VNC never showed a {self.width}x"
                    f"{self.height} screen (last: {last})"
                )
            await asyncio.sleep(0.5)
        await self._settle_screen()

    async def _settle_screen(self) -> None:
        with contextlib.suppress(VNCError, DesktopError):
            assert self._vnc is not None
            await self._vnc.settle(timeout=20.0, quiet=1.0, change_wait=0.5)

    async def _save(self, key: str, made_seconds: float) -> StartState:
        """Save the domain's memory and freeze its disk as start state `key`.
        The domain is stopped afterwards."""
        assert self._dom is not None and self._guest is not None
        host = self._host_now()
        ip = self._guest.host
        folder = self.dir / "states" / key
        state = StartState(key, folder, self._on_host("states", key), ip, made_seconds)
        await self._detach()
        await self._call(shutil.rmtree, folder, True)
        await self._call(host.remove_tree, state.host_dir)
        folder.mkdir(parents=True)
        await self._call(host.mkdir, state.host_dir)
        t0 = time.monotonic()
        try:
            await self._call(self._dom.save, state.memory)
        except libvirt.libvirtError as exc:
            self._state = "failed"
            raise DesktopError(f"cannot save {self.domain_name}: {exc}") from exc
        self._state = "stopped"
        self.timings["save"] = time.monotonic() - t0
        await self._call(host.rename, self._on_host("disk.qcow2"), state.disk)
        await self._call(host.chmod, state.disk, 0o400)
        meta = {"key": key, "ip": ip, "made_seconds": made_seconds, "saved": time.time()}
        (folder / "meta.json").write_text(json.dumps(meta) + "\n")
        return state

    async def _restore(self, state: StartState) -> None:
        """Fresh overlay on the state's frozen disk, memory from its file, reconnect."""
        assert self._conn is not None
        await self._stop()
        t0 = time.monotonic()
        await self._call(self._new_overlay, state.disk)
        self._state = "starting"
        try:
            await self._call(
                self._conn.restoreFlags, state.memory, None, libvirt.VIR_DOMAIN_SAVE_RUNNING
            )
        except libvirt.libvirtError as exc:
            self._state = "failed"
            raise DesktopError(
                f"cannot restore {self.domain_name} from {self._host_now().describe(state.memory)}"
                f": {exc}"
            ) from exc
        await self._wait_domain(("running",), 30.0, "restoring")
        self.timings["restore_domain"] = time.monotonic() - t0
        try:
            # The screen is what makes a desktop usable; SSH and the clock follow in
            # the background (guest calls wait for SSH).
            self._clock_task = asyncio.get_running_loop().create_task(self._sync_clock())
            await self._attach(state.ip, self.config.restore_timeout, wait_ssh=False)
            self._state = "running"
            assert self._vnc is not None
            await self._vnc.frame(self.config.restore_timeout)
        except BaseException:
            self._state = "failed"
            raise
        self.timings["restore"] = time.monotonic() - t0

    async def _sync_clock(self) -> None:
        """The clock stood still while the state was on disk: set it (best effort,
        via the guest agent) so file times in the guest make sense."""
        t0 = time.monotonic()
        with contextlib.suppress(libvirt.libvirtError):
            await self._call(self._sync_time)
        self.timings["restore_clock"] = time.monotonic() - t0

    def _sync_time(self) -> None:
        assert self._dom is not None
        now = time.time()
        self._dom.setTime({"seconds": int(now), "nseconds": int((now % 1) * 1e9)}, 0)

    async def _detach(self) -> None:
        if self._clock_task is not None:
            # A libvirt call in a worker thread: let it finish rather than race a stop.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(self._clock_task), 10.0)
            self._clock_task = None
        if self._guest is not None:
            self._guest.drop()
        if self._vnc is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._vnc.close(), 2.0)
            self._vnc = None
        if self._host is not None and self._vnc_host_port:
            await self._call(self._host.drop_forward, self._vnc_host_port)
        self._vnc_port = self._vnc_host_port = 0

    async def _stop(self) -> None:
        """Destroy the running domain (if any); never removes files."""
        await self._detach()
        if self._dom is not None:
            try:
                active = await self._call(self._dom.isActive)
            except libvirt.libvirtError:
                active = False
            if active:
                with contextlib.suppress(libvirt.libvirtError):
                    await self._call(self._dom.destroy)
                await self._wait_domain(("shut off", "undefined"), 30.0, "stopping")
        if self._state not in ("closed",):
            self._state = "stopped"

    async def _remove(self) -> None:
        await self._prepare(define=False)
        await self._stop()
        if self._guest is not None:
            self._guest.close()
            self._guest = None
        if self._dom is not None:
            await self._call(self._undefine)
        host = self._host_now()
        if self._record is not None and self._conn is not None:
            await self._call(_release_address, self._conn, self._record.mac, host)
        if not host.local:  # here the host's folder is self.dir, removed below
            await self._call(host.remove_tree, self._host_dir)
        await self._call(self._release_lock)
        await self._call(shutil.rmtree, self.dir, True)
        self._record = None

    def _undefine(self) -> None:
        assert self._dom is not None and self._conn is not None
        if self._callback_id is not None:
            with contextlib.suppress(libvirt.libvirtError):
                self._conn.domainEventDeregisterAny(self._callback_id)
            self._callback_id = None
        flags = (
            libvirt.VIR_DOMAIN_UNDEFINE_MANAGED_SAVE
            | libvirt.VIR_DOMAIN_UNDEFINE_SNAPSHOTS_METADATA
            | libvirt.VIR_DOMAIN_UNDEFINE_NVRAM
        )
        with contextlib.suppress(libvirt.libvirtError):
            self._dom.undefineFlags(flags)
        self._dom = None

    def _disconnect(self) -> None:
        if self._conn is not None and self._callback_id is not None:
            with contextlib.suppress(libvirt.libvirtError):
                self._conn.domainEventDeregisterAny(self._callback_id)
        self._callback_id = None
        if self._conn is not None:
            with contextlib.suppress(libvirt.libvirtError):
                self._conn.close()
        self._conn = None
        self._dom = None
        if self._host is not None:
            self._host.close()
        self._host = None
        self._image_files = None
        self._release_lock()


# ---------------------------------------------------------------- listing


@contextlib.contextmanager
def reach_vnc(name: str, config: LibvirtConfig | None = None) -> Iterator[VncEndpoint]:
    """Where a viewer on this machine reaches running desktop `name`, while the block
    runs: QEMU's own port here, a forward over SSH for a remote host (blocking; no
    lock taken, so it works while another process drives the desktop).

    Raises:
        DesktopError: no such desktop, or it is not running.
    """
    config = config or LibvirtConfig()
    record = VmRecord.load(config.cache / "vms" / validate_name(name) / "vm.json")
    conn = open_connection(config.uri)
    try:
        try:
            dom = conn.lookupByName(DOMAIN_PREFIX + name)
        except libvirt.libvirtError as exc:
            raise DesktopError(f"no libvirt domain {DOMAIN_PREFIX}{name}: {exc}") from exc
        if not dom.isActive():
            raise DesktopError(f"desktop {name} is not running; `deskloop vm start {name}`")
        graphics = ET.fromstring(dom.XMLDesc(0)).find("./devices/graphics[@type='vnc']")
        port = int(graphics.get("port", "-1")) if graphics is not None else -1
    finally:
        conn.close()
    if port <= 0:
        raise DesktopError(f"desktop {name} has no VNC port")
    host = config.open_host()
    try:
        yield VncEndpoint("127.0.0.1", host.forward(port), record.vnc_password)
    finally:
        host.close()


def _made_at(folder: Path, uri: str) -> bool:
    """Whether the desktop in `folder` belongs to libvirt `uri` (unreadable: shown)."""
    try:
        record = VmRecord.load(folder / "vm.json")
    except DesktopError:
        return True
    return (record.uri or DEFAULT_URI) == uri


@dataclass(frozen=True)
class VmSummary:
    name: str
    domain: str
    state: str
    image: str
    states: tuple[str, ...]
    dir: Path


def list_vms(config: LibvirtConfig | None = None) -> list[VmSummary]:
    """Every DeskLoop desktop: domains named deskloop-* and folders in the cache (blocking)."""
    config = config or LibvirtConfig()
    conn = open_connection(config.uri)
    try:
        domains = {
            d.name(): _state_name(d.state()[0])
            for d in conn.listAllDomains()
            if d.name().startswith(DOMAIN_PREFIX)
        }
    finally:
        conn.close()
    vms_dir = config.cache / "vms"
    names = {n[len(DOMAIN_PREFIX) :] for n in domains}
    if vms_dir.is_dir():
        names |= {p.name for p in vms_dir.iterdir() if p.is_dir() and _made_at(p, config.uri)}
    result = []
    for name in sorted(names):
        folder = vms_dir / name
        image = "?"
        with contextlib.suppress(DesktopError):
            image = VmRecord.load(folder / "vm.json").image
        states: tuple[str, ...] = ()
        if (folder / "states").is_dir():
            states = tuple(sorted(p.name for p in (folder / "states").iterdir()))
        result.append(
            VmSummary(
                name,
                DOMAIN_PREFIX + name,
                domains.get(DOMAIN_PREFIX + name, "undefined"),
                image,
                states,
                folder,
            )
        )
    return result
