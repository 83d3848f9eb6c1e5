"""Benchmark the local backend at 1280×800 with the real GIMP task.

Prints, against the foundation's targets:
- reset time of the GIMP task (fresh desktop + setup until GIMP's window settled);
- median frame-read latency (`Desktop.frame()`, a fresh full frame each time);
- median harness overhead per step: from the agent's answer to the next observation,
  i.e. action sent → screen settled → frame read → PNG encoded → step recorded
  (agent time excluded), measured by a timing agent inside the real runner.

Run: .venv/bin/python bench/bench_episode.py [--resets 3] [--frames 100] [--steps 40]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from app.agents.base import AgentContext, Observation
from app.core.actions import Action, Done, Move
from app.desktops.local.desktop import LocalDesktop
from app.episode.runner import EpisodeRunner
from app.episode.setup_steps import run_setup
from app.store import Store
from app.tasks.loader import load_task
from app.users.simulated import SimulatedUser

ROOT = Path(__file__).resolve().parent.parent
TASK = ROOT / "tasks" / "gimp" / "gimp-flip-export.yaml"


class TimingAgent:
    """Moves the pointer back and forth (a visible change each step), then DONE."""

    name = "bench-timing"

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.answered_at: float | None = None
        self.overheads: list[float] = []

    async def start(self, context: AgentContext) -> None:
        return None

    async def decide(self, observation: Observation) -> Action:
        now = time.perf_counter()
        if self.answered_at is not None:
            self.overheads.append(now - self.answered_at)
        n = observation.steps_taken
        action: Action = Done() if n >= self.steps else Move(600 + (n % 2) * 40, 400)
        self.answered_at = time.perf_counter()
        return action

    def step_info(self) -> dict[str, Any] | None:
        return None

    async def close(self) -> None:
        return None


def ms(values: list[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    median = statistics.median(values) * 1000
    return f"median {median:7.1f} ms  p90 {p90 * 1000:7.1f} ms  (n={len(values)})"


async def main(resets: int, frames: int, steps: int) -> None:
    task = load_task(TASK)
    reset_times: list[float] = []
    async with LocalDesktop() as desktop:
        for _ in range(resets):
            t0 = time.perf_counter()
            await desktop.reset()
            await run_setup(task, desktop)
            reset_times.append(time.perf_counter() - t0)
        frame_times: list[float] = []
        for _ in range(frames):
            t0 = time.perf_counter()
            await desktop.frame()
            frame_times.append(time.perf_counter() - t0)
        with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "bench.db") as store:
            agent = TimingAgent(steps)
            runner = EpisodeRunner(task, desktop, agent, SimulatedUser(), store, backend="local")
            await runner.run()
    print("local backend, 1280×800, GIMP task", TASK.stem)
    print(f"reset (desktop + GIMP setup): {ms(reset_times)}   target ≤ 5000 ms")
    print(f"  each: {', '.join(f'{t:.2f} s' for t in reset_times)}")
    print(f"frame read:                   {ms(frame_times)}   target ≤ 20 ms")
    print(f"harness overhead per step:    {ms(agent.overheads)}   target ≤ 150 ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--resets", type=int, default=3)
    parser.add_argument("--frames", type=int, default=100)
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    asyncio.run(main(args.resets, args.frames, args.steps))
