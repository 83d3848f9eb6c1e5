"""The libvirt backend on a real VM: the `base` image (X, openbox, xterm) under
whatever this host runs (TCG on our PVM machines).

One VM per test run: it cold-boots once, saves a boot state, and makes one task-like
start state (an xterm open) with `reset_to`; each test then restores that state
(seconds) instead of booting. The VM is removed at the end, also after failures,
and stale test VMs of dead runs are swept first (a VM whose lock is free).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import subprocess
import time
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import numpy as np
import paramiko
import pytest
import pytest_asyncio

from app.core.actions import Click, Key, Move, Type
from app.core.errors import DesktopError, GuestError
from app.desktops.libvirt import (
    DOMAIN_PREFIX,
    LibvirtConfig,
    LibvirtDesktop,
    detect_virt_type,
    list_vms,
    open_connection,
)
from app.desktops.xwindows import active_window_title, wait_window
from app.vmimages.builder import build_image
from tests.suite_plugin import record_time
from tests.xterm_task import open_xterm

# The first test also pays for building the base image (CI starts without a cache)
# and the cold boot under software emulation: minutes on a loaded 2-core machine.
pytestmark = [
    pytest.mark.desktop,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(1800),
]

XTERM_STATE = "test-xterm-v2"


def _sweep_stale_test_vms(config: LibvirtConfig) -> None:
    for vm in list_vms(config):
        if vm.name.startswith("test-"):
            stale = LibvirtDesktop(name=vm.name, image="base", config=config)
            # A VM whose lock is held belongs to a live test run: not stale.
            with contextlib.suppress(DesktopError):
                asyncio.run(stale.remove())


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def vm() -> AsyncIterator[LibvirtDesktop]:
    await asyncio.to_thread(build_image, "base", progress=print)
    config = LibvirtConfig(vcpus=2, memory_mib=1024)
    await asyncio.to_thread(_sweep_stale_test_vms, config)
    desktop = await _first_boot(config)
    try:
        yield desktop
    finally:
        await desktop.close()


def _xterm_opener(desktop: LibvirtDesktop) -> Callable[[], Awaitable[None]]:
    return lambda: open_xterm(desktop)


async def _first_boot(config: LibvirtConfig) -> LibvirtDesktop:
    """A fresh test VM with its xterm start state saved.

    One full suite run on CI saw a cold-booted guest never answer SSH on its reserved
    address (the next runs passed). Until that is understood, a failed first boot is
    reported with the network's DHCP leases and tried once more on a new VM, so one
    infrastructure hiccup does not hide whether the backend works.
    """
    for attempt in (1, 2):
        desktop = LibvirtDesktop(
            name=f"test-{secrets.token_hex(3)}",
            image="base",
            config=config,
            ephemeral=True,
            progress=print,
        )
        try:
            restored = await desktop.reset_to(XTERM_STATE, _xterm_opener(desktop))
        except (DesktopError, GuestError) as exc:
            leases = await asyncio.to_thread(
                subprocess.run,
                ["virsh", "-c", config.uri, "net-dhcp-leases", "deskloop-net"],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            print(f"first boot attempt {attempt} failed: {exc}\nDHCP leases:\n{leases.stdout}")
            await desktop.remove()
            if attempt == 2:
                raise
            continue
        assert not restored  # a fresh desktop makes its states
        assert "cold_boot" in desktop.timings
        print("timings:", desktop.timings)
        record_time("cold_boot", image="base", s=round(desktop.timings["cold_boot"], 1))
        return desktop
    raise AssertionError("unreachable")


async def _fresh(vm: LibvirtDesktop) -> None:
    """Each test starts from the saved xterm state."""
    t0 = time.monotonic()
    assert await vm.reset_to(XTERM_STATE, lambda: open_xterm(vm))
    print(f"restore took {time.monotonic() - t0:.1f} s", vm.timings)


async def test_virt_type_matches_host_and_domain(vm: LibvirtDesktop) -> None:
    virt, why = detect_virt_type()
    assert vm.virt_type == virt and why
    if Path("/sys/module/kvm_pvm").exists():
        assert virt == "qemu"  # PVM cannot boot a stock kernel (FIELD_NOTES)
    conn = await asyncio.to_thread(open_connection, vm.config.uri)
    try:
        dom = conn.lookupByName(vm.domain_name)
        root = ET.fromstring(dom.XMLDesc(0))
    finally:
        conn.close()
    assert root.get("type") == virt
    graphics = root.find("./devices/graphics[@type='vnc']")
    assert graphics is not None
    assert {e.get("address") for e in graphics.findall("listen")} == {"127.0.0.1"}
    assert root.find("./devices/input[@type='tablet']") is not None
    net = root.find("./devices/interface/source")
    assert net is not None and net.get("network") == "deskloop-net"


async def test_restored_state_shows_the_xterm_over_vnc(vm: LibvirtDesktop) -> None:
    await _fresh(vm)
    frame = await vm.frame()
    assert (frame.width, frame.height) == (1280, 800)
    # The desktop background is one colour; the xterm (white) is not.
    assert len(np.unique(frame.pixels.reshape(-1, 3), axis=0)) > 2
    ids = await wait_window(vm.guest, name="deskloop-term", timeout=30)
    assert ids


async def test_the_session_comes_back_with_the_x_server(vm: LibvirtDesktop) -> None:
    """A restarted X server pulls the user's session up again (it is bound to the
    server, so it stops with it; one guest of four booting on 2 cores lost it so)."""
    await _fresh(vm)
    shown = await vm.guest.run(
        ["systemctl", "show", "-p", "Wants", "-p", "StartLimitIntervalUSec",
         "deskloop-xserver.service", "deskloop-session.service"]
    )  # fmt: skip
    text = shown.stdout_text()
    assert "deskloop-session.service" in text.split("Wants=", 1)[1].splitlines()[0]
    assert "StartLimitIntervalUSec=0" in text


async def test_pointer_lands_within_a_pixel_and_keys_reach_the_window(vm: LibvirtDesktop) -> None:
    await _fresh(vm)
    for x, y in ((17, 23), (640, 400), (1200, 777)):
        await vm.act(Move(x=x, y=y))
        deadline = time.monotonic() + 20
        while True:
            where = await vm.guest.run(["xdotool", "getmouselocation", "--shell"])
            pos = dict(line.split("=", 1) for line in where.stdout_text().split())
            # QEMU's tablet scales to 0..32767 and the guest scales back to the
            # screen, which can round down by one pixel (measured: 17,23 -> 16,22).
            if abs(int(pos["X"]) - x) <= 1 and abs(int(pos["Y"]) - y) <= 1:
                break
            assert time.monotonic() < deadline, f"pointer at {pos}, wanted {(x, y)}"
            await asyncio.sleep(0.2)
    # Focus the xterm by clicking in it, then type a command the guest will run.
    await vm.act(Click(x=300, y=200))
    before = await vm.frame()
    await vm.act(Type(text="touch typed-over-vnc"))
    await vm.act(Key(combo="enter"))
    deadline = time.monotonic() + 60
    while not await vm.guest.exists("~/typed-over-vnc"):
        assert time.monotonic() < deadline, "the typed command never ran in the xterm"
        await asyncio.sleep(0.3)
    after = await vm.frame()
    assert not np.array_equal(before.pixels, after.pixels)
    assert "deskloop-term" in await active_window_title(vm.guest)


async def _text_cat_wrote(vm: LibvirtDesktop, path: str) -> bytes:
    """What `cat > path`, typed into the xterm, wrote to `path` once its one line has
    arrived (cat writes the line as its enter arrives); then cat is ended from the
    guest channel. No ctrl+d ends it: a key of its own would be one more to lose, and
    the tests are about the keys before it."""
    deadline = time.monotonic() + 60
    while True:
        if await vm.guest.exists(path):
            wrote = await vm.guest.read_file(path)
            if wrote.endswith(b"\n"):
                await vm.guest.run(["pkill", "-x", "cat"])
                return wrote
        if time.monotonic() >= deadline:
            raise AssertionError(f"the typed text never arrived; {await _keys_seen(vm, path)}")
        await asyncio.sleep(0.3)


async def _keys_seen(vm: LibvirtDesktop, path: str) -> str:
    """What the guest made of the keys, for a failure's message: the file so far, the
    focused window, and what the X server's input driver logged about lost events."""
    wrote = await vm.guest.run(["cat", path])
    lost = await vm.guest.run(
        ["grep", "-i", "-e", "SYN_DROPPED", "-e", "lagging", "-e", "lost", "/var/log/Xorg.0.log"]
    )
    return (
        f"{path} holds {wrote.stdout_text()!r}, the focus is on "
        f"{await active_window_title(vm.guest)!r}, Xorg logged: {lost.stdout_text()[-2000:]!r}"
    )


