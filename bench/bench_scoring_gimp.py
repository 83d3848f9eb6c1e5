"""Seconds to score each GIMP task's full evaluator on its real finished state.

    .venv/bin/python bench/bench_scoring_gimp.py [--repeats 3] [TASK_ID ...]

For each task in tasks/gimp/ (or those named), a fresh local desktop runs the task's
reference solution (a GUI demonstration), so every file the checks read is what GIMP
wrote. `score_task` then runs `--repeats` more times on that state: each file fetched
through the guest channel, each probe run, every check (image decoding, SSIM, the XCF
reader) evaluated. Prints the median per task and the median over all tasks (the
target is ≤ 5 s). The figures move with the machine's load: compare within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from app.agents.factory import make_agent
from app.desktops.local import LocalDesktop
from app.runner import EpisodeRunner, RunOptions
from app.scoring import score_task
from app.store import Store
from app.tasks.loader import load_task
from app.users import SimulatedUser

ROOT = Path(__file__).resolve().parent.parent


async def bench(repeats: int, only: list[str]) -> None:
    medians: list[float] = []
    print(f"{'task':28} {'median s':>9} {'max s':>7}  checks  passed")
    paths = sorted((ROOT / "tasks" / "gimp").glob("*.yaml"))
    with tempfile.TemporaryDirectory() as folder, Store(Path(folder) / "db.sqlite") as store:
        for path in paths:
            if only and path.stem not in only:
                continue
            task = load_task(path)
            async with LocalDesktop() as desktop:
                runner = EpisodeRunner(
                    task,
                    desktop,
                    make_agent("reference", task),
                    SimulatedUser(),
                    store,
                    backend="local",
                    options=RunOptions(store_frames=False),
                )
                episode = await runner.run()
                if not episode.passed:
                    print(f"{task.id:28} reference did not pass: {episode.error or episode.score}")
                    continue
                started = time.time() - 60  # any moment before the files were written
                times: list[float] = []
                checks = passed = 0
                for _ in range(repeats):
                    start = time.perf_counter()
                    result = await score_task(task, desktop.guest, started)
                    times.append(time.perf_counter() - start)
                    checks = len(result.checks)
                    passed = sum(c.passed for c in result.checks)
            median = statistics.median(times)
            medians.append(median)
            print(f"{task.id:28} {median:9.3f} {max(times):7.3f}  {checks:6}  {passed}")
    if medians:
        print(f"{'gimp (median of tasks)':28} {statistics.median(medians):9.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("tasks", nargs="*", help="task ids (default: every GIMP task)")
    args = parser.parse_args()
    asyncio.run(bench(args.repeats, args.tasks))


if __name__ == "__main__":
    main()
