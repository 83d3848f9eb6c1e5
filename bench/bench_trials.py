"""The wait between two consecutive trials, with and without the next start prepared
ahead (`app.episode.ahead`).

    .venv/bin/python bench/bench_trials.py                       # gimp-flip-export
    .venv/bin/python bench/bench_trials.py --task gimp-poster-resize --backend libvirt

Runs two episodes of the task with its reference agent, one after the other, twice:
first as a session did before (the second episode resets its desktop and runs the
task's setup once the first has ended), then with the second episode's desktop brought
to its start state while the first runs. The wait is the time from the first episode's
end to the second one's desktop being at its start state, when its agent may act: what
a person in the seat waits between trials. (Without preparing ahead, the bench does the
runner's own first part, `prepare_start`, itself, to time it, and hands the result to
the episode.) Prints both waits and their ratio, and the
load average (a shared machine moves the times). The episodes are recorded in a
throw-away database; every desktop is closed at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

from figures import Figure, emit

from app.episode.ahead import DesktopsByKind, StartAhead
from app.episode.launch import launch
from app.episode.prepare import prepare_start
from app.store import Store
from app.tasks.loader import find_task
from app.tasks.model import Task


def say(text: str) -> None:
    print(f"  · {text}", file=sys.stderr, flush=True)


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.1f} {five:.1f} {fifteen:.1f} on {os.cpu_count()} cores"


async def _run(task: Task, store: Store, backend: str, ahead_of_time: bool) -> float:
    """Two episodes of `task` in a row; the seconds between the first one's end and the
    second one's start state."""
    desktops = DesktopsByKind(backend)
    ahead = StartAhead(desktops, what="trial", say=say)
    try:
        first = desktops.lend(task)
        if ahead_of_time:
            ahead.prepare(task)
        result = await launch(
            task, store, backend=backend, agent="reference", desktop=first, progress=say
        ).run()
        if not result.passed:
            raise SystemExit(f"the first episode did not pass: {result.error}")
        desktops.give_back(first)
        ended = time.monotonic()
        taken = await ahead.take(task) if ahead_of_time else None
        if taken is None:
            second = desktops.lend(task)
            prepared = await prepare_start(task, second, backend, say=say)
        else:
            second, prepared = taken
        wait = time.monotonic() - ended
        result = await launch(
            task, store, backend=backend, agent="reference", desktop=second,
            prepared=prepared, progress=say,
        ).run()  # fmt: skip
        if not result.passed:
            raise SystemExit(f"the second episode did not pass: {result.error}")
        desktops.give_back(second)
        return wait
    finally:
        await ahead.close()
        await desktops.close()


async def bench(args: argparse.Namespace) -> None:
    task = find_task(args.task, [Path("tasks")])
    print(f"at start: {load_average()}")
    with (
        tempfile.TemporaryDirectory(prefix="bench-trials-") as folder,
        Store(Path(folder) / "db.sqlite") as store,
    ):
        cold = await _run(task, store, args.backend, ahead_of_time=False)
        print(f"{task.id}: wait between two trials, reset after the first: {cold:.2f} s")
        warm = await _run(task, store, args.backend, ahead_of_time=True)
        print(f"{task.id}: wait between two trials, prepared ahead: {warm * 1000:.1f} ms")
    # A prepared start is handed over in well under a millisecond: the ratio is bounded
    # by the clock, so it is printed against a floor of 1 ms ("at least").
    print(f"ratio (reset after / prepared ahead): at least {cold / max(warm, 1e-3):.0f}x")
    print(f"at end: {load_average()}")
    if args.figures:
        emit(
            [
                Figure("wait between two trials, prepared ahead", warm * 1000, "ms",
                       cold * 1000, "reset after the trial"),
            ]
        )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="gimp-flip-export")
    parser.add_argument("--backend", choices=["local", "libvirt"], default="local")
    parser.add_argument("--figures", action="store_true", help="also print the figures line")
    asyncio.run(bench(parser.parse_args()))


if __name__ == "__main__":
    main()
