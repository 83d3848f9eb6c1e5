"""The Desktops screen's libvirt desktops made outside the session, and their listing.

The screen tests give the app a fixed listing (they are about the screen's logic);
`list_libvirt` itself is tested against the real libvirtd that scripts/services.sh
starts, and against an unreachable one.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

import libvirt
import pytest
from textual.message import Message
from textual.notifications import Notify
from textual.pilot import Pilot
from textual.widgets import DataTable, OptionList, Static

from app.core.errors import DesktopError
from app.desktops.inventory import (
    BackendListing,
    list_libvirt,
    lock_holder,
    vm_command,
)
from app.desktops.libvirt import DOMAIN_PREFIX, LibvirtConfig, actions
from app.ui.app import DeskLoopApp
from app.ui.halfblock import HalfBlockView
from app.ui.modals import ChoiceScreen, ErrorScreen, HelpScreen
from app.ui.screens.desktops import DesktopsScreen
from app.ui.screens.live import LiveScreen
from tests.ui.helpers import (
    ALPHA,
    LISTING,
    fixture_db,
    screen_text,
    wait_until,
    write_tasks,
)

UNREACHABLE = "qemu+unix:///system?socket=/nonexistent/libvirt-sock"


@pytest.fixture
def no_libvirt(monkeypatch: pytest.MonkeyPatch) -> None:
    """`deskloop vm` children (and the default listing) talk to a libvirtd that is
    not there, so no real VM is touched."""
    monkeypatch.setenv("DESKLOOP_LIBVIRT_URI", UNREACHABLE)


# Runs the command after it (a `deskloop vm` child) once the file it names exists: the
# test then sees the operation while it runs, however fast the child would fail.
GATE = (
    "import os, sys, time\n"
    "while not os.path.exists(sys.argv[1]):\n    time.sleep(0.05)\n"
    "os.execv(sys.argv[2], sys.argv[2:])\n"
)


@pytest.fixture
def gate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The file that lets `deskloop vm` children run; until it exists they wait."""
    opened = tmp_path / "gate-open"
    real = actions.child_argv

    def gated(action: str, name: str, *args: str) -> list[str]:
        return [sys.executable, "-c", GATE, str(opened), *real(action, name, *args)]

    monkeypatch.setattr(actions, "child_argv", gated)
    return opened


class Running(NamedTuple):
    """The app running on its Desktops screen, and every message it has handled."""

    app: DeskLoopApp
    pilot: Pilot[None]
    screen: DesktopsScreen
    table: DataTable[object]
    seen: list[Message]


@asynccontextmanager
async def desktops_app(
    tmp_path: Path,
    listing: Callable[[], BackendListing] | None = None,
    size: tuple[int, int] = (160, 50),
) -> AsyncIterator[Running]:
    """The TUI started on the Desktops screen over a recorded database; `listing`
    replaces the real libvirt listing."""
    db = fixture_db(tmp_path / "db" / "deskloop.db")
    tasks = write_tasks(tmp_path / "tasks")
    if listing is None:
        app = DeskLoopApp(db=db, tasks_dir=tasks, start_mode="desktops")
    else:
        app = DeskLoopApp(db=db, tasks_dir=tasks, start_mode="desktops", libvirt_listing=listing)
    seen: list[Message] = []
    async with app.run_test(size=size, message_hook=seen.append) as pilot:
        screen = app.screen
        assert isinstance(screen, DesktopsScreen)
        yield Running(app, pilot, screen, screen.query_one(DataTable), seen)


def rows(table: DataTable[object]) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


def notes(seen: list[Message]) -> list[str]:
    unique = {id(m): m for m in seen}.values()
    return [str(m.notification.message) for m in unique if isinstance(m, Notify)]


