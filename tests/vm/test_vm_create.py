"""A VM created and booted as the TUI's create dialog does it (`LibvirtDesktops.create`:
`deskloop vm create` then `deskloop vm start`, each a child process), on the real
libvirtd, then measured as the Desktops screen measures it (libvirt's domain stats)
and deleted (`deskloop vm rm`).

Under software emulation the boot takes a minute or more. The test lowers the
priority of the VM's QEMU (libvirtd starts it at nice 0) so other work on a shared
machine keeps its share.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import subprocess
import threading
import time
from pathlib import Path

import pytest

from app.desktops.inventory import list_libvirt, vm_command, vm_stats
from app.desktops.libvirt import DOMAIN_PREFIX, LibvirtConfig
from app.ui.services.desktops import LibvirtDesktops, VmRequest
from app.ui.services.usage import VmUsageSampler
from app.vmimages.builder import build_image

pytestmark = [pytest.mark.desktop, pytest.mark.timeout(1200)]

IMAGE = "blender"


def _renice_qemu(domain: str, stop: threading.Event) -> None:
    """Keep every thread of the domain's QEMU at nice 19 while it runs (threads
    have their own priority, and QEMU starts some after boot)."""
    pidfile = Path(f"/run/libvirt/qemu/{domain}.pid")
    while not stop.wait(1.0):
        with contextlib.suppress(OSError, ValueError):
            pid = int(pidfile.read_text().strip())
            for task in os.listdir(f"/proc/{pid}/task"):
                with contextlib.suppress(OSError):
                    os.setpriority(os.PRIO_PROCESS, int(task), 19)


async def test_a_vm_created_from_the_tui_boots_shows_its_figures_and_goes() -> None:
    # Cached: built once per machine (tests/vm/test_libvirt_blender.py builds it too).
    await asyncio.to_thread(build_image, IMAGE, progress=print)
    name = f"tuicreate-{secrets.token_hex(3)}"
    domain = DOMAIN_PREFIX + name
    vms = LibvirtDesktops(list_libvirt)
    vms.listing = await asyncio.to_thread(vms.refresh)
    assert vms.listing.error is None, vms.listing.error
    stop = threading.Event()
    watcher = threading.Thread(target=_renice_qemu, args=(domain, stop), daemon=True)
    watcher.start()
    steps: list[str] = []
    try:
        t0 = time.monotonic()
        creating = asyncio.ensure_future(vms.create(VmRequest(name, IMAGE, 1024, 1, True)))
        while not creating.done():
            operation = vms.operations.get(name)
            if operation is not None and operation.doing not in steps:
                steps.append(operation.doing)
            await asyncio.sleep(0.2)
        await creating
        print(f"created and booted {name} in {time.monotonic() - t0:.0f} s")
        assert steps == ["creating", "starting"]
        assert name not in vms.operations and name not in vms.errors

        listing = await asyncio.to_thread(list_libvirt)
        vm = next(v for v in listing.desktops if v.name == name)
        assert vm.state == "running" and vm.image == IMAGE and vm.vnc is not None
        assert vm.locked_by is None  # the children are gone, their locks with them
        xml = subprocess.run(
            ["virsh", "-c", LibvirtConfig().uri, "dumpxml", domain],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        assert "<memory unit='KiB'>1048576</memory>" in xml
        assert "<vcpu placement='static'>1</vcpu>" in xml

        stats = await asyncio.to_thread(vm_stats)
        print("stats:", stats[name])
        assert stats[name].cpu_seconds > 0  # libvirt agrees with /proc here (measured)
        rss = stats[name].rss_bytes
        assert rss is not None and 100 * 2**20 < rss < 4 * 2**30
        assert stats[name].vcpus == 1
        sampler = VmUsageSampler()
        assert (await asyncio.to_thread(sampler.sample))[name].cpu_percent is None
        await asyncio.sleep(2.0)
        usage = (await asyncio.to_thread(sampler.sample))[name]
        print("usage:", usage.describe())
        assert usage.cpu_percent is not None and 0 <= usage.cpu_percent <= 100 * 1.5
        assert usage.memory_bytes > 100 * 2**20 and usage.vcpus == 1
        assert usage.guest_bytes == 1024 * 2**20
    finally:
        stop.set()
        with contextlib.suppress(Exception):
            await vm_command("rm", name)
    listing = await asyncio.to_thread(list_libvirt)
    assert name not in [v.name for v in listing.desktops]
