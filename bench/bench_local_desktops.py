"""Memory of N local desktops at once, each with a task's app open: bench_vm's counterpart.

    .venv/bin/python bench/bench_local_desktops.py --concurrent 8      # gimp-flip-export
    .venv/bin/python bench/bench_local_desktops.py --concurrent 8 --task none

Starts N local desktops (Xvnc + openbox each, in their own sessions) together, runs the
task's setup in each (GIMP opens with the task's image), then prints each desktop's
memory: the resident memory of its processes (found by the marker every process of a
session carries, app/desktops/local/reaper.py), as RSS summed (shared libraries counted in
every process) and as PSS (shared pages split between the processes that map them, the
fairer share), and the fall of the host's MemAvailable divided by N, and the load
average (a shared machine moves the times). Every desktop is stopped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

from app.desktops.local.desktop import LocalDesktop
from app.desktops.local.reaper import marked_processes
from app.episode.setup_steps import run_setup
from app.tasks.loader import find_task


def _kib(path: Path, field: str) -> int:
    try:
        for line in path.read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1])
    except OSError:
        pass  # the process ended between listing and reading: it holds nothing now
    return 0


def desktop_memory_mib(desktop: LocalDesktop) -> tuple[float, float, int]:
    """(RSS summed, PSS summed, number of processes) of the desktop's processes."""
    marker = desktop.marker
    pids = marked_processes(marker) if marker else []
    rss = sum(_kib(Path(f"/proc/{pid}/status"), "VmRSS:") for pid in pids)
    pss = sum(_kib(Path(f"/proc/{pid}/smaps_rollup"), "Pss:") for pid in pids)
    return rss / 1024, pss / 1024, len(pids)


def mem_available_mib() -> float:
    return _kib(Path("/proc/meminfo"), "MemAvailable:") / 1024


def say(text: str) -> None:
    print(f"  · {text}", file=sys.stderr, flush=True)


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.1f} {five:.1f} {fifteen:.1f} on {os.cpu_count()} cores"


async def bench(args: argparse.Namespace) -> None:
    print(f"at start: {load_average()}")
    desktops = [LocalDesktop() for _ in range(args.concurrent)]
    before = mem_available_mib()
    try:
        t0 = time.monotonic()
        await asyncio.gather(*(d.reset() for d in desktops))
        print(f"{args.concurrent} local desktops started in {time.monotonic() - t0:.1f} s")
        if args.task != "none":
            task = find_task(args.task, [Path("tasks")])
            t0 = time.monotonic()
            await asyncio.gather(*(run_setup(task, d, say) for d in desktops))
            print(f"{task.id}'s setup in all {args.concurrent}: {time.monotonic() - t0:.1f} s")
        pss_all = []
        for d in desktops:
            rss, pss, count = desktop_memory_mib(d)
            pss_all.append(pss)
            print(f"  {d.name}: {count} processes, RSS {rss:.0f} MiB, PSS {pss:.0f} MiB")
        taken = before - mem_available_mib()
        print(
            f"per desktop: PSS median {statistics.median(pss_all):.0f} MiB "
            f"(max {max(pss_all):.0f}); host MemAvailable fell {taken:.0f} MiB = "
            f"{taken / args.concurrent:.0f} MiB per desktop"
        )
        print(f"when measured: {load_average()}")
    finally:
        await asyncio.gather(*(d.close() for d in desktops), return_exceptions=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--concurrent", type=int, default=8)
    parser.add_argument("--task", default="gimp-flip-export", help="task id, or none")
    asyncio.run(bench(parser.parse_args()))


if __name__ == "__main__":
    main()
