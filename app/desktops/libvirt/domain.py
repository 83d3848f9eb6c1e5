"""A desktop's libvirt domain as XML: what is defined from `vm_images/domain.xml`, and
what is read back from a running domain's live XML. Every function blocks."""

from __future__ import annotations

import contextlib
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import libvirt

from app.core.errors import DesktopError
from app.desktops.libvirt.config import fill_template
from app.desktops.libvirt.host import ImageFiles
from app.desktops.libvirt.network import NETWORK_NAME
from app.desktops.libvirt.record import VmRecord


@dataclass(frozen=True)
class DomainPlace:
    """Where a domain's files are on the libvirt host, and whom QEMU runs as there."""

    vm_dir: str
    disk: str
    console_log: str
    uid: int
    gid: int


def domain_xml(
    record: VmRecord,
    domain: str,
    files: ImageFiles,
    place: DomainPlace,
    ssh_public_key: str,
    recipes: Path,
) -> str:
    """The XML that defines desktop `record` as libvirt domain `domain`."""
    cmdline = " ".join(
        [
            "root=/dev/vda",
            "rw",
            "console=ttyS0",
            "quiet",
            "consoleblank=0",
            "mitigations=off",
            # The VGA's DRM driver, loaded early by systemd-modules-load rather than
            # left to udev's device events: with eight guests booting on two cores, two
            # guests' udev never loaded it, and Xorg found no screen, restarting forever.
            "modules_load=bochs",
            f"deskloop.geometry={record.width}x{record.height}",
            f"deskloop.sshkey={ssh_public_key}",
        ]
    )
    tcg = "<tcg><tb-cache unit='MiB'>256</tb-cache></tcg>" if record.virt_type == "qemu" else ""
    xml = fill_template(
        recipes / "domain.xml",
        {
            "virt_type": record.virt_type,
            "name": domain,
            "image": record.image,
            "recipe_hash": record.recipe_hash,
            "vm_dir": place.vm_dir,
            "memory_mib": str(record.memory_mib),
            "vcpus": str(record.vcpus),
            "kernel": files.kernel,
            "initrd": files.initrd,
            "cmdline": cmdline,
            "tcg_features": "@TCG@",
            "disk": place.disk,
            "network": NETWORK_NAME,
            "mac": record.mac,
            "vnc_password": record.vnc_password,
            "console_log": place.console_log,
            "uid": str(place.uid),
            "gid": str(place.gid),
        },
    )
    # The features element is XML, not text: put it in after escaping the rest.
    return xml.replace("@TCG@", tcg)


def define_domain(conn: libvirt.virConnect, domain: str, xml: str) -> libvirt.virDomain:
    """Define `domain` from `xml`, or redefine it keeping its identity.

    Raises:
        DesktopError: libvirt refused the definition.
    """
    with contextlib.suppress(libvirt.libvirtError):
        # Redefining keeps the domain's identity: libvirt wants its UUID.
        uuid = conn.lookupByName(domain).UUIDString()
        xml = xml.replace("</name>", f"</name>\n  <uuid>{uuid}</uuid>", 1)
    try:
        return conn.defineXML(xml)
    except libvirt.libvirtError as exc:
        raise DesktopError(f"cannot define the domain {domain}: {exc}") from exc


def undefine_domain(dom: libvirt.virDomain) -> None:
    """Forget the domain with whatever libvirt keeps beside it (best effort)."""
    flags = (
        libvirt.VIR_DOMAIN_UNDEFINE_MANAGED_SAVE
        | libvirt.VIR_DOMAIN_UNDEFINE_SNAPSHOTS_METADATA
        | libvirt.VIR_DOMAIN_UNDEFINE_NVRAM
    )
    with contextlib.suppress(libvirt.libvirtError):
        dom.undefineFlags(flags)


def vnc_port(dom: libvirt.virDomain) -> int:
    """QEMU's VNC port on the libvirt host, from the live XML (QEMU picks it at each
    start); 0 when the domain has none (not running)."""
    graphics = ET.fromstring(dom.XMLDesc(0)).find("./devices/graphics[@type='vnc']")
    port = int(graphics.get("port", "-1")) if graphics is not None else -1
    return max(port, 0)