async def test_window_manager_shortcuts_do_not_swallow_keys(vm: LibvirtDesktop) -> None:
    """The guest's openbox has DeskLoop's config (as the local backend): keys that
    openbox's stock config takes (alt+F4 closes the window, ctrl+alt+right switches the
    desktop away) reach the app, which keeps the focus for the next keys."""
    await _fresh(vm)
    await vm.act(Click(x=300, y=200))
    # cat, not bash, receives the keys: it writes the xterm's escape sequences for them
    # to the file as they are, where bash's line editor would act on them.
    await vm.act(Type(text="cat > ~/keys.txt"))
    await vm.act(Key(combo="enter"))
    for combo in ("alt+F4", "ctrl+alt+Right", "super+d"):
        await vm.act(Key(combo=combo))
    await vm.act(Type(text="still-here"))
    await vm.act(Key(combo="enter"))
    typed = (await _text_cat_wrote(vm, "~/keys.txt")).decode(errors="replace")
    assert typed.endswith("still-here\n"), f"a window-manager shortcut took the keys: {typed!r}"
    assert "deskloop-term" in await active_window_title(vm.guest)


async def test_long_typed_text_arrives_intact(vm: LibvirtDesktop) -> None:
    """Every character of a long Type reaches the guest, in order: a slow guest must
    not lose keys (QEMU's PS/2 queue holds only a few scancodes)."""
    await _fresh(vm)
    await vm.act(Click(x=300, y=200))
    await vm.act(Type(text="cat > ~/typed.txt"))
    await vm.act(Key(combo="enter"))
    text = "".join(
        f"Line{i:02d} photo-flipped.png ~/Desktop/A_b.c; " for i in range(8)
    )  # 8 × 40 characters, upper and lower case, digits, punctuation
    await vm.act(Type(text=text))
    await vm.act(Key(combo="enter"))
    typed = (await _text_cat_wrote(vm, "~/typed.txt")).decode()
    assert typed == text + "\n"


