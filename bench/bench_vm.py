"""Cold boot vs restore of a libvirt desktop, in one run, naming the virtualization.

    .venv/bin/python bench/bench_vm.py                    # gimp image, a GIMP task's start state
    .venv/bin/python bench/bench_vm.py --image base --task none --restores 5
    .venv/bin/python bench/bench_vm.py --concurrent 4      # also: memory of 4 desktops at once
    .venv/bin/python bench/bench_vm.py --concurrent 8 --restores 1 --concurrent-task

Prints: cold boot to a usable desktop; the first start state's making (setup + save);
restore to a usable screen (VNC frame) and to a ready guest channel (SSH), median of
--restores; their ratio to the cold boot; host memory per VM (QEMU's RSS). With
--concurrent N, N desktops of the image (each an overlay on the one read-only image)
are booted together and each one's memory is printed, with the host's memory taken by
all of them (the fall of MemAvailable) divided by N; `--concurrent-task` also runs the
task's setup in each (GIMP open in every VM) before measuring. Every VM it makes is
removed at the end. The local counterpart is `bench/bench_local_desktops.py`.

The load average is printed at the start and where memory is measured: on a shared
machine the times move with it (the memory much less).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import statistics
import sys
import time
from pathlib import Path

from app.desktops.libvirt import LibvirtConfig, LibvirtDesktop
from app.episode.setup_steps import run_setup
from app.tasks.loader import find_task, setup_key
from app.tasks.model import Task
from app.vmimages.cache import require_image


def qemu_rss_mib(domain: str) -> float:
    """Resident memory of the domain's QEMU process (its pid file from libvirt)."""
    pid = Path(f"/run/libvirt/qemu/{domain}.pid").read_text().strip()
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def mem_available_mib() -> float:
    """The host's MemAvailable: what all desktops together took is its fall."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    return float("nan")


# The goal per desktop: eight GIMP desktops on a 24 GB machine.
GOAL_MIB = 1024


def load_average() -> str:
    """The host's 1, 5 and 15 minute load averages, and its core count."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.1f} {five:.1f} {fifteen:.1f} on {os.cpu_count()} cores"


def say(text: str) -> None:
    print(f"  · {text}", file=sys.stderr, flush=True)


async def _prepare(desktop: LibvirtDesktop, key: str, task: Task) -> None:
    """The task's start state on `desktop`: made by its setup, saved."""
    await desktop.reset_to(key, lambda: run_setup(task, desktop, say))


async def bench(args: argparse.Namespace) -> None:
    image = require_image(args.image)
    config = LibvirtConfig(boot_timeout=args.boot_timeout, time_scale=args.time_scale)
    desktop = LibvirtDesktop(
        name=f"bench-{secrets.token_hex(3)}",
        image=args.image,
        config=config,
        ephemeral=True,
        progress=say,
    )
    print(f"image {args.image} ({image.manifest['disk_bytes'] / 2**20:.0f} MiB qcow2)")
    print(f"virtualization: {desktop.virt_type} ({desktop.virt_reason})")
    print(f"at start: {load_average()}")
    try:
        t0 = time.monotonic()
        await desktop.reset()
        first = time.monotonic() - t0
        cold = desktop.timings["cold_boot"]
        print(f"cold boot to usable desktop: {cold:.1f} s (first reset incl. save: {first:.1f} s)")

        if args.task != "none":
            # The desktop stretches the task's window waits itself under emulation
            # (DesktopInfo.time_scale).
            task = find_task(args.task, [Path("tasks")])
            key = setup_key(task)
            t0 = time.monotonic()
            await desktop.reset_to(key, lambda: run_setup(task, desktop, say))
            print(f"start state of {task.id}: made in {time.monotonic() - t0:.1f} s")
        else:
            key = None

        screen: list[float] = []
        ssh: list[float] = []
        whole: list[float] = []
        for _ in range(args.restores):
            t0 = time.monotonic()
            if key is None:
                await desktop.reset()
            else:
                await desktop.reset_to(key, lambda: asyncio.sleep(0))
            whole.append(time.monotonic() - t0)
            screen.append(desktop.timings["restore"])
            await desktop.guest.connected()
            ssh.append(time.monotonic() - t0)
            await desktop.frame()
        rss = qemu_rss_mib(desktop.domain_name)
        med = statistics.median(screen)
        print(
            f"restore to usable screen (VNC frame): median {med:.2f} s "
            f"(min {min(screen):.2f}, max {max(screen):.2f}, n={len(screen)})"
        )
        print(f"reset incl. stopping the old VM: median {statistics.median(whole):.2f} s")
        print(f"restore to guest channel (SSH) ready: median {statistics.median(ssh):.2f} s")
        print(f"cold boot / restore: {cold / med:.1f}x ({desktop.virt_type})")
        print(f"host memory of this VM (QEMU RSS): {rss:.0f} MiB")
    finally:
        await desktop.close()

    if args.concurrent:
        desktops = [
            LibvirtDesktop(
                name=f"bench-{secrets.token_hex(3)}",
                image=args.image,
                config=config,
                ephemeral=True,
            )
            for _ in range(args.concurrent)
        ]
        try:
            before = mem_available_mib()
            t0 = time.monotonic()
            await asyncio.gather(*(d.reset() for d in desktops))
            print(f"{args.concurrent} desktops booted together in {time.monotonic() - t0:.0f} s")
            if args.concurrent_task and key is not None:
                task = find_task(args.task, [Path("tasks")])
                t0 = time.monotonic()
                await asyncio.gather(*(_prepare(d, key, task) for d in desktops))
                print(f"{task.id}'s setup in all {args.concurrent}: {time.monotonic() - t0:.0f} s")
            each = [qemu_rss_mib(d.domain_name) for d in desktops]
            for d, mib in zip(desktops, each, strict=True):
                print(f"  {d.domain_name}: QEMU RSS {mib:.0f} MiB")
            taken = before - mem_available_mib()
            per = taken / args.concurrent
            print(
                f"per desktop: QEMU RSS median {statistics.median(each):.0f} MiB "
                f"(max {max(each):.0f}); host MemAvailable fell {taken:.0f} MiB = "
                f"{per:.0f} MiB per desktop"
            )
            worst = max(max(each), per)
            verdict = "met" if worst <= GOAL_MIB else "NOT met"
            print(f"goal <= {GOAL_MIB} MiB per desktop: {verdict} (worst {worst:.0f} MiB)")
            print(f"when measured: {load_average()}")
        finally:
            await asyncio.gather(*(d.close() for d in desktops), return_exceptions=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--image", default="gimp")
    parser.add_argument("--task", default="gimp-flip-export", help="task id, or none")
    parser.add_argument("--restores", type=int, default=5)
    parser.add_argument("--concurrent", type=int, default=0)
    parser.add_argument(
        "--boot-timeout",
        type=float,
        default=LibvirtConfig().boot_timeout,
        help="seconds a cold boot may take (N desktops booting together on few cores need more)",
    )
    parser.add_argument(
        "--time-scale",
        type=float,
        default=None,
        help="stretch the task's waits this many times (default: the backend's for TCG/KVM)",
    )
    parser.add_argument(
        "--concurrent-task", action="store_true", help="run --task's setup in each of them too"
    )
    asyncio.run(bench(parser.parse_args()))


if __name__ == "__main__":
    main()
