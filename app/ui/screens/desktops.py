"""Desktops: every desktop of this session with its state and VNC address."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Footer, Header, Static

from app.ui.screens.base import LabScreen
from app.ui.session import DesktopPool, open_viewer, viewer_command


class DesktopsScreen(LabScreen):
    TITLE = "Desktops"
    HELP = """\
The desktops of this session: those you made here (**n**) and the one each
episode runs on. A local desktop is an Xvnc server on 127.0.0.1 with a random
password, the openbox window manager and a throw-away home folder.

- **n** new desktop (starts it), **s** start a stopped one, **x** stop it.
- **z** reset: a fresh session, as a task's episode starts from.
- **p** snapshot: save the running desktop (libvirt: a saved VM state); **b** back
  to the last snapshot taken here. The local backend has no snapshots and says so.
- **o** open in an external VNC viewer (TigerVNC's `vncviewer`); without one,
  the address and password to give any viewer are shown below the table.
- **v** watch it live in the Live screen.

Starting and resetting take a few seconds; they run in the background and the
State column shows progress.
"""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n", "new", "New"),
        Binding("s", "start", "Start"),
        Binding("x", "stop", "Stop"),
        Binding("z", "reset", "Reset"),
        Binding("p", "snapshot", "Snap"),
        Binding("b", "restore", "Restore"),
        Binding("o", "open_viewer", "VNC"),
        Binding("v", "view", "Watch"),
    ]

    class Changed(Message):
        """A desktop operation finished (or failed): redraw the table."""

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical():
            yield DataTable(id="desktop-table", cursor_type="row", zebra_stripes=True)
            yield Static("", id="desktop-detail")
        yield Footer(compact=True)

    @property
    def pool(self) -> DesktopPool:
        return self.lab.pool

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("name", "backend", "state", "size", "VNC address", "episode", "note")
        self.fill()
        self.set_interval(1.0, self.fill)
        table.focus()

    def on_screen_resume(self) -> None:
        self.fill()

    def fill(self) -> None:
        table = self.query_one(DataTable)
        selected = self.selected_name()
        table.clear()
        for name, entry in self.pool.entries.items():
            info = entry.info()
            state = entry.busy or info.state
            color = {"running": "green", "failed": "red"}.get(state, "yellow")
            address = f"{info.vnc.host}:{info.vnc.port}" if info.vnc else "—"
            table.add_row(
                name,
                info.backend,
                Text(state, color),
                f"{info.width}×{info.height}",
                address,
                str(entry.episode or ""),
                Text(entry.error or "", "red"),
                key=name,
            )
        if selected in self.pool.entries:
            table.move_cursor(row=list(self.pool.entries).index(selected))
        self.show_detail()

    def selected_name(self) -> str | None:
        table = self.query_one(DataTable)
        if table.row_count == 0:
            return None
        row = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
        return str(row.value) if row.value is not None else None

    def show_detail(self) -> None:
        detail = self.query_one("#desktop-detail", Static)
        name = self.selected_name()
        if name is None:
            detail.update(
                f"No desktops yet. Press n to start one ({self.pool.backend} backend), or start "
                "an episode from Tasks."
            )
            return
        info = self.pool.entries[name].info()
        lines = [f"[b]{name}[/b] · {info.state}"]
        if info.vnc:
            lines.append(
                f"VNC: {info.vnc.host}:{info.vnc.port} (display ::{info.vnc.port}) "
                f"· password: {info.vnc.password}"
            )
            if viewer_command() is None:
                lines.append(
                    "[dim]no vncviewer installed: use the address and password above[/dim]"
                )
        lines += [f"{key}: {value}" for key, value in info.details.items()]
        detail.update("\n".join(lines))

    def on_data_table_row_highlighted(self) -> None:
        self.show_detail()

    def _run(self, what: str, call: Callable[[], Awaitable[None]]) -> None:
        async def work() -> None:
            try:
                await call()
            finally:
                self.post_message(self.Changed())

        self.run_worker(work(), group="desktop-op", description=what, exit_on_error=False)
        self.fill()

    def on_desktops_screen_changed(self) -> None:
        self.fill()

    def _need(self) -> str | None:
        name = self.selected_name()
        if name is None:
            self.notify("No desktop selected.", severity="warning")
        return name

    def action_new(self) -> None:
        entry = self.pool.new()
        name = entry.info().name
        self._run(f"starting {name}", lambda: self.pool.start(name))

    def action_start(self) -> None:
        if name := self._need():
            self._run(f"starting {name}", lambda: self.pool.start(name))

    def action_stop(self) -> None:
        if name := self._need():
            self._run(f"stopping {name}", lambda: self.pool.stop(name))

    def action_reset(self) -> None:
        if name := self._need():
            self._run(f"resetting {name}", lambda: self.pool.reset(name))

    def action_snapshot(self) -> None:
        if name := self._need():

            async def take() -> None:
                key = await self.pool.snapshot(name)
                self.notify(f"Snapshot {key} of {name} saved.")

            self._run(f"snapshot of {name}", take)

    def action_restore(self) -> None:
        if name := self._need():

            async def restore() -> None:
                key = await self.pool.restore(name)
                self.notify(f"{name} is back at {key}.")

            self._run(f"restoring {name}", restore)

    def action_open_viewer(self) -> None:
        name = self._need()
        if name is None:
            return
        info = self.pool.entries[name].info()
        if info.vnc is None:
            self.notify(f"{name} is not running.", severity="warning")
            return
        if viewer_command() is None:
            self.notify(
                f"No vncviewer installed. Connect a viewer to {info.vnc.host}:{info.vnc.port}, "
                f"password {info.vnc.password}",
                timeout=15,
            )
            return
        from app.errors import DesktopError

        try:
            open_viewer(info.vnc)
        except DesktopError as exc:
            self.notify(str(exc), severity="error", timeout=10)

    def action_view(self) -> None:
        if name := self._need():
            self.lab.watch_desktop(name)