async def test_guest_channel_run_read_write(vm: LibvirtDesktop) -> None:
    await _fresh(vm)
    guest = vm.guest
    who = await guest.run(["id", "-un"])
    assert who.ok and who.stdout_text().strip() == "user"
    # Arguments are never shell-interpreted.
    echo = await guest.run(["printf", "%s|", "a b", "$HOME", "; rm -rf ~"])
    assert echo.stdout_text() == "a b|$HOME|; rm -rf ~|"
    failed = await guest.run(["sh", "-c", "echo oops >&2; exit 3"])
    assert failed.returncode == 3 and failed.stderr == b"oops\n"
    data = bytes(range(256)) * 1000
    await guest.write_file("~/deep/er/blob.bin", data)
    assert await guest.read_file("~/deep/er/blob.bin") == data
    assert await guest.exists("deep/er/blob.bin")
    assert not await guest.exists("~/nope")
    with pytest.raises(GuestError, match="over the 100-byte limit"):
        await guest.read_file("~/deep/er/blob.bin", max_bytes=100)
    with pytest.raises(GuestError, match="does not exist"):
        await guest.read_file("~/nope")
    with pytest.raises(GuestError, match="permission denied"):
        await guest.write_file("/etc/deskloop-test", b"x")
    t0 = time.monotonic()
    with pytest.raises(GuestError, match="timeout"):
        await guest.run(["sleep", "30"], timeout=1.5)
    assert time.monotonic() - t0 < 15
    left = await guest.run(["pgrep", "-x", "sleep"])
    assert left.returncode == 1, "the timed-out command was left running in the guest"
    await guest.launch(["sleep", "600"])
    assert (await guest.run(["pgrep", "-x", "sleep"])).ok


