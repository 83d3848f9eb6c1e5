"""A libvirt desktop on a *remote* host: `qemu+ssh://root@127.0.0.1:PORT/system`
through a real sshd (tests/sshd.py), with the host's files in their own folder.

The "remote" host is this machine reached over SSH, so everything goes the way it
would to another machine: libvirt over its SSH transport, the image uploaded into
the host's cache folder, overlays and saved states made there by argv commands,
VNC through a local forward and the guest's sshd through direct-tcpip channels
(the sshd's log shows each one). One VM of the `base` image: a cold boot, a start
state, a restore, removal.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import numpy as np
import pytest
import pytest_asyncio

from app.core.actions import Click, Key, Type
from app.desktops.libvirt import LibvirtConfig, LibvirtDesktop, list_vms, open_connection
from app.rfb.client import VNCSession
from app.vmimages.builder import build_image
from app.vmimages.cache import cache_dir
from tests.sshd import SshdServer, start_sshd
from tests.suite_plugin import record_time
from tests.xterm_task import open_xterm

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(1800),
]

XTERM_STATE = "remote-xterm"


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshdServer]:
    # Its host key goes into ~/.ssh/known_hosts for the test: qemu+ssh then checks it
    # as a lab's URI would (no no_verify), and so does our own SSH connection.
    with start_sshd(tmp_path_factory.mktemp("sshd")) as server, server.trusted_by_user():
        yield server


@pytest.fixture(scope="module")
def remote_cache() -> Path:
    # Kept between runs, like a real host's cache: the 0.8 GB image goes up once.
    return cache_dir() / "test-remote-host"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def remote(sshd: SshdServer, remote_cache: Path) -> AsyncIterator[LibvirtDesktop]:
    await asyncio.to_thread(build_image, "base", progress=print)
    config = LibvirtConfig(
        uri=sshd.libvirt_uri("ssh", no_verify=False),
        vcpus=2,
        memory_mib=1024,
        remote_cache=str(remote_cache),
    )
    desktop = LibvirtDesktop(
        name=f"test-remote-{secrets.token_hex(3)}",
        image="base",
        config=config,
        ephemeral=True,
        progress=print,
    )
    try:
        restored = await desktop.reset_to(XTERM_STATE, lambda: open_xterm(desktop))
        assert not restored
        print("timings:", desktop.timings)
        record_time(
            "cold_boot", image="base (remote host)", s=round(desktop.timings["cold_boot"], 1)
        )
        yield desktop
    finally:
        await desktop.close()


def _tunnels(sshd: SshdServer) -> list[tuple[str, int]]:
    """The (host, port) of every direct-tcpip channel the sshd opened."""
    found = re.findall(
        r"direct_tcpip: originator \S+ port \d+, target ([\d.]+) port (\d+)",
        sshd.log.read_text(),
    )
    return [(host, int(port)) for host, port in found]


async def test_the_desktop_lives_on_the_host_and_only_its_records_here(
    remote: LibvirtDesktop, sshd: SshdServer, remote_cache: Path
) -> None:
    info = remote.info()
    assert info.details["host"] == f"{sshd.user}@127.0.0.1:{sshd.port}"
    assert info.state == "running"
    conn = await asyncio.to_thread(open_connection, remote.config.uri)
    try:
        root = ET.fromstring(conn.lookupByName(remote.domain_name).XMLDesc(0))
    finally:
        conn.close()
    host_dir = remote_cache / "vms" / remote.name
    disk = root.find("./devices/disk/source")
    assert disk is not None and disk.get("file") == str(host_dir / "disk.qcow2")
    kernel = root.findtext("./os/kernel") or ""
    assert kernel.startswith(str(remote_cache / "images" / "base-"))
    uploaded = json.loads((Path(kernel).parent / "manifest.json").read_text())
    assert uploaded["kernel_sha256"] and Path(kernel).is_file()

    # Memory and disks of the start states are on the host; the metadata here.
    for state in ("boot", *remote.state_keys()):
        assert (remote.dir / "states" / state / "meta.json").is_file()
    assert len(remote.state_keys()) == 2
    on_host = sorted(p.name for p in (host_dir / "states").iterdir())
    assert on_host == sorted(remote.state_keys())
    for key in on_host:
        assert {p.name for p in (host_dir / "states" / key).iterdir()} == {
            "memory.save",
            "disk.qcow2",
        }
    assert not (remote.dir / "disk.qcow2").exists()
    record = json.loads((remote.dir / "vm.json").read_text())
    assert record["uri"] == remote.config.uri and record["host_dir"] == str(host_dir)

    listed = await asyncio.to_thread(list_vms, remote.config)
    assert [v.state for v in listed if v.name == remote.name] == ["running"]


async def test_vnc_and_guest_ssh_go_through_the_host(
    remote: LibvirtDesktop, sshd: SshdServer
) -> None:
    assert await remote.reset_to(XTERM_STATE, lambda: open_xterm(remote))
    ip = remote.info().details["ip"]
    vnc = remote.info().vnc
    assert vnc is not None and vnc.host == "127.0.0.1"

    frame = await remote.frame()
    assert (frame.width, frame.height) == (1280, 800)
    await remote.act(Click(x=300, y=200))
    await remote.act(Type(text="touch over-the-tunnel"))
    await remote.act(Key(combo="enter"))
    deadline = asyncio.get_running_loop().time() + 60
    while not await remote.guest.exists("~/over-the-tunnel"):
        assert asyncio.get_running_loop().time() < deadline, "the typed command never ran"
        await asyncio.sleep(0.3)
    assert not np.array_equal(frame.pixels, (await remote.frame()).pixels)

    tunnels = _tunnels(sshd)
    assert (ip, 22) in tunnels  # the guest's sshd, reached from the host
    qemu_ports = {port for host, port in tunnels if host == "127.0.0.1"}
    assert qemu_ports and vnc.port not in qemu_ports  # QEMU's port there, a forward here


async def test_a_restore_discards_what_the_episode_wrote(remote: LibvirtDesktop) -> None:
    assert await remote.reset_to(XTERM_STATE, lambda: open_xterm(remote))
    await remote.guest.write_file("~/marker", b"episode 1")
    assert await remote.guest.exists("~/marker")
    assert await remote.reset_to(XTERM_STATE, lambda: open_xterm(remote))
    assert not await remote.guest.exists("~/marker")
    print("restore on the remote host:", f"{remote.timings['restore']:.1f} s")


async def test_the_cli_lists_the_desktop_and_forwards_its_vnc(
    remote: LibvirtDesktop, tmp_path: Path
) -> None:
    deskloop = [sys.executable, "-m", "app.cli"]
    listing = await asyncio.to_thread(
        subprocess.run,
        [*deskloop, "vm", "list", "--uri", remote.config.uri],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    assert remote.name in listing.stdout and remote.config.uri in listing.stdout

    # `vm view --print` holds a forward open until interrupted: a VNC client reaches
    # the remote desktop through the address it prints.
    # Its threads' stacks go to `dump` if it has to be aborted (PYTHONFAULTHANDLER).
    dump = tmp_path / "vm-view.stderr"
    with dump.open("wb") as stderr:
        view = subprocess.Popen(
            [*deskloop, "vm", "view", remote.name, "--uri", remote.config.uri, "--print"],
            stdout=subprocess.PIPE, stderr=stderr, text=True,
            env={**os.environ, "PYTHONFAULTHANDLER": "1"},
        )  # fmt: skip
    try:
        assert view.stdout is not None
        lines = [await asyncio.to_thread(view.stdout.readline) for _ in range(3)]
        address = lines[0].split()[-1]
        password = lines[1].split()[-1]
        assert "forwarding over SSH" in lines[2], lines
        host, port = address.rsplit(":", 1)
        vnc = VNCSession(host, int(port), password, timeout=10.0)
        try:
            await vnc.connected()
            frame = await vnc.frame(20.0)
            assert (frame.width, frame.height) == (1280, 800)
        finally:
            await vnc.close()
    finally:
        # SIGTERM, not SIGINT: a suite started in the background by a shell (as CI's
        # is) runs with SIGINT ignored, which its children inherit, so SIGINT never
        # reached `vm view` there.
        view.send_signal(signal.SIGTERM)
        try:
            code = await asyncio.to_thread(view.wait, 120)
        except subprocess.TimeoutExpired:
            view.send_signal(signal.SIGABRT)
            await asyncio.to_thread(view.wait, 30)
            raise AssertionError(
                f"vm view did not stop on SIGTERM; where its threads were:\n{dump.read_text()}"
            ) from None
        assert code == 0, dump.read_text()


async def test_rm_leaves_nothing_on_the_host_or_here(
    remote: LibvirtDesktop, remote_cache: Path
) -> None:
    domain, folder, host_dir = remote.domain_name, remote.dir, remote_cache / "vms" / remote.name
    await remote.remove()
    virsh = await asyncio.to_thread(
        subprocess.run,
        ["virsh", "-c", remote.config.uri, "list", "--all", "--name"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert domain not in virsh.stdout.split()
    assert not folder.exists()
    assert not host_dir.exists()
    assert any((remote_cache / "images").iterdir())  # the uploaded image stays for the next