async def test_existing_vms_are_listed_and_refuse_what_makes_no_sense(
    tmp_path: Path, no_libvirt: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no vncviewer: the address is shown instead
    async with desktops_app(tmp_path, lambda: LISTING) as (app, pilot, screen, table, seen):
        await wait_until(pilot, lambda: table.row_count == 3, 5, "the three VMs")
        shown = rows(table)
        assert [r[:5] for r in shown] == [
            ["alpha", "libvirt", "gimp", "running", "1280×800"],
            ["beta", "libvirt", "blender", "shut off", "1920×1080"],
            ["gamma", "libvirt", "kdenlive", "shut off", "1280×800"],
        ]
        assert shown[0][5] == "127.0.0.1:5999" and shown[1][5] == "—"
        assert shown[1][7] == "in use by pid 4242" and shown[0][7] == "2 saved states"
        detail = screen.query_one("#desktop-detail", Static)
        assert "pw4alpha" in str(detail.render()) and "tui-20260115-090000" in str(detail.render())

        await pilot.press("s")  # alpha runs already
        await pilot.press("o")  # no viewer: address and password
        await pilot.press("down", "s")  # beta is driven by another process
        await pilot.press("b")  # beta has no saved state
        await pilot.press("down", "x", "p", "v")  # gamma is shut off
        said = notes(seen)
        assert any("alpha is already running" in n for n in said)
        assert any("127.0.0.1:5999" in n and "pw4alpha" in n for n in said)
        assert any("in use by DeskLoop process 4242" in n for n in said)
        assert any("beta has no saved state" in n for n in said)
        assert any("gamma is not running." in n for n in said)
        assert any("gamma is not running: nothing to save" in n for n in said)
        assert any("gamma is not running (s starts it)" in n for n in said)
        assert not app.vms.operations  # nothing was started
        assert isinstance(app.screen, DesktopsScreen)

        await pilot.press("v")  # gamma: refused; up to alpha and watch it
        await pilot.press("up", "up", "v")
        await wait_until(pilot, lambda: isinstance(app.screen, LiveScreen), 5, "live")
        await wait_until(
            pilot,
            lambda: "watching libvirt desktop alpha (running" in screen_text(app),
            5,
            "the watched VM named",
        )
        live = app.screen
        assert isinstance(live, LiveScreen)
        assert live._endpoint() == ALPHA.vnc  # the feed connects where the listing says


async def test_an_existing_vm_is_restored_through_deskloop_vm(
    tmp_path: Path, no_libvirt: None, gate: Path
) -> None:
    async with desktops_app(tmp_path, lambda: LISTING) as (app, pilot, screen, table, seen):
        await wait_until(pilot, lambda: table.row_count == 3, 5, "the VMs")
        await pilot.press("b")
        await wait_until(pilot, lambda: isinstance(app.screen, ChoiceScreen), 5, "the picker")
        options = app.screen.query_one(OptionList)
        labels = [str(options.get_option_at_index(i).prompt) for i in range(2)]
        assert labels[0].startswith("tui-20260115-090000: a snapshot taken in the TUI")
        assert labels[1].startswith("boot: the desktop just after a cold boot")
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, DesktopsScreen), 5, "cancelled")
        assert not app.vms.operations

        await pilot.press("b", "down", "enter")  # back to boot: `deskloop vm revert alpha boot`
        await wait_until(pilot, lambda: "alpha" in app.vms.operations, 5, "the operation")
        assert app.vms.operations["alpha"].doing == "restoring boot"
        await wait_until(pilot, lambda: "restoring boot" in rows(table)[0][3], 5, "progress")
        # The child talks to the unreachable libvirtd: its error is the dialog's.
        gate.touch()
        await wait_until(pilot, lambda: isinstance(app.screen, ErrorScreen), 60, "the error")
        text = app.screen.text  # type: ignore[attr-defined]
        assert "deskloop vm revert alpha boot" in text and "/nonexistent/libvirt-sock" in text
        await pilot.press("escape")
        await wait_until(pilot, lambda: "cannot connect" in rows(table)[0][7], 5, "row note")
        assert not app.vms.operations
        changed = [m for m in {id(m): m for m in seen}.values() if isinstance(m, screen.Changed)]
        assert changed  # the end of the operation redrew the table


