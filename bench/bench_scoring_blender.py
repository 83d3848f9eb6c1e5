"""Seconds to score each Blender task's full evaluator, Blender dump included.

    .venv/bin/python bench/bench_scoring_blender.py [--repeats 3]

For each task in tasks/blender/, a fresh local desktop gets the task's uploads
(its start state, without launching the GUI) and `score_task` runs `--repeats`
times: one `blender -b` dump per .blend file the checks name, plus the image
files. Prints the median per task and over all tasks (the target is ≤ 5 s).
The figures move with the machine's load: compare within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path

from app.desktops.local import LocalDesktop
from app.scoring import score_task
from app.tasks.loader import load_task, resolve_asset
from app.tasks.model import UploadStep

ROOT = Path(__file__).resolve().parent.parent


async def bench(repeats: int) -> None:
    medians: list[float] = []
    print(f"{'task':32} {'median s':>9} {'max s':>7}  checks")
    for path in sorted((ROOT / "tasks" / "blender").glob("*.yaml")):
        task = load_task(path)
        async with LocalDesktop() as desktop:
            await desktop.reset()
            for step in task.setup:
                if isinstance(step, UploadStep):
                    src = resolve_asset(task.folder, step.upload.src, "upload.src")
                    await desktop.guest.write_file(step.upload.dest, src.read_bytes())
            times: list[float] = []
            checks = 0
            for _ in range(repeats):
                start = time.perf_counter()
                result = await score_task(task, desktop.guest)
                times.append(time.perf_counter() - start)
                checks = len(result.checks)
        median = statistics.median(times)
        medians.append(median)
        print(f"{task.id:32} {median:9.2f} {max(times):7.2f}  {checks}")
    print(f"{'blender (median of tasks)':32} {statistics.median(medians):9.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    asyncio.run(bench(parser.parse_args().repeats))


if __name__ == "__main__":
    main()
