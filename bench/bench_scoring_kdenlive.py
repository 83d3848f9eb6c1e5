"""Seconds to score each Kdenlive task's full evaluator on a finished state.

    .venv/bin/python bench/bench_scoring_kdenlive.py [--repeats 3]

For each task in tasks/kdenlive/, a fresh local desktop gets the task's uploads
(without launching Kdenlive). Tasks with an oracle reference (L3) then run the
oracle's commands, so the project and the render the checks read exist. For the
others, the task's start project is copied to every project path the checks
name, so each check parses a real project. `score_task` then runs `--repeats`
times: each project file is fetched and parsed, and ffprobe runs in the guest
once per render. Prints the median per task and the median over all tasks (the
target is ≤ 5 s). The figures move with the machine's load: compare within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path

from app.agents.scripted import Oracle, load_script
from app.checks.tree import leaves
from app.desktops.local import LocalDesktop
from app.scoring import score_task
from app.tasks.loader import load_task, resolve_asset
from app.tasks.model import Task, UploadStep

ROOT = Path(__file__).resolve().parent.parent


async def finish(task: Task, desktop: LocalDesktop) -> None:
    """Put the task's deliverables in place without the GUI."""
    start_project: bytes | None = None
    for step in task.setup:
        if isinstance(step, UploadStep):
            data = resolve_asset(task.folder, step.upload.src, "upload.src").read_bytes()
            await desktop.guest.write_file(step.upload.dest, data)
            if step.upload.dest.endswith(".kdenlive"):
                start_project = data
    assert task.reference is not None
    oracles = [e for e in load_script(task.folder / task.reference) if isinstance(e, Oracle)]
    for oracle in oracles:
        result = await desktop.guest.run(list(oracle.argv), timeout=oracle.timeout)
        if not result.ok:
            raise RuntimeError(f"{task.id}: oracle failed: {result.stderr[-500:]!r}")
    if oracles or start_project is None:
        return
    for leaf in leaves(task.eval_tree):
        for path in leaf.spec.files(leaf.params):
            if path.endswith(".kdenlive"):
                await desktop.guest.write_file(path, start_project)


async def bench(repeats: int) -> None:
    medians: list[float] = []
    print(f"{'task':32} {'median s':>9} {'max s':>7}  checks  passed")
    for path in sorted((ROOT / "tasks" / "kdenlive").glob("*.yaml")):
        task = load_task(path)
        async with LocalDesktop() as desktop:
            await desktop.reset()
            await finish(task, desktop)
            times: list[float] = []
            passed = 0
            checks = 0
            for _ in range(repeats):
                start = time.perf_counter()
                result = await score_task(task, desktop.guest)
                times.append(time.perf_counter() - start)
                checks = len(result.checks)
                passed = sum(c.passed for c in result.checks)
        median = statistics.median(times)
        medians.append(median)
        print(f"{task.id:32} {median:9.3f} {max(times):7.3f}  {checks:6}  {passed}")
    print(f"{'kdenlive (median of tasks)':32} {statistics.median(medians):9.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    asyncio.run(bench(parser.parse_args().repeats))


if __name__ == "__main__":
    main()
