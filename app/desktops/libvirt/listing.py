"""The libvirt desktops that exist (`list_vms`) and where a viewer reaches a running
one (`reach_vnc`), without taking a desktop's lock: both work while another process
drives it. Both block."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import libvirt

from app.core.errors import DesktopError
from app.desktops.libvirt.config import DEFAULT_URI, DOMAIN_PREFIX, LibvirtConfig, validate_name
from app.desktops.libvirt.connection import open_connection, state_name
from app.desktops.libvirt.domain import vnc_port
from app.desktops.libvirt.record import VmRecord
from app.rfb.client import VncEndpoint


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
        port = vnc_port(dom)
    finally:
        conn.close()
    if not port:
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
            d.name(): state_name(d.state()[0])
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
