"""What the Desktops screen writes: its help, rows, states, saved states, details and
VNC lines (no state of the screen's own)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from rich.markup import escape
from rich.text import Text

from app.desktops.inventory import BackendListing, SavedState, VmListing
from app.rfb.client import VncEndpoint
from app.ui.services.desktops import LibvirtDesktops, viewer_command
from app.ui.services.usage import Usage

HELP = """\
Every desktop of every backend: the ones this session made (**n**, and the one each
episode runs on), and every libvirt VM DeskLoop made (domains `deskloop-*`, made by
`deskloop vm`, `run` or another session), listed again every 3 seconds. When libvirtd
cannot be reached, one row says so and why. A local desktop is an Xvnc server on
127.0.0.1 with a random password, the openbox window manager and a throw-away home.

- **n** new desktop (starts it), **s** start a stopped one, **x** stop it.
- **c** create a VM: a name, a built image (`deskloop image list`), memory and
  vCPUs, then a confirmation; it is defined and booted by `deskloop vm create` and
  `deskloop vm start` in the background (a cold boot under software emulation takes
  a minute or more).
- **z** reset: a fresh session, as a task's episode starts from (a VM goes back to
  its boot state).
- **p** snapshot: save the running desktop (libvirt: a saved VM state); **b** back to
  a snapshot: the last one taken here, or for a VM made elsewhere a saved state you
  pick from a list (**↑/↓**, **enter**; **esc** cancels). The local backend has no
  snapshots and says so.
- **o** open in an external VNC viewer (TigerVNC's `vncviewer`); without one, DeskLoop
  serves noVNC on 127.0.0.1 and shows its URL (opened in your browser when there is a
  display); the page still asks the desktop's VNC password, which the URL carries in
  its fragment. The address and password for any viewer are shown below the table.
- **v** watch it live in the Live screen.
- **delete** remove: a desktop of this session that is not running leaves the
  list; a VM made elsewhere is deleted with its files (`deskloop vm rm`). Both
  ask first (**y** / **n**).
- Below the table, a desktop's CPU (percent of one core) and memory, every 2
  seconds: a local desktop's summed over its processes (from /proc); a running VM's
  from libvirt's domain stats (CPU time; QEMU's resident memory on this host, and
  the guest's own).

A VM made elsewhere is driven with `deskloop vm` commands run in the background,
so the TUI never locks it. One that another DeskLoop process drives (the note says
"in use by pid N") can be watched and opened in a viewer; its other actions wait
until that process lets go of it.
Starting, resetting and restoring take from seconds to minutes (a cold boot under
software emulation); they run in the background and the State and note columns show
progress.
"""


@dataclass(frozen=True)
class Row:
    key: str
    cells: tuple[str | Text, ...]


def state_text(state: str) -> Text:
    color = {"running": "green", "failed": "red", "unreachable": "red"}.get(state, "yellow")
    return Text(state, color)


def describe_state(state: SavedState) -> str:
    """A saved start state, for the restore picker."""
    if state.key == "boot":
        what = "boot: the desktop just after a cold boot"
    elif state.key.startswith("tui-"):
        what = f"{state.key}: a snapshot taken in the TUI"
    elif len(state.key) == 20 and all(c in "0123456789abcdef" for c in state.key):
        what = f"{state.key}: a task's start state (made by a run)"
    else:
        what = f"{state.key}: a snapshot (deskloop vm snapshot)"
    if state.saved is not None:
        what += time.strftime(" · saved %Y-%m-%d %H:%M", time.localtime(state.saved))
    return what


def address(vnc: VncEndpoint | None) -> str:
    return f"{vnc.host}:{vnc.port}" if vnc else "—"


def vnc_lines(vnc: VncEndpoint | None) -> list[str]:
    if vnc is None:
        return []
    lines = [
        f"VNC: {vnc.host}:{vnc.port} (display ::{vnc.port}) · password: {escape(vnc.password)}"
    ]
    if viewer_command() is None:
        lines.append(
            "[dim]no vncviewer installed: o serves noVNC for a browser, or use the address "
            "and password above[/dim]"
        )
    return lines


def notice_detail(listing: BackendListing | None) -> str:
    """The detail of the row that stands for the libvirt listing itself."""
    if listing is None:
        return "Listing the libvirt desktops…"
    return (
        f"[red]libvirt is not reachable[/red]: {escape(listing.error or '')}\n"
        "Local desktops work without it. Tried again every few seconds; "
        "DESKLOOP_LIBVIRT_URI names another libvirtd."
    )


def vm_detail(vm: VmListing, vms: LibvirtDesktops, usage: Usage | None) -> str:
    """The detail of a libvirt desktop made outside this session."""
    lines = [
        f"[b]{escape(vm.name)}[/b] · {vm.state} · domain {vm.domain} · image {vm.image} "
        f"· made outside this session"
    ]
    if usage is not None and vm.running:
        lines.append(usage.describe())
    operation = vms.operations.get(vm.name)
    if operation is not None:
        lines.append(f"busy {operation.doing}: {escape(operation.last)}")
    elif vm.name in vms.errors:
        lines.append(f"[red]{escape(vms.errors[vm.name])}[/red]")
    if vm.locked_by is not None:
        lines.append(
            f"in use by DeskLoop process {vm.locked_by}: watch (v) and a viewer (o) work; "
            "other actions wait for it"
        )
    lines += vnc_lines(vm.vnc)
    if vm.states:
        lines.append("saved states (b): " + ", ".join(s.key for s in vm.states))
    lines.append(f"files: {escape(str(vm.dir))}")
    return "\n".join(lines)


def vm_cells(vm: VmListing, vms: LibvirtDesktops) -> tuple[str | Text, ...]:
    """The table cells of a libvirt desktop made outside this session."""
    operation = vms.operations.get(vm.name)
    error = vms.errors.get(vm.name)
    if operation is not None:
        state, note = state_text(operation.doing), Text(operation.last, "dim")
    else:
        state, note = state_text(vm.state), Text(error or "", "red")
    if operation is None and not error:
        # Short, to fit at 100 columns; the detail pane says more.
        if vm.locked_by is not None:
            note = Text(f"in use by pid {vm.locked_by}", "yellow")
        else:
            count = len(vm.states)
            note = Text(f"{count} saved state{'' if count == 1 else 's'}", "dim")
    size = f"{vm.width}×{vm.height}" if vm.width and vm.height else "?"
    return (vm.name, "libvirt", vm.image, state, size, address(vm.vnc), "", note)
