"""Episodes per hour of a batch with the scripted reference agent, by concurrency.

    .venv/bin/python bench/bench_batch.py [--task gimp-flip-export] [--episodes 4]
        [--concurrency 1 2 4] [--backend local]

Each concurrency level runs its own batch of `--episodes` episodes (one task, the
reference agent, repeats) into a throw-away database and prints wall time,
episodes per hour and how many passed. On a shared 2-core machine the figures
move with the load: run it when the machine is quiet and compare within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import tempfile
import time
from pathlib import Path

from app.batch import BatchOptions, resolve_tasks, start_batch
from app.store import Store


async def one(task_ref: str, episodes: int, concurrency: int, backend: str) -> None:
    tasks = resolve_tasks([task_ref], Path("tasks"))
    with (
        tempfile.TemporaryDirectory(prefix="deskloop-bench-") as folder,
        Store(Path(folder) / "db.sqlite") as store,
    ):
        runner = start_batch(
            store,
            tasks,
            ["reference"],
            episodes,
            BatchOptions(backend=backend, concurrency=concurrency),
            progress_stream=io.StringIO(),
        )
        started = time.monotonic()
        rows = await runner.run()
        seconds = time.monotonic() - started
    passed = sum(1 for r in rows if r.episode is not None and r.episode.passed)
    print(
        f"{backend:<8} concurrency {concurrency}: {episodes} episodes in {seconds:6.1f} s"
        f" = {episodes / seconds * 3600:6.1f} episodes/hour ({passed}/{episodes} passed)",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="gimp-flip-export")
    parser.add_argument("--episodes", type=int, default=4)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--backend", default="local")
    args = parser.parse_args()
    for concurrency in args.concurrency:
        asyncio.run(one(args.task, args.episodes, concurrency, args.backend))


if __name__ == "__main__":
    main()
