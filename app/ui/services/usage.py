"""CPU and memory of desktops, as the Desktops screen shows them: local desktops from
/proc (their processes), libvirt VMs from libvirt's domain stats. Both block (they
read /proc or call libvirtd): sample off the UI's loop. CPU is the difference of CPU
time between two samples over the wall time between them, in percent of one core."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from app.desktops.inventory import VmStats


@dataclass(frozen=True)
class Usage:
    """What a desktop uses now: CPU (percent of one core, over the last interval;
    None at the first sample) and resident memory; for a local desktop over
    `processes` processes, for a VM QEMU's on the host and the guest's own."""

    cpu_percent: float | None
    memory_bytes: int
    processes: int | None = None
    guest_bytes: int | None = None
    vcpus: int | None = None

    def describe(self) -> str:
        cpu = "CPU …" if self.cpu_percent is None else f"CPU {self.cpu_percent:.0f}%"
        parts = [cpu, f"memory {self.memory_bytes / 2**20:.0f} MiB"]
        if self.processes is not None:
            parts.append(f"{self.processes} processes")
        if self.guest_bytes is not None:
            parts.append(f"guest memory {self.guest_bytes / 2**20:.0f} MiB")
        if self.vcpus is not None:
            parts.append(f"{self.vcpus} vCPU{'' if self.vcpus == 1 else 's'}")
        return " · ".join(parts)


class _Rate:
    """CPU percent from successive (time, CPU seconds) readings, per key."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self._last: dict[str, tuple[float, float]] = {}

    def percent(self, key: str, cpu_seconds: float) -> float | None:
        now = self.clock()
        last = self._last.get(key)
        self._last[key] = (now, cpu_seconds)
        if last is None or now <= last[0]:
            return None
        # A process that ended takes its CPU time along: never below 0.
        return max(0.0, (cpu_seconds - last[1]) / (now - last[0]) * 100)


class UsageSampler:
    """CPU and memory of local desktops, from /proc (app.core.procfs): the processes
    carrying a desktop's marker (app.desktops.local.reaper). Blocking (it reads /proc of
    every process)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._rate = _Rate(clock)

    def sample(self, marker: str) -> Usage:
        from app.core.procfs import process_cpu_seconds, process_rss_bytes
        from app.desktops.local.reaper import marked_processes

        cpu = memory = 0.0
        counted = 0
        for pid in marked_processes(marker):
            seconds, rss = process_cpu_seconds(pid), process_rss_bytes(pid)
            if seconds is None or rss is None:
                continue  # gone between the listing and the read
            cpu, memory, counted = cpu + seconds, memory + rss, counted + 1
        return Usage(self._rate.percent(marker, cpu), int(memory), counted)


class VmUsageSampler:
    """CPU and memory of running libvirt VMs, from `stats` (by default
    `app.desktops.inventory.vm_stats`: one libvirtd call for all of them, no lock
    taken). Blocking. Memory is QEMU's resident memory on the host (what the VM
    costs this machine), else the guest's."""

    def __init__(
        self,
        stats: Callable[[], dict[str, VmStats]] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if stats is None:
            from app.desktops.inventory import vm_stats

            stats = vm_stats
        self.stats = stats
        self._rate = _Rate(clock)

    def sample(self) -> dict[str, Usage]:
        """Usage by desktop name; {} when libvirtd cannot be reached (the listing
        already says so on the screen).

        Never raises DesktopError: a periodic sample must not open a dialog.
        """
        from app.core.errors import DesktopError

        try:
            stats = self.stats()
        except DesktopError:
            return {}
        return {
            name: Usage(
                self._rate.percent(name, s.cpu_seconds),
                s.rss_bytes if s.rss_bytes is not None else (s.guest_bytes or 0),
                guest_bytes=s.guest_bytes,
                vcpus=s.vcpus,
            )
            for name, s in stats.items()
        }
