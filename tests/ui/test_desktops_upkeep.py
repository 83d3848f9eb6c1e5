"""Desktops like virt-manager: CPU and memory of a real local desktop (from /proc),
taking a closed desktop off the list, and deleting a VM made elsewhere, each after a
confirmation."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from app.ui.modals import ConfirmScreen, ErrorScreen
from app.ui.screens.desktops import DesktopsScreen
from tests.ui.helpers import LISTING, wait_until
from tests.ui.test_desktops import desktops_app, gate, no_libvirt, notes, rows

__all__ = ["gate", "no_libvirt"]  # the fixtures, used by name below


async def test_a_local_desktop_shows_cpu_and_memory_and_leaves_the_list(
    tmp_path: Path, no_libvirt: None
) -> None:
    async with desktops_app(tmp_path, lambda: LISTING) as (app, pilot, screen, table, seen):
        await wait_until(pilot, lambda: table.row_count == 3, 5, "the VMs")
        await pilot.press("n")
        name = next(iter(app.pool.entries))
        await wait_until(
            pilot, lambda: app.pool.entries[name].info().state == "running", 60, "the desktop"
        )
        await wait_until(pilot, lambda: screen.selected_name() == name, 5, "it selected")
        detail = screen.query_one("#desktop-detail", Static)

        def measured() -> bool:
            usage = screen.usage.get(name)
            return usage is not None and usage.cpu_percent is not None

        await wait_until(pilot, measured, 15, "two samples of its processes")
        usage = screen.usage[name]
        # Xvnc and openbox at least, tens of MiB between them.
        assert (usage.processes or 0) >= 2 and usage.memory_bytes > 5 * 2**20
        assert 0 <= (usage.cpu_percent or 0) < 100 * 16
        await wait_until(pilot, lambda: "MiB" in str(detail.render()), 5, "the detail")
        assert "CPU" in str(detail.render()) and "processes" in str(detail.render())

        await pilot.press("delete")  # running: refused, with the reason
        await wait_until(pilot, lambda: any("stop it (x)" in n for n in notes(seen)), 5, "why")
        assert isinstance(app.screen, DesktopsScreen) and name in app.pool.entries

        await pilot.press("x")
        await wait_until(
            pilot, lambda: app.pool.entries[name].info().state != "running", 30, "stopped"
        )
        await wait_until(pilot, lambda: not app.pool.entries[name].busy, 30, "the stop done")
        await pilot.press("delete")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), 5, "the question")
        await pilot.press("n")  # no: it stays
        await wait_until(pilot, lambda: isinstance(app.screen, DesktopsScreen), 5, "back")
        assert name in app.pool.entries
        await pilot.press("delete")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), 5, "the question")
        await pilot.press("y")
        await wait_until(pilot, lambda: name not in [r[0] for r in rows(table)], 5, "removed")
        assert name not in app.pool.entries and table.row_count == 3


async def test_deleting_a_vm_made_elsewhere_asks_then_runs_deskloop_vm_rm(
    tmp_path: Path, no_libvirt: None, gate: Path
) -> None:
    async with desktops_app(tmp_path, lambda: LISTING) as (app, pilot, _screen, table, _seen):
        await wait_until(pilot, lambda: table.row_count == 3, 5, "the VMs")
        await pilot.press("delete")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), 5, "the question")
        assert "Delete the VM alpha" in " ".join(str(w.render()) for w in app.screen.query(Static))
        await pilot.press("n")
        await wait_until(pilot, lambda: isinstance(app.screen, DesktopsScreen), 5, "back")
        assert not app.vms.operations
        await pilot.press("delete")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), 5, "the question")
        await pilot.press("y")
        await wait_until(pilot, lambda: "alpha" in app.vms.operations, 5, "the operation")
        assert app.vms.operations["alpha"].doing == "removing"
        # The child talks to the unreachable libvirtd: its error is the dialog's.
        gate.touch()
        await wait_until(pilot, lambda: isinstance(app.screen, ErrorScreen), 60, "the error")
        text = app.screen.text  # type: ignore[attr-defined]
        assert "deskloop vm rm alpha" in text and "/nonexistent/libvirt-sock" in text