async def test_libvirt_unreachable_is_one_row_and_the_screen_works(
    tmp_path: Path, no_libvirt: None
) -> None:
    # The real listing, pointed at a libvirtd that is not there.
    async with desktops_app(tmp_path, size=(100, 30)) as (app, pilot, screen, table, seen):
        await wait_until(pilot, lambda: app.vms.listing is not None, 10, "the listing")
        await wait_until(pilot, lambda: "unreachable" in rows(table)[0][3], 5, "the notice")
        assert table.row_count == 1
        assert "/nonexistent/libvirt-sock" in rows(table)[0][7]
        detail = str(screen.query_one("#desktop-detail", Static).render())
        assert "libvirt is not reachable" in detail
        await pilot.press("s", "v")
        assert sum("No libvirt desktop to act on" in n for n in notes(seen)) == 2
        assert isinstance(app.screen, DesktopsScreen)


async def test_listing_runs_off_the_ui_thread(tmp_path: Path) -> None:
    release = threading.Event()
    threads: list[str] = []

    def slow() -> BackendListing:
        threads.append(threading.current_thread().name)
        release.wait(30)
        return LISTING

    try:
        async with desktops_app(tmp_path, slow, size=(100, 30)) as (app, pilot, _, table, _):
            await wait_until(pilot, lambda: bool(threads), 5, "the listing to begin")
            assert rows(table)[0][3] == "listing…"
            await pilot.press("question_mark")  # the UI answers while the listing waits
            await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), 5, "help")
            await pilot.press("escape")
            release.set()
            await wait_until(pilot, lambda: table.row_count == 3, 5, "the listing shown")
            assert threads[0] != threading.main_thread().name
    finally:
        release.set()


# -- the listing itself ------------------------------------------------------------


def test_an_unreachable_libvirtd_is_an_answer_not_an_error() -> None:
    listing = list_libvirt(LibvirtConfig(uri=UNREACHABLE))
    assert listing.desktops == ()
    assert listing.error is not None and UNREACHABLE in listing.error


def test_lock_holder_reads_proc_locks(tmp_path: Path) -> None:
    path = tmp_path / ".lock"
    path.touch()
    assert lock_holder(path) is None
    with path.open("w") as file:
        fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert lock_holder(path) == os.getpid()
    assert lock_holder(path) is None
    assert lock_holder(tmp_path / "missing") is None


async def test_vm_command_reports_the_commands_error(no_libvirt: None) -> None:
    with pytest.raises(DesktopError, match=r"deskloop vm stop nobody-here.*cannot connect"):
        await vm_command("stop", "nobody-here")
    with pytest.raises(DesktopError, match="expected one of"):
        await vm_command("destroy", "nobody-here")  # only the actions it names


