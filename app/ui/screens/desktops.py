"""Desktops: this session's desktops and every libvirt desktop DeskLoop made."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import ClassVar

from rich.markup import escape
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Header, Static

from app.core.errors import DesktopError
from app.core.opener import open_in_browser
from app.desktops.base import MarksProcesses
from app.desktops.inventory import VmListing
from app.rfb.client import VncEndpoint
from app.ui.modals import ChoiceScreen, ConfirmScreen
from app.ui.screens.base import LabFooter, LabScreen
from app.ui.screens.desktop_text import (
    HELP,
    Row,
    address,
    describe_state,
    notice_detail,
    state_text,
    vm_cells,
    vm_detail,
    vnc_lines,
)
from app.ui.screens.vm_create import CreateVmScreen, question, suggest_name
from app.ui.services.desktops import (
    DesktopPool,
    LibvirtDesktops,
    VmRequest,
    built_images,
    open_viewer,
    snapshot_key,
    viewer_command,
)
from app.ui.services.usage import Usage, UsageSampler, VmUsageSampler

USAGE_EVERY = 2.0
"""Seconds between samples of the desktops' CPU and memory (local and VMs)."""
LIST_EVERY = 3.0
"""Seconds between listings of the libvirt desktops while the screen shows."""

NOTICE_KEY = "libvirt:"
"""Row key of the line that stands for the libvirt listing itself (pending, failed)."""
VM_KEY = "vm:"
"""Row keys of libvirt desktops made outside this session start with this."""


