"""Seconds to score each task's full evaluator on a finished state, per app.

    .venv/bin/python bench/bench_scoring.py [--app gimp|blender|kdenlive|all] [--repeats 3]
        [TASK_ID ...]

For each task in tasks/<app>/ (or those named), a fresh local desktop is brought to a
finished state, then `score_task` runs `--repeats` times on it. How each app's state
is made:

- gimp: the task's reference solution runs (a GUI demonstration), so every file the
  checks read is what GIMP wrote. Scoring fetches each file through the guest channel,
  runs each probe and evaluates every check (image decoding, SSIM, the XCF reader).
- blender: the task's uploads (its start state) are written, without launching the
  GUI. Scoring makes one `blender -b` dump per .blend file the checks name, plus reads
  the image files.
- kdenlive: the task's uploads are written, without launching Kdenlive. Tasks with an
  oracle reference (L3) then run the oracle's commands, so the project and the render
  the checks read exist. For the others, the task's start project is copied to every
  project path the checks name, so each check parses a real project. Scoring fetches
  and parses each project file and runs ffprobe in the guest once per render.

Prints the median and max per task, how many checks ran and passed, and the median
over each app's tasks (the target is ≤ 5 s). The figures move with the machine's
load: compare within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from app.agents.factory import make_agent
from app.agents.reference_script import Oracle, load_script
from app.checks.tree import leaves
from app.desktops.local.desktop import LocalDesktop
from app.episode.control import RunOptions
from app.episode.runner import EpisodeRunner
from app.episode.scoring import score_task
from app.store import Store
from app.tasks.loader import load_task, resolve_asset
from app.tasks.model import Task, UploadStep
from app.users.simulated import SimulatedUser

ROOT = Path(__file__).resolve().parent.parent


class NotFinished(Exception):
    """The task's finished state could not be made; its row says why instead of times."""


async def run_reference(task: Task, desktop: LocalDesktop) -> float | None:
    """GIMP: run the reference solution through the real episode runner."""
    with tempfile.TemporaryDirectory() as folder, Store(Path(folder) / "db.sqlite") as store:
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
        raise NotFinished(f"reference did not pass: {episode.error or episode.score}")
    return time.time() - 60  # any moment before the files were written


async def upload_setup(task: Task, desktop: LocalDesktop) -> dict[str, bytes]:
    """Write the task's uploads on a fresh desktop, without launching the app; returns
    what was written where."""
    await desktop.reset()
    written: dict[str, bytes] = {}
    for step in task.setup:
        if isinstance(step, UploadStep):
            data = resolve_asset(task.folder, step.upload.src, "upload.src").read_bytes()
            await desktop.guest.write_file(step.upload.dest, data)
            written[step.upload.dest] = data
    return written


async def blender_start_state(task: Task, desktop: LocalDesktop) -> float | None:
    """Blender: the task's start state is what the checks read."""
    await upload_setup(task, desktop)
    return None


async def kdenlive_deliverables(task: Task, desktop: LocalDesktop) -> float | None:
    """Kdenlive: put the task's deliverables in place without the GUI."""
    written = await upload_setup(task, desktop)
    projects = [data for dest, data in written.items() if dest.endswith(".kdenlive")]
    assert task.reference is not None
    oracles = [e for e in load_script(task.folder / task.reference) if isinstance(e, Oracle)]
    for oracle in oracles:
        result = await desktop.guest.run(list(oracle.argv), timeout=oracle.timeout)
        if not result.ok:
            raise RuntimeError(f"{task.id}: oracle failed: {result.stderr[-500:]!r}")
    if oracles or not projects:
        return None
    for leaf in leaves(task.eval_tree):
        for path in leaf.spec.files(leaf.params):
            if path.endswith(".kdenlive"):
                await desktop.guest.write_file(path, projects[-1])
    return None


# Each app's way to a finished state; it returns the episode start to score against.
FINISH: dict[str, Callable[[Task, LocalDesktop], Awaitable[float | None]]] = {
    "gimp": run_reference,
    "blender": blender_start_state,
    "kdenlive": kdenlive_deliverables,
}


async def bench_app(app: str, repeats: int, only: list[str]) -> None:
    medians: list[float] = []
    for path in sorted((ROOT / "tasks" / app).glob("*.yaml")):
        if only and path.stem not in only:
            continue
        task = load_task(path)
        async with LocalDesktop() as desktop:
            try:
                started = await FINISH[app](task, desktop)
            except NotFinished as exc:
                print(f"{task.id:32} {exc}")
                continue
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
        print(f"{task.id:32} {median:9.3f} {max(times):7.3f}  {checks:6}  {passed}")
    if medians:
        print(f"{app + ' (median of tasks)':32} {statistics.median(medians):9.3f}")


async def bench(apps: list[str], repeats: int, only: list[str]) -> None:
    print(f"{'task':32} {'median s':>9} {'max s':>7}  checks  passed")
    for app in apps:
        await bench_app(app, repeats, only)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--app", choices=[*FINISH, "all"], default="all")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("tasks", nargs="*", help="task ids (default: every task of the app)")
    args = parser.parse_args()
    apps = list(FINISH) if args.app == "all" else [args.app]
    asyncio.run(bench(apps, args.repeats, args.tasks))


if __name__ == "__main__":
    main()
