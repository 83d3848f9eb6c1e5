"""The isolated network all libvirt desktops share, and each desktop's fixed address
on it (a DHCP host entry for its MAC). Every function blocks."""

from __future__ import annotations

import contextlib
import hashlib
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import libvirt

from app.core.errors import DesktopError
from app.desktops.libvirt.config import fill_template
from app.desktops.libvirt.host import VmHost
from app.vmimages.recipes import RECIPES_DIR

NETWORK_NAME = "deskloop-net"
NETWORK_BRIDGE = "deskloop0"

_NETWORK_UPDATE_FLAGS = (
    libvirt.VIR_NETWORK_UPDATE_AFFECT_LIVE | libvirt.VIR_NETWORK_UPDATE_AFFECT_CONFIG
)


def ensure_network(conn: libvirt.virConnect, subnet: str, recipes: Path = RECIPES_DIR) -> None:
    """Define (once) and start the isolated network all desktops share (blocking)."""
    try:
        net = conn.networkLookupByName(NETWORK_NAME)
    except libvirt.libvirtError:
        xml = fill_template(
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


def _leased_addresses(net: libvirt.virNetwork) -> dict[str, str]:
    """IP → MAC of the network's current DHCP leases."""
    try:
        leases = net.DHCPLeases()
    except libvirt.libvirtError:
        return {}
    return {str(lease["ipaddr"]): str(lease["mac"]).lower() for lease in leases}


def reserve_address(conn: libvirt.virConnect, mac: str, name: str, subnet: str) -> str:
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


def release_address(conn: libvirt.virConnect, mac: str, host: VmHost) -> None:
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
