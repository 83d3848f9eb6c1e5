"""`Machine`: the libvirt side of one desktop, which `LibvirtDesktop` drives.

It holds the libvirt connection and the domain, the host the domain's files are on
and the desktop's folder there, and here the desktop's record and folder lock. It
knows where each thing is and how to make, find, start and remove it; when to boot,
save or restore is the desktop's business. Methods without `async` block: callers
run them in worker threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import time
from collections.abc import Callable

import libvirt

from app.core.errors import DesktopError
from app.desktops.libvirt import domain, network
from app.desktops.libvirt.config import DEFAULT_URI, DOMAIN_PREFIX, LibvirtConfig
from app.desktops.libvirt.connection import DomainWatch, open_connection
from app.desktops.libvirt.host import ImageFiles, VmHost
from app.desktops.libvirt.record import FolderLock, VmRecord, mac_for, new_vnc_password
from app.desktops.libvirt.states import StartState, find_state
from app.desktops.remote.ssh_guest import lab_key
from app.vmimages.cache import Image, require_image


class Machine:
    """Desktop `name`'s domain, host, record and lock. `image_name`, `width` and
    `height` are the desktop's wishes until `prepare` finds its record, then the
    record's; `on_state` hears each new domain state (see `DomainWatch`)."""

    def __init__(
        self,
        name: str,
        image_name: str,
        width: int,
        height: int,
        config: LibvirtConfig,
        progress: Callable[[str], None],
        on_state: Callable[[str], None],
    ) -> None:
        self.config = config
        self.name = name
        self.where = f"libvirt desktop {name}"
        self.domain_name = DOMAIN_PREFIX + name
        self.image_name = image_name
        self.width = width
        self.height = height
        self.dir = config.cache / "vms" / name
        if config.local or config.virt_type:
            self.virt_type, self.virt_reason = config.virt()
        else:
            self.virt_type, self.virt_reason = "?", "asked of the host when connected"
        self.record: VmRecord | None = None
        self.conn: libvirt.virConnect | None = None
        self.dom: libvirt.virDomain | None = None
        self.host: VmHost | None = None
        self.host_dir = str(self.dir)  # this desktop's folder on the libvirt host
        self.image_files: ImageFiles | None = None
        self.watch = DomainWatch(self.where, on_state)
        self._progress = progress
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = FolderLock(self.dir, name)

    async def prepare(self, define: bool = True) -> None:
        """Connect, take the folder lock, (re)load or write vm.json, define the domain."""
        self._loop = self.watch.loop = asyncio.get_running_loop()
        await asyncio.to_thread(self._lock.take)
        if self.record is None and (self.dir / "vm.json").is_file():
            record = VmRecord.load(self.dir / "vm.json")
            made_at = record.uri or DEFAULT_URI
            if made_at != self.config.uri:
                raise DesktopError(
                    f"libvirt desktop {self.name} lives at {made_at}, not {self.config.uri}: "
                    f"use that URI (--uri/--libvirt-uri or $DESKLOOP_LIBVIRT_URI) "
                    "or another desktop name"
                )
            self.record = record
            self.image_name = record.image
            self.width, self.height = record.width, record.height
        if self.conn is None:
            self.conn = await asyncio.to_thread(open_connection, self.config.uri)
        if self.host is None:
            self.host = await asyncio.to_thread(self.config.open_host)
            if not self.host.local and not self.config.virt_type:
                self.virt_type, self.virt_reason = await asyncio.to_thread(
                    self.config.virt, self.host.exists
                )
            self.host_dir = self.host.vm_dir(self.name)
        if self.record is not None and self.record.host_dir:
            self.host_dir = self.record.host_dir
        if define:
            await asyncio.to_thread(
                network.ensure_network, self.conn, self.config.subnet, self.config.recipes
            )
            if self.record is None:
                self.record = await asyncio.to_thread(self._new_record)
            if self.image_files is None:
                self.image_files = await asyncio.to_thread(
                    self.host.image_files, self.image(), self._progress_from_thread
                )
            await asyncio.to_thread(self.define)
        elif self.dom is None:
            conn = self.conn
            assert conn is not None
            with contextlib.suppress(libvirt.libvirtError):
                self.dom = await asyncio.to_thread(conn.lookupByName, self.domain_name)
        if self.dom is not None:
            await self.watch_events()

    async def watch_events(self) -> None:
        """Follow the domain's lifecycle events (once)."""
        if not self.watch.watching:
            await asyncio.to_thread(self.watch.start, self.conn, self.dom)

    def _progress_from_thread(self, text: str) -> None:
        # Uploads report from a worker thread; progress callbacks belong to the loop.
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._progress, text)

    def on_host(self, *parts: str) -> str:
        """A path in this desktop's folder on the libvirt host."""
        return "/".join((self.host_dir, *parts))

    def console(self) -> str:
        path = self.on_host("console.log")
        return self.host.describe(path) if self.host is not None else path

    def host_now(self) -> VmHost:
        assert self.host is not None, "prepare() connects the host"
        return self.host

    def _new_record(self) -> VmRecord:
        image = require_image(self.image_name, self.config.cache)
        mac = mac_for(self.name)
        assert self.conn is not None
        ip = network.reserve_address(self.conn, mac, self.name, self.config.subnet)
        record = VmRecord(
            ip=ip,
            name=self.name,
            image=self.image_name,
            image_dir=str(image.dir),
            recipe_hash=image.recipe_hash,
            mac=mac,
            vnc_password=new_vnc_password(),
            width=self.width,
            height=self.height,
            memory_mib=self.config.memory_mib or image.memory_mib,
            vcpus=self.config.vcpus,
            virt_type=self.virt_type,
            created=time.time(),
            uri=self.config.uri,
            host_dir=self.host_dir,
        )
        (self.dir / "states").mkdir(parents=True, exist_ok=True)
        self.host_now().mkdir(self.on_host("states"))
        record.save(self.dir / "vm.json")
        return record

    def image(self) -> Image:
        assert self.record is not None
        return self.record.image_build(self.config.cache)

    def define(self) -> None:
        """(Re)define the domain, on a new overlay of the image if it has none."""
        assert self.conn is not None and self.image_files is not None
        assert self.record is not None
        host = self.host_now()
        if not host.exists(self.on_host("disk.qcow2")):
            self.new_overlay(self.image_files.disk)
        uid, gid = host.ids()
        _key, public = lab_key(self.config.cache / "ssh" / "id_ed25519")
        place = domain.DomainPlace(
            self.host_dir, self.on_host("disk.qcow2"), self.on_host("console.log"), uid, gid
        )
        xml = domain.domain_xml(
            self.record, self.domain_name, self.image_files, place, public, self.config.recipes
        )
        self.dom = domain.define_domain(self.conn, self.domain_name, xml)

    def new_overlay(self, backing: str) -> None:
        """A fresh working disk on `backing` (the image's, or a state's frozen disk)."""
        try:
            self.host_now().new_overlay(backing, self.on_host("disk.qcow2"))
        except DesktopError as exc:
            raise DesktopError(f"libvirt desktop {self.name}: {exc}") from exc

    async def fresh_boot(self) -> None:
        """Define the domain on a fresh overlay of the image, ready for `start`."""
        assert self.image_files is not None
        await asyncio.to_thread(self.new_overlay, self.image_files.disk)
        # A new overlay boots new host keys: forget the pinned one.
        with contextlib.suppress(FileNotFoundError):
            (self.dir / "known_hosts").unlink()
        await asyncio.to_thread(self.define)
        await self.watch_events()

    async def start(self) -> None:
        """Boot the defined domain.

        Raises:
            DesktopError: libvirt could not start it.
        """
        try:
            assert self.dom is not None
            await asyncio.to_thread(self.dom.create)
        except libvirt.libvirtError as exc:
            raise DesktopError(
                f"cannot start {self.domain_name}: {exc} (console: {self.console()})"
            ) from exc

    async def wait_ip(self, timeout: float) -> str:
        """The guest's fixed address; for desktops made before fixed addresses,
        from the network's DHCP leases (bounded wait)."""
        assert self.dom is not None and self.record is not None
        if self.record.ip:
            return self.record.ip
        deadline = time.monotonic() + timeout
        mac = self.record.mac
        while time.monotonic() < deadline:
            if self.watch.state in ("shut off", "crashed"):
                raise DesktopError(
                    f"{self.domain_name} stopped while booting (console: {self.console()})"
                )
            try:
                found = await asyncio.to_thread(
                    self.dom.interfaceAddresses,
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
            f"{self.domain_name} got no DHCP lease on {network.NETWORK_NAME} within "
            f"{timeout:g} s (console: {self.console()})"
        )

    def vnc_port(self) -> int:
        """QEMU's VNC port on the host, now (it changes at each start)."""
        assert self.dom is not None
        port = domain.vnc_port(self.dom)
        if not port:
            raise DesktopError(f"{self.domain_name} has no VNC port in its live XML")
        return port

    # ------------------------------------------------------------ start states

    def find_state(self, key: str) -> StartState | None:
        return find_state(self.dir, self.host_dir, key, self.host_now())

    async def clear_state(self, key: str, ip: str, made_seconds: float) -> StartState:
        """Empty folders, here and on the host, for a new state `key`."""
        host = self.host_now()
        state = StartState.at(self.dir, self.host_dir, key, ip, made_seconds)
        await asyncio.to_thread(shutil.rmtree, state.dir, True)
        await asyncio.to_thread(host.remove_tree, state.host_dir)
        state.dir.mkdir(parents=True)
        await asyncio.to_thread(host.mkdir, state.host_dir)
        return state

    async def save(self, state: StartState) -> None:
        """Save the domain's memory into `state` (the domain stops).

        Raises:
            DesktopError: libvirt could not save it.
        """
        assert self.dom is not None
        try:
            await asyncio.to_thread(self.dom.save, state.memory)
        except libvirt.libvirtError as exc:
            raise DesktopError(f"cannot save {self.domain_name}: {exc}") from exc

    async def freeze_disk(self, state: StartState) -> None:
        """Move the working overlay into `state`, read-only, and record it complete."""
        host = self.host_now()
        await asyncio.to_thread(host.rename, self.on_host("disk.qcow2"), state.disk)
        await asyncio.to_thread(host.chmod, state.disk, 0o400)
        state.write_meta()

    async def restore(self, state: StartState) -> None:
        """Run the domain from `state`'s memory (on an overlay made beforehand).

        Raises:
            DesktopError: libvirt could not restore it.
        """
        assert self.conn is not None
        try:
            await asyncio.to_thread(
                self.conn.restoreFlags, state.memory, None, libvirt.VIR_DOMAIN_SAVE_RUNNING
            )
        except libvirt.libvirtError as exc:
            raise DesktopError(
                f"cannot restore {self.domain_name} from {self.host_now().describe(state.memory)}"
                f": {exc}"
            ) from exc

    def sync_time(self) -> None:
        """Set the guest's clock to now (through the guest agent)."""
        assert self.dom is not None
        now = time.time()
        self.dom.setTime({"seconds": int(now), "nseconds": int((now % 1) * 1e9)}, 0)

    # ------------------------------------------------------------ the end

    async def destroy(self) -> None:
        """Power the domain off if it runs; never removes files."""
        if self.dom is None:
            return
        try:
            active = await asyncio.to_thread(self.dom.isActive)
        except libvirt.libvirtError:
            active = False
        if active:
            with contextlib.suppress(libvirt.libvirtError):
                await asyncio.to_thread(self.dom.destroy)
            await self.watch.wait(("shut off", "undefined"), 30.0, "stopping")

    async def remove(self) -> None:
        """Undefine the domain, give its address back, delete its files on both sides."""
        if self.dom is not None:
            await asyncio.to_thread(self._undefine)
        host = self.host_now()
        if self.record is not None and self.conn is not None:
            await asyncio.to_thread(network.release_address, self.conn, self.record.mac, host)
        if not host.local:  # here the host's folder is self.dir, removed below
            await asyncio.to_thread(host.remove_tree, self.host_dir)
        await asyncio.to_thread(self._lock.release)
        await asyncio.to_thread(shutil.rmtree, self.dir, True)
        self.record = None

    def _undefine(self) -> None:
        assert self.dom is not None and self.conn is not None
        self.watch.stop(self.conn)
        domain.undefine_domain(self.dom)
        self.dom = None

    def disconnect(self) -> None:
        """Close the connections and let go of the lock (the domain keeps running)."""
        self.watch.stop(self.conn)
        if self.conn is not None:
            with contextlib.suppress(libvirt.libvirtError):
                self.conn.close()
        self.conn = None
        self.dom = None
        if self.host is not None:
            self.host.close()
        self.host = None
        self.image_files = None
        self._lock.release()
