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
`meta.json` stay here. VNC and guest SSH are tunnelled (`host.RemoteHost`).

Frames and input go over QEMU's VNC server (127.0.0.1, password) through the same
RFB client as the local backend; the guest channel is SSH (`SSHGuest`). Lifecycle
changes arrive as libvirt events on a thread running libvirt's default event loop,
never by polling.

The modules, each with its own concern:

- `host`: the machine the libvirt daemon runs on, this one or a remote one over SSH;
- `config`: `LibvirtConfig`, KVM or TCG (`detect_virt_type`), desktop names, and
  the recipe templates (`fill_template`);
- `connection`: the libvirt connection with its event loop, and `DomainWatch`
  (a domain's state from lifecycle events);
- `network`: the shared isolated network and each desktop's fixed DHCP address;
- `record`: `vm.json` (`VmRecord`) and the folder lock;
- `domain`: the domain's XML, defined from `vm_images/domain.xml` and read back;
- `states`: saved start states (`StartState`, `state_key`) and where their files are;
- `link`: the VNC and SSH connections to a running domain;
- `desktop`: `LibvirtDesktop`, which drives the others through a desktop's life;
- `watch` and `guest_watch`: the integrity watch, read from the guest's logs after an
  episode;
- `listing`: the desktops that exist (`list_vms`) and `reach_vnc`;
- `actions`: one `deskloop vm` action in a child process, reporting as JSON lines
  (`python -m app.desktops.libvirt`, for the TUI through `inventory`).

May import the shared modules above it and `remote` (SSH to its guests and remote
hosts); never `local` or `web` directly (an import-linter contract holds it).
"""

from app.desktops.libvirt.config import (
    DEFAULT_IMAGE,
    DEFAULT_SUBNET,
    DEFAULT_URI,
    DOMAIN_PREFIX,
    TCG_TIME_SCALE,
    LibvirtConfig,
    detect_virt_type,
    validate_name,
)
from app.desktops.libvirt.connection import open_connection
from app.desktops.libvirt.desktop import LibvirtDesktop
from app.desktops.libvirt.link import QEMU_TYPE_DELAY
from app.desktops.libvirt.listing import VmSummary, list_vms, reach_vnc
from app.desktops.libvirt.network import NETWORK_BRIDGE, NETWORK_NAME, ensure_network
from app.desktops.libvirt.record import VmRecord
from app.desktops.libvirt.states import BOOT_STATE, StartState, state_key

__all__ = [
    "BOOT_STATE",
    "DEFAULT_IMAGE",
    "DEFAULT_SUBNET",
    "DEFAULT_URI",
    "DOMAIN_PREFIX",
    "NETWORK_BRIDGE",
    "NETWORK_NAME",
    "QEMU_TYPE_DELAY",
    "TCG_TIME_SCALE",
    "LibvirtConfig",
    "LibvirtDesktop",
    "StartState",
    "VmRecord",
    "VmSummary",
    "detect_virt_type",
    "ensure_network",
    "list_vms",
    "open_connection",
    "reach_vnc",
    "state_key",
    "validate_name",
]
