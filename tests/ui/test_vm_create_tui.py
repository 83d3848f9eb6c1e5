"""Creating a VM from the Desktops screen (the dialog, its checks, the confirmation,
the `deskloop vm create` child) and a running VM's CPU and memory figures.

The screen tests give the app a fixed listing and a libvirtd that is not there (they
are about the screen's logic); tests/vm/test_vm_create.py creates and boots a real VM
through the same service.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from textual.widgets import Button, Checkbox, Input, Select, Static

from app.core.errors import DesktopError
from app.desktops.inventory import VmStats
from app.ui.modals import ConfirmScreen, ErrorScreen
from app.ui.screens.desktops import VM_KEY, DesktopsScreen
from app.ui.screens.vm_create import CreateVmScreen
from app.ui.services.desktops import VmRequest
from app.ui.services.usage import VmUsageSampler
from tests.ui.helpers import LISTING, wait_until
from tests.ui.test_desktops import desktops_app, gate, no_libvirt, notes, rows

__all__ = ["gate", "no_libvirt"]  # the fixtures, used by name below


def built(cache: Path, name: str, memory_mib: int) -> None:
    """An image as the cache holds a built one (the dialog only reads manifests)."""
    folder = cache / "images" / f"{name}-0123"
    folder.mkdir(parents=True)
    for file in ("disk.qcow2", "vmlinuz", "initrd.img"):
        (folder / file).write_bytes(b"")
    manifest = {"dir": folder.name, "recipe_hash": "0123", "memory_mib": memory_mib}
    (cache / "images" / f"{name}.json").write_text(json.dumps(manifest))


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    folder.mkdir()
    monkeypatch.setenv("DESKLOOP_CACHE", str(folder))
    return folder


def dialog_error(screen: CreateVmScreen) -> str:
    return str(screen.query_one("#vm-error", Static).render())


async def test_a_vm_is_asked_for_checked_confirmed_and_created_through_deskloop_vm(
    tmp_path: Path, no_libvirt: None, cache: Path, gate: Path
) -> None:
    built(cache, "blender", 2048)
    built(cache, "kdenlive", 3072)
    async with desktops_app(tmp_path, lambda: LISTING) as (app, pilot, screen, table, seen):
        await wait_until(pilot, lambda: table.row_count == 3, 5, "the VMs")
        await pilot.press("c")
        await wait_until(pilot, lambda: isinstance(app.screen, CreateVmScreen), 5, "the dialog")
        dialog = app.screen
        assert isinstance(dialog, CreateVmScreen)
        image = dialog.query_one("#vm-image", Select)
        assert image.value == "blender" and list(dialog.images) == ["blender", "kdenlive"]
        memory = dialog.query_one("#vm-memory", Input)
        assert memory.placeholder == "2048"  # the image's default
        image.value = "kdenlive"
        await wait_until(pilot, lambda: memory.placeholder == "3072", 5, "kdenlive's memory")
        name = dialog.query_one("#vm-name", Input)
        assert name.value == "vm1"  # a free name is suggested

        # Every field is checked in the dialog, which stays open and says why.
        name.value = "alpha"  # listed already
        await pilot.press("enter")  # in the name field: Create
        await wait_until(pilot, lambda: "exists already" in dialog_error(dialog), 5, "why")
        name.value = "no spaces"
        await pilot.press("enter")
        await wait_until(pilot, lambda: "use 1-40 letters" in dialog_error(dialog), 5, "why")
        name.value, memory.value = "fresh", "100"
        await pilot.press("enter")
        await wait_until(pilot, lambda: "at least 512 MiB" in dialog_error(dialog), 5, "why")
        memory.value = "1024"
        dialog.query_one("#vm-vcpus", Input).value = "999"
        await pilot.press("enter")
        await wait_until(pilot, lambda: "this host's cores" in dialog_error(dialog), 5, "why")
        dialog.query_one("#vm-vcpus", Input).value = "1"
        assert dialog.query_one("#vm-start", Checkbox).value  # booted by default
        assert dialog.request() == VmRequest("fresh", "kdenlive", 1024, 1, True)

        dialog.query_one("#create", Button).press()
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), 5, "the question")
        question = " ".join(str(w.render()) for w in app.screen.query(Static))
        assert "Create the VM fresh from image kdenlive, 1024 MiB, 1 vCPUs" in question
        await pilot.press("n")  # no: nothing is created
        await wait_until(pilot, lambda: isinstance(app.screen, DesktopsScreen), 5, "back")
        assert not app.vms.operations and table.row_count == 3

        await pilot.press("c")
        await wait_until(pilot, lambda: isinstance(app.screen, CreateVmScreen), 5, "the dialog")
        again = app.screen
        again.query_one("#vm-name", Input).value = "fresh"
        again.query_one("#vm-image", Select).value = "kdenlive"
        again.query_one("#vm-memory", Input).value = "1024"
        again.query_one("#vm-vcpus", Input).value = "1"
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), 5, "the question")
        await pilot.press("y")
        await wait_until(pilot, lambda: "fresh" in app.vms.operations, 5, "the operation")
        assert app.vms.operations["fresh"].doing == "creating"
        # Not listed yet, it has its own row, selected, while the child runs.
        await wait_until(pilot, lambda: rows(table)[0][:2] == ["fresh", "libvirt"], 5, "its row")
        assert screen.selected_key() == VM_KEY + "fresh" and rows(table)[0][3] == "creating"
        # A second VM of that name is refused while the first is being made.
        with pytest.raises(DesktopError, match="exists already"):
            app.vms.check_new("fresh")
        # The child talks to the unreachable libvirtd: its error is the dialog's, and
        # names the command that does the same.
        gate.touch()
        await wait_until(pilot, lambda: isinstance(app.screen, ErrorScreen), 60, "the error")
        text = app.screen.text  # type: ignore[attr-defined]
        assert "deskloop vm create fresh --image kdenlive --memory 1024 --vcpus 1" in text
        assert "/nonexistent/libvirt-sock" in text
        await pilot.press("escape")
        await wait_until(pilot, lambda: not app.vms.operations, 5, "the operation over")
        await wait_until(pilot, lambda: table.row_count == 3, 5, "its row gone")
        assert not any(n.startswith("No VM image") for n in notes(seen))


async def test_without_a_built_image_the_dialog_says_how_to_build_one(
    tmp_path: Path, no_libvirt: None, cache: Path
) -> None:
    async with desktops_app(tmp_path, lambda: LISTING) as (app, pilot, _screen, table, seen):
        await wait_until(pilot, lambda: table.row_count == 3, 5, "the VMs")
        await pilot.press("c")
        await wait_until(
            pilot, lambda: any("deskloop image build" in n for n in notes(seen)), 5, "why"
        )
        assert isinstance(app.screen, DesktopsScreen)


async def test_a_running_vm_shows_its_cpu_and_memory(tmp_path: Path, no_libvirt: None) -> None:
    t0 = time.monotonic()

    def stats() -> dict[str, VmStats]:
        # alpha uses half a core: its CPU time grows at half the wall time's pace.
        cpu = (time.monotonic() - t0) * 0.5
        return {"alpha": VmStats(cpu, 900 * 2**20, 2048 * 2**20, 2)}

    async with desktops_app(tmp_path, lambda: LISTING) as (app, pilot, screen, table, _seen):
        app.vms.stats = stats
        await wait_until(pilot, lambda: table.row_count == 3, 5, "the VMs")
        detail = screen.query_one("#desktop-detail", Static)

        def measured() -> bool:
            usage = screen.usage.get(VM_KEY + "alpha")
            return usage is not None and usage.cpu_percent is not None

        await wait_until(pilot, measured, 10, "two samples of alpha")
        usage = screen.usage[VM_KEY + "alpha"]
        assert usage.cpu_percent == pytest.approx(50, abs=5)
        shown = f"CPU {usage.cpu_percent:.0f}% · memory 900 MiB · guest memory 2048 MiB · 2 vCPUs"
        await wait_until(pilot, lambda: shown in str(detail.render()), 5, "the figures")
        await pilot.press("down")  # beta is shut off: no figures
        await wait_until(pilot, lambda: "beta" in str(detail.render()), 5, "beta's detail")
        assert "CPU" not in str(detail.render())


def test_vm_cpu_is_the_cpu_time_delta_over_the_wall_time() -> None:
    now = [100.0]
    cpu = [10.0]
    sampler = VmUsageSampler(
        lambda: {"a": VmStats(cpu[0], None, 1024 * 2**20, 1)}, clock=lambda: now[0]
    )
    first = sampler.sample()["a"]
    assert first.cpu_percent is None and first.memory_bytes == 1024 * 2**20  # guest's
    now[0], cpu[0] = 102.0, 13.0
    assert sampler.sample()["a"].cpu_percent == pytest.approx(150.0)  # 1.5 cores


def test_an_unreachable_libvirtd_gives_no_vm_figures() -> None:
    def away() -> dict[str, VmStats]:
        raise DesktopError("cannot connect to libvirt")

    assert VmUsageSampler(away).sample() == {}


@pytest.mark.parametrize("size", [(80, 24), (100, 30)])
async def test_the_dialogs_create_button_is_reached_on_small_terminals(
    tmp_path: Path, no_libvirt: None, cache: Path, size: tuple[int, int]
) -> None:
    built(cache, "blender", 2048)
    async with desktops_app(tmp_path, lambda: LISTING, size=size) as (app, pilot, *_rest):
        await pilot.press("c")
        await wait_until(pilot, lambda: isinstance(app.screen, CreateVmScreen), 5, "the dialog")
        dialog = app.screen
        await pilot.press("tab", "tab", "tab", "tab", "tab")  # to Create: it scrolls into view
        create = dialog.query_one("#create", Button)
        await wait_until(pilot, lambda: create.has_focus, 5, "Create focused")
        await wait_until(
            pilot, lambda: dialog.screen.find_widget(create) is not None, 5, "Create shown"
        )
        region = create.region
        assert region.height > 0 and region.bottom <= size[1] and region.right <= size[0]
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, DesktopsScreen), 5, "closed")
