"""How fast a web desktop resets on the local backend.

Run: .venv/bin/python bench/bench_web.py [--task tasks/web/web-kanban-start-card.yaml] [--n 10]

Measures, on a real local desktop with Debian's Chromium:
- **page reset** (the budget is 1 s): a task's `reset_page` step on a live web desktop,
  i.e. `window.reset()` over the DevTools pipe and the screen settling after it, with
  the page first disturbed by a click so each reset has something to undo;
- **fresh desktop**: `desktop.reset()` (a new Xvnc session) plus the whole setup
  (copy the app, start Chromium, wait for the page contract, reset, settle), which is
  what an episode of a web task pays when it does not reuse the desktop.
Prints the median and range of each; tests never time things, this does.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.core.actions import Click
from app.desktops.local.desktop import LocalDesktop
from app.episode.setup_steps import run_setup
from app.tasks.loader import load_task
from app.tasks.model import ResetPageStep

ROOT = Path(__file__).resolve().parent.parent
BUDGET_S = 1.0


def _summary(name: str, values: list[float]) -> str:
    return (
        f"{name}: median {statistics.median(values):.3f} s "
        f"(min {min(values):.3f}, max {max(values):.3f}, n={len(values)})"
    )


async def main(task_path: Path, n: int, fresh: int) -> int:
    task = load_task(task_path)
    reset_only = task.model_copy(
        update={"setup": [s for s in task.setup if isinstance(s, ResetPageStep)]}
    )
    if not reset_only.setup:
        print(f"{task_path}: no reset_page step to time", file=sys.stderr)
        return 2
    page_resets: list[float] = []
    fresh_starts: list[float] = []
    async with LocalDesktop() as desktop:
        for _ in range(fresh):
            started = time.monotonic()
            await desktop.reset()
            await run_setup(task, desktop)
            fresh_starts.append(time.monotonic() - started)
        for _ in range(n):
            # Disturb the page (a click on the first card's button) so reset has work.
            await desktop.act(Click(85, 187))
            await desktop.settle(timeout=2.0)
            started = time.monotonic()
            await run_setup(reset_only, desktop)
            page_resets.append(time.monotonic() - started)
    print(f"task {task.id} on the local backend")
    print(_summary("page reset (reset_page: window.reset() + settle)", page_resets))
    print(_summary("fresh desktop + setup (Xvnc, Chromium, contract, reset)", fresh_starts))
    worst = max(page_resets)
    verdict = "within" if worst <= BUDGET_S else "OVER"
    print(f"page reset budget {BUDGET_S:g} s: worst {worst:.3f} s, {verdict}")
    return 0 if worst <= BUDGET_S else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", type=Path, default=ROOT / "tasks/web/web-kanban-start-card.yaml")
    parser.add_argument("--n", type=int, default=10, help="page resets to time")
    parser.add_argument("--fresh", type=int, default=3, help="fresh desktops to time")
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.task, args.n, args.fresh)))