@pytest.fixture
def defined_domain(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A DeskLoop domain defined (never started) on the real libvirtd, with a desktop
    record in a private cache; removed afterwards."""
    name = f"tuitest-{uuid.uuid4().hex[:6]}"
    folder = tmp_path / "cache" / "vms" / name
    (folder / "states" / "boot").mkdir(parents=True)
    (folder / "states" / "boot" / "meta.json").write_text(json.dumps({"saved": 1000.0}))
    (folder / "states" / "half-written").mkdir()  # no meta.json: not restorable
    record = {
        "name": name, "image": "blender", "image_dir": "/nowhere", "recipe_hash": "0",
        "mac": "52:54:00:00:00:01", "vnc_password": "abcdefgh", "width": 1024,
        "height": 768, "memory_mib": 64, "vcpus": 1, "virt_type": "qemu", "created": 0.0,
    }  # fmt: skip
    (folder / "vm.json").write_text(json.dumps(record))
    xml = f"""<domain type='qemu'><name>{DOMAIN_PREFIX}{name}</name>
      <memory unit='MiB'>64</memory><os><type arch='x86_64'>hvm</type></os>
      <devices><graphics type='vnc' autoport='yes' listen='127.0.0.1'/></devices></domain>"""
    conn = libvirt.open(LibvirtConfig().uri)
    dom = conn.defineXML(xml)
    try:
        yield name, tmp_path / "cache"
    finally:
        dom.undefine()
        conn.close()


@pytest.mark.desktop
def test_list_libvirt_on_the_real_libvirtd(defined_domain: tuple[str, Path]) -> None:
    name, cache = defined_domain
    config = LibvirtConfig(cache=cache)

    def virsh_domains() -> set[str]:
        virsh = subprocess.run(
            ["virsh", "-c", config.uri, "list", "--all", "--name"],
            capture_output=True,
            text=True,
            check=True,
        )
        return {d for d in virsh.stdout.split() if d.startswith(DOMAIN_PREFIX)}

    # The VM tests on the suite's other worker define and remove domains: compare
    # a listing taken while virsh saw the same domains before and after it.
    for _attempt in range(5):
        before = virsh_domains()
        listing = list_libvirt(config)
        if virsh_domains() == before:
            break
    assert listing.error is None, listing.error
    assert {d.domain for d in listing.desktops} == before
    ours = next(d for d in listing.desktops if d.name == name)
    assert (ours.state, ours.image, ours.width, ours.height) == ("shut off", "blender", 1024, 768)
    assert ours.vnc is None and ours.locked_by is None
    assert [s.key for s in ours.states] == ["boot"] and ours.states[0].saved == 1000.0
    # Running desktops (other runs' VMs, if any) with their records in the real cache:
    # the VNC address is the one virsh reports. A VM of the other worker's tests may be
    # saved or restored meanwhile (a new VNC port): only what two listings agree on
    # around virsh's answer is compared.
    first = list_libvirt(LibvirtConfig()).desktops
    displays = {}
    for desktop in first:
        if desktop.state != "running" or not (desktop.dir / "vm.json").is_file():
            continue
        virsh = subprocess.run(
            ["virsh", "-c", config.uri, "vncdisplay", desktop.domain],
            capture_output=True,
            text=True,
            check=False,
        )
        if virsh.returncode == 0:
            displays[desktop.domain] = virsh.stdout.strip()
    second = {d.domain: d for d in list_libvirt(LibvirtConfig()).desktops}
    for desktop in first:
        again = second.get(desktop.domain)
        if desktop.domain not in displays or again is None or again.vnc != desktop.vnc:
            continue
        assert desktop.vnc is not None
        assert desktop.vnc.port == 5900 + int(displays[desktop.domain].split(":")[-1])


@pytest.mark.desktop
async def test_watching_a_vm_made_elsewhere_shows_its_screen(tmp_path: Path) -> None:
    # A real VNC server stands in for the VM's (booting a VM here takes minutes): the
    # screen's part is to watch the address the listing gives.
    from app.desktops.local.desktop import LocalDesktop

    desktop = LocalDesktop(width=640, height=400)
    await desktop.reset()
    try:
        endpoint = desktop.info().vnc
        assert endpoint is not None
        listing = BackendListing("libvirt", "qemu:///system", (replace(ALPHA, vnc=endpoint),))
        async with desktops_app(tmp_path, lambda: listing) as (app, pilot, _, table, _):
            await wait_until(pilot, lambda: table.row_count == 1, 5, "the VM")
            await pilot.press("v")
            await wait_until(pilot, lambda: isinstance(app.screen, LiveScreen), 5, "live")
            view = app.screen.query_one(HalfBlockView)
            await wait_until(pilot, lambda: view.has_frame, 20, "a frame of the VM's screen")
    finally:
        await desktop.close()


def test_a_vms_progress_goes_to_its_entry_not_the_terminal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A cold boot's progress under the TUI: shown with the desktop, never written to
    stderr over the screen (the CLI's default)."""
    from app.desktops.libvirt import LibvirtDesktop
    from app.ui.services.desktops import DesktopPool

    pool = DesktopPool("libvirt")
    entry = pool.new()
    assert isinstance(entry.desktop, LibvirtDesktop)  # made, not started
    entry.desktop.progress("cold boot: 40 s so far")
    assert entry.progress == "cold boot: 40 s so far"
    assert capsys.readouterr().err == ""