class DesktopsScreen(LabScreen):
    TITLE = "Desktops"
    HELP = HELP
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n", "new", "New"),
        Binding("c", "create_vm", "New VM", show=False),
        Binding("s", "start", "Start"),
        Binding("x", "stop", "Stop"),
        Binding("z", "reset", "Reset"),
        Binding("p", "snapshot", "Snap"),
        Binding("b", "restore", "Restore"),
        Binding("o", "open_viewer", "VNC"),
        Binding("v", "view", "Watch"),
        Binding("delete", "remove", "Remove", show=False),
    ]

    class Changed(Message):
        """A desktop operation or a listing finished (or failed): redraw the table."""

    def __init__(self) -> None:
        super().__init__()
        self.sampler = UsageSampler()
        self.vm_sampler = VmUsageSampler(lambda: self.vms.stats())
        self.usage: dict[str, Usage] = {}
        """The last CPU and memory sample of each running desktop: a local one by
        name, a VM made elsewhere by its row key (VM_KEY + name)."""
        self._select: str | None = None
        """A row to select once it appears (a VM being created)."""

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical():
            yield DataTable(id="desktop-table", cursor_type="row", zebra_stripes=True)
            yield Static("", id="desktop-detail")
        yield LabFooter()

    @property
    def pool(self) -> DesktopPool:
        return self.lab.pool

    @property
    def vms(self) -> LibvirtDesktops:
        return self.lab.vms

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns(
            "name", "backend", "image", "state", "size", "VNC address", "episode", "note"
        )
        self.fill()
        self.set_interval(1.0, self.fill)
        self.set_interval(LIST_EVERY, self._list_again)
        self.set_interval(USAGE_EVERY, self._sample_usage)
        self._sample_usage()
        self.lab.refresh_vms()
        table.focus()

    def on_screen_resume(self) -> None:
        self.lab.refresh_vms()
        self.fill()

    def _list_again(self) -> None:
        if self.is_current:
            self.lab.refresh_vms()

    def _sample_usage(self) -> None:
        markers = {}
        for name, entry in self.pool.entries.items():
            desktop = entry.desktop
            if not isinstance(desktop, MarksProcesses):
                continue
            marker = desktop.marker
            if marker is not None and entry.info().state == "running":
                markers[name] = marker
        listing = self.vms.listing
        vms = listing is not None and any(vm.running for vm in listing.desktops)
        # This session's VMs are measured like the others (by their row key's name).
        vms |= self.pool.backend == "libvirt" and any(
            e.info().state == "running" for e in self.pool.entries.values()
        )
        if markers or vms or self.usage:
            self._sample(markers, vms)

    @work(thread=True, exclusive=True, group="desktop-usage", exit_on_error=False,
          description="reading CPU and memory")  # fmt: skip
    def _sample(self, markers: dict[str, str], vms: bool) -> None:
        """Read /proc (every process's environment) and libvirtd in a thread."""
        usage = {name: self.sampler.sample(marker) for name, marker in markers.items()}
        if vms:
            usage |= {VM_KEY + name: u for name, u in self.vm_sampler.sample().items()}
        self.app.call_from_thread(self._show_usage, usage)

    def _show_usage(self, usage: dict[str, Usage]) -> None:
        self.usage = usage
        self.show_detail()

    # -- the table ------------------------------------------------------------------

    def rows(self) -> list[Row]:
        rows = []
        for name, entry in self.pool.entries.items():
            info = entry.info()
            rows.append(
                Row(
                    name,
                    (
                        name,
                        info.backend,
                        info.details.get("image", "—"),
                        state_text(entry.busy or info.state),
                        f"{info.width}×{info.height}",
                        address(info.vnc),
                        str(entry.episode or ""),
                        Text(entry.error or "", "red"),
                    ),
                )
            )
        listing = self.vms.listing
        if listing is None:
            rows.append(Row(NOTICE_KEY, ("libvirt", "libvirt", "", state_text("listing…"))))
        elif listing.error is not None:
            note = Text(listing.error, "red")
            cells = ("libvirt", "libvirt", "", state_text("unreachable"), "", "", "", note)
            rows.append(Row(NOTICE_KEY, cells))
        else:
            for name in self.vms.pending():
                op = self.vms.operations[name]
                last = Text(op.last, "dim")
                rows.append(
                    Row(
                        VM_KEY + name, (name, "libvirt", "", state_text(op.doing), "", "", "", last)
                    )
                )
            for vm in listing.desktops:
                # A desktop this session drives is shown once, as this session's.
                if self.pool.backend == "libvirt" and vm.name in self.pool.entries:
                    continue
                rows.append(Row(VM_KEY + vm.name, vm_cells(vm, self.vms)))
        return rows

    def fill(self, select: str | None = None) -> None:
        """Rebuild the table, keeping the selected row (or selecting `select`, now or,
        for a VM being created, as soon as its row appears)."""
        table = self.query_one(DataTable)
        self._select = select or self._select
        rows = self.rows()
        keys = [row.key for row in rows]
        selected = self._select if self._select in keys else self.selected_key()
        if selected == self._select:
            self._select = None
        table.clear()
        for row in rows:
            cells = row.cells + ("",) * (8 - len(row.cells))
            table.add_row(*cells, key=row.key)
        if selected in keys:
            table.move_cursor(row=keys.index(selected))
        self.show_detail()

    def selected_key(self) -> str | None:
        table = self.query_one(DataTable)
        if table.row_count == 0:
            return None
        row = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
        return str(row.value) if row.value is not None else None

    def selected_name(self) -> str | None:
        """The selected desktop of this session, if that is what is selected."""
        key = self.selected_key()
        return key if key is not None and key in self.pool.entries else None

    def selected_vm(self) -> VmListing | None:
        """The selected libvirt desktop made outside this session, if that is selected."""
        key = self.selected_key()
        if key is None or not key.startswith(VM_KEY):
            return None
        return self.vms.get(key[len(VM_KEY) :])

    def show_detail(self) -> None:
        detail = self.query_one("#desktop-detail", Static)
        key = self.selected_key()
        if key == NOTICE_KEY:
            detail.update(notice_detail(self.vms.listing))
            return
        vm = self.selected_vm()
        if vm is not None:
            detail.update(vm_detail(vm, self.vms, self.usage.get(VM_KEY + vm.name)))
            return
        if key is not None and key.startswith(VM_KEY):  # being created: not listed yet
            operation = self.vms.operations.get(key[len(VM_KEY) :])
            detail.update(f"{escape(key[len(VM_KEY) :])} · {operation.doing if operation else ''}")
            return
        name = self.selected_name()
        if name is None:
            detail.update(
                f"No desktops yet. Press n to start one ({self.pool.backend} backend), or start "
                "an episode from Tasks."
            )
            return
        entry = self.pool.entries[name]
        info = entry.info()
        lines = [f"[b]{escape(name)}[/b] · {info.state} · made in this session"]
        if entry.progress and info.state != "running":
            lines.append(escape(entry.progress))
        usage = self.usage.get(name) or self.usage.get(VM_KEY + name)  # local, or a VM
        if usage is not None and info.state == "running":
            lines.append(usage.describe())
        session = self.lab.episode_on(name)
        if session is None:
            lines += vnc_lines(info.vnc)
        else:
            # The desktop's own address would let input around the recording proxy.
            person_input = session.person_input
            proxy = None if person_input is None else person_input.endpoint
            lines.append("An episode runs here: viewers connect through its recording proxy.")
            lines += vnc_lines(proxy) if proxy is not None else ["o opens a viewer through it."]
        served = self.lab.novnc.serving(name)
        if served is not None:
            lines.append(f"noVNC: {escape(served.url)}")
        lines += [f"{key}: {escape(value)}" for key, value in info.details.items()]
        detail.update("\n".join(lines))

    def on_data_table_row_highlighted(self) -> None:
        self.show_detail()

    def on_desktops_screen_changed(self) -> None:
        self.fill()

    # -- actions ------------------------------------------------------------------

    def _run(self, what: str, call: Callable[[], Awaitable[None]]) -> None:
        async def work() -> None:
            try:
                await call()
            finally:
                self.post_message(self.Changed())
                self.lab.refresh_vms()

        self.run_worker(work(), group="desktop-op", description=what, exit_on_error=False)
        self.fill()

    def _target(self) -> str | VmListing | None:
        """The selected session desktop's name, or the selected VM made elsewhere;
        None (after saying why) when neither is selected."""
        name = self.selected_name()
        if name is not None:
            return name
        vm = self.selected_vm()
        if vm is not None:
            return vm
        if self.selected_key() == NOTICE_KEY:
            listing = self.vms.listing
            why = listing.error if listing and listing.error else "still listing them"
            self.notify(f"No libvirt desktop to act on: {why}", severity="warning", timeout=8)
        else:
            self.notify("No desktop selected.", severity="warning")
        return None

    def _vm_op(self, vm: VmListing, doing: str, action: str, *args: str) -> None:
        """Run `deskloop vm ACTION` on `vm`, or say at once why it would be refused."""
        try:
            self.vms.check_free(vm.name)
        except DesktopError as exc:
            self.notify(str(exc), severity="warning", timeout=8)
            return
        self._run(f"{doing} {vm.name}", lambda: self.vms.run(vm.name, doing, action, *args))

    def action_new(self) -> None:
        entry = self.pool.new()
        name = entry.info().name
        self._run(f"starting {name}", lambda: self.pool.start(name))
        self.fill(select=name)

    @work(thread=True, exclusive=True, group="vm-images", exit_on_error=False,
          description="listing the built images")  # fmt: skip
    def action_create_vm(self) -> None:
        """Read the image cache in a thread, then ask for the VM (c)."""
        images = built_images()
        self.app.call_from_thread(self._show_create, images)

    def _show_create(self, images: list[tuple[str, int]]) -> None:
        if not images:
            self.notify(
                "No VM image is built: `deskloop image build gimp` (or blender, kdenlive).",
                severity="warning",
                timeout=10,
            )
            return
        taken = {vm.name for vm in self.vms.listing.desktops} if self.vms.listing else set()
        self.app.push_screen(
            CreateVmScreen(images, self.vms.check_new, suggest_name(taken)), self._confirm_create
        )

    def _confirm_create(self, request: VmRequest | None) -> None:
        if request is None:
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                self._run(f"creating {request.name}", lambda: self.vms.create(request))
                self.fill(select=VM_KEY + request.name)

        self.app.push_screen(ConfirmScreen("Create VM", question(request), "Create"), confirmed)

    def action_start(self) -> None:
        target = self._target()
        if isinstance(target, str):
            self._run(f"starting {target}", lambda: self.pool.start(target))
        elif target is not None:
            if target.running:
                self.notify(
                    f"{target.name} is already running (z resets it to its boot state).",
                    severity="warning",
                )
                return
            self._vm_op(target, "starting", "start")

    def action_stop(self) -> None:
        target = self._target()
        if isinstance(target, str):
            self._run(f"stopping {target}", lambda: self.pool.stop(target))
        elif target is not None:
            if target.state in ("shut off", "undefined"):
                self.notify(f"{target.name} is not running.", severity="warning")
                return
            self._vm_op(target, "stopping", "stop")

    def action_reset(self) -> None:
        target = self._target()
        if isinstance(target, str):
            self._run(f"resetting {target}", lambda: self.pool.reset(target))
        elif target is not None:
            # `deskloop vm start` restores the boot state (a running VM included).
            self._vm_op(target, "resetting", "start")

    def action_snapshot(self) -> None:
        target = self._target()
        if isinstance(target, str):
            name = target
            limitation = self.pool.cannot_snapshot(name)
            if limitation is not None:
                # A documented limitation, said as such: not an error dialog.
                self.notify(limitation, title="No snapshots here", timeout=8)
                return

            async def take() -> None:
                key = await self.pool.snapshot(name)
                self.notify(f"Snapshot {key} of {name} saved.")

            self._run(f"snapshot of {name}", take)
        elif target is not None:
            if not target.running:
                self.notify(f"{target.name} is not running: nothing to save.", severity="warning")
                return
            self._vm_op(target, "saving a snapshot", "snapshot", snapshot_key())

    def action_restore(self) -> None:
        target = self._target()
        if isinstance(target, str):
            name = target
            limitation = self.pool.cannot_snapshot(name)
            if limitation is not None:
                self.notify(limitation, title="No snapshots here", timeout=8)
                return

            async def restore() -> None:
                key = await self.pool.restore(name)
                self.notify(f"{name} is back at {key}.")

            self._run(f"restoring {name}", restore)
        elif target is not None:
            vm = target
            if not vm.states:
                self.notify(f"{vm.name} has no saved state (p takes one).", severity="warning")
                return

            def chosen(key: str | None) -> None:
                if key is not None:
                    self._vm_op(vm, f"restoring {key}", "revert", key)

            choices = [(s.key, describe_state(s)) for s in vm.states]
            self.app.push_screen(
                ChoiceScreen(f"Restore {vm.name}", "Back to which saved state?", choices),
                chosen,
            )

    def action_remove(self) -> None:
        target = self._target()
        if isinstance(target, str):
            name = target
            try:
                self.pool.get(name)
                if self.pool.entries[name].info().state in ("running", "starting"):
                    raise DesktopError(f"{name} is running: stop it (x) before removing it")
            except DesktopError as exc:
                self.notify(str(exc), severity="warning", timeout=8)
                return

            def confirmed(yes: bool | None) -> None:
                if yes:
                    try:
                        self.pool.remove(name)
                    except DesktopError as exc:  # it changed while the question was open
                        self.notify(str(exc), severity="warning", timeout=8)
                    self.fill()

            question = f"Take {name} off the list? It is not running and holds nothing."
            self.app.push_screen(ConfirmScreen("Remove desktop", question, "Remove"), confirmed)
        elif target is not None:
            vm = target

            def delete(yes: bool | None) -> None:
                if yes:
                    self._vm_op(vm, "removing", "rm")

            question = (
                f"Delete the VM {vm.name} (domain {vm.domain}), its disk overlay, its "
                f"{len(vm.states)} saved state(s) and its files? This cannot be undone."
            )
            self.app.push_screen(ConfirmScreen("Delete VM", question, "Delete"), delete)

    def action_open_viewer(self) -> None:
        target = self._target()
        if target is None:
            return
        if isinstance(target, str):
            # While an episode runs there, through its recording proxy (async: it may
            # start the proxy).
            self._open_pool_viewer(target)
            return
        self._open_viewer_on(target.name, target.vnc)

    @work(exclusive=True, group="viewer", exit_on_error=False)
    async def _open_pool_viewer(self, name: str) -> None:
        self._open_viewer_on(name, await self.lab.viewer_endpoint(name))

    def _open_viewer_on(self, name: str, vnc: VncEndpoint | None) -> None:
        if vnc is None:
            self.notify(f"{name} is not running.", severity="warning")
            return
        if viewer_command() is None:
            # No native viewer: serve noVNC (a process start and a wait, off the loop).
            self._open_novnc(name, vnc)
            return
        try:
            open_viewer(vnc)
        except DesktopError as exc:
            self.notify(str(exc), severity="error", timeout=10)

    @work(thread=True, exclusive=True, group="novnc", exit_on_error=False)
    def _open_novnc(self, name: str, vnc: VncEndpoint) -> None:
        try:
            server = self.lab.novnc.serve(name, vnc)
        except DesktopError as exc:
            self.app.call_from_thread(
                self.notify,
                f"{exc}. Connect any VNC viewer to {vnc.host}:{vnc.port}, password {vnc.password}",
                severity="error",
                timeout=15,
            )
            return
        opened = open_in_browser(server.url)
        where = "Opened in your browser" if opened else "Open in a browser on this machine"
        self.app.call_from_thread(
            self.notify, f"{where}: {server.url}", title=f"noVNC for {name}", timeout=30
        )

    def action_view(self) -> None:
        target = self._target()
        if isinstance(target, str):
            self.lab.watch_desktop(target)
        elif target is not None:
            if target.vnc is None:
                self.notify(f"{target.name} is not running (s starts it).", severity="warning")
                return
            self.lab.watch_desktop(target.name)