async def test_reset_discards_disk_and_memory(vm: LibvirtDesktop) -> None:
    await _fresh(vm)
    await vm.guest.write_file("~/marker.txt", b"from the last episode")
    await vm.guest.launch(["sleep", "777"])
    assert (await vm.guest.run(["pgrep", "-x", "sleep"])).ok
    await _fresh(vm)
    assert not await vm.guest.exists("~/marker.txt")
    assert (await vm.guest.run(["pgrep", "-x", "sleep"])).returncode == 1
    # The start state itself is intact: the xterm is still there.
    await wait_window(vm.guest, name="deskloop-term", timeout=30)


async def test_guest_accepts_only_the_lab_key(vm: LibvirtDesktop) -> None:
    await _fresh(vm)
    await vm.guest.connected()
    host = vm.guest.host

    def attempt(**kwargs: object) -> None:
        client = paramiko.SSHClient()
        client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
        try:
            client.connect(host, username="user", timeout=20, allow_agent=False,
                           look_for_keys=False, **kwargs)  # fmt: skip
        finally:
            client.close()

    with pytest.raises(paramiko.AuthenticationException):
        await asyncio.to_thread(attempt, pkey=paramiko.RSAKey.generate(2048))
    with pytest.raises((paramiko.AuthenticationException, paramiko.SSHException)):
        await asyncio.to_thread(attempt, password="user")


def _leases_of(uri: str, mac: str) -> list[str]:
    out = subprocess.run(
        ["virsh", "-c", uri, "net-dhcp-leases", "deskloop-net", "--mac", mac],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return [line for line in out.splitlines() if mac in line.lower()]


async def test_lifecycle_events_and_rm_leave_nothing(vm: LibvirtDesktop) -> None:
    """Last: stops and removes the module's VM through the CLI's code path."""
    await _fresh(vm)
    states = vm.state_keys()
    assert len(states) == 2  # boot + the xterm state
    await vm.stop()
    # _wait_domain returns only on lifecycle events (no polling): it saw the stop.
    assert vm.info().state == "stopped"
    folder = vm.dir
    domain = vm.domain_name
    xml = subprocess.run(
        ["virsh", "-c", vm.config.uri, "dumpxml", domain],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    mac_element = ET.fromstring(xml).find("./devices/interface/mac")
    assert mac_element is not None
    mac = mac_element.get("address", "").lower()
    assert _leases_of(vm.config.uri, mac), "a booted VM has a DHCP lease"
    await vm.remove()
    # Its address goes back to the network: no host entry and no lease are left (a
    # lease that never expires would keep the address from the next desktop).
    network = subprocess.run(
        ["virsh", "-c", vm.config.uri, "net-dumpxml", "deskloop-net"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert mac not in network.lower()
    assert not _leases_of(vm.config.uri, mac)
    listed = subprocess.run(
        ["virsh", "-c", vm.config.uri, "list", "--all", "--name"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert domain not in listed
    assert not folder.exists()
    assert all(v.name != vm.name for v in await asyncio.to_thread(list_vms, vm.config))
    assert not any(
        json.dumps(str(folder)) in p.read_text()
        for p in (vm.config.cache / "images").glob("*.json")
    )
    assert domain.startswith(DOMAIN_PREFIX)
