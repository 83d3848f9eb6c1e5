"""Benchmark the local backend at 1280×800 with the real GIMP task.

Prints, against the foundation's targets:
- reset time of the GIMP task (fresh desktop + setup until GIMP's window settled);
- median frame-read latency (`Desktop.frame()`, a fresh full frame each time);
- median harness overhead per step: from the agent's answer to the next observation,
  i.e. action sent → screen settled → frame read → PNG encoded → step recorded
  (agent time excluded), measured by a timing agent inside the real runner, with the
  settle sized from the screen's pace (the default) and with the fixed quiet window;
- the limit it is compared with, measured in the same run on the same screen: from
  sending the same key to the first update that shows its change;
- with `--evidence-runs N`: each of EVIDENCE_TASKS' reference solutions run N times
  with the adaptive settle, each run's score and every check's outcome and evidence
  compared with the first run's, file sizes aside (a settle that cut a burst short
  would show as a reference that failed or wrote something else).

Run: .venv/bin/python bench/bench_episode.py [--resets 3] [--frames 100] [--steps 40]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from figures import Figure, emit

from app.agents.base import AgentContext, Observation
from app.core.actions import Action, Done, Key
from app.desktops.local.desktop import LocalDesktop
from app.desktops.local.guest import LocalGuest
from app.desktops.local.session import LocalSession
from app.desktops.local.windows import WindowWatch
from app.episode.control import RunOptions
from app.episode.launch import launch
from app.episode.prepare import prepare_start
from app.episode.runner import EpisodeRunner
from app.rfb.client import VNCSession
from app.store import Store
from app.tasks.loader import load_task
from app.users.simulated import SimulatedUser

ROOT = Path(__file__).resolve().parent.parent
TASK = ROOT / "tasks" / "gimp" / "gimp-flip-export.yaml"


# Two of GIMP's tool shortcuts (rectangle and ellipse select), in turn: each key
# changes the toolbox and the tool options, as an agent's key usually changes the app.
STEP_ACTIONS: tuple[Key, Key] = (Key("r"), Key("e"))


class TimingAgent:
    """Presses STEP_ACTIONS in turn (a visible change each step), then DONE."""

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
        action: Action = Done() if n >= self.steps else STEP_ACTIONS[n % 2]
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


class Stages:
    """Seconds spent in named parts of a reset, summed per reset: each part is one of
    the desktop's own methods, timed by wrapping it for the bench's run."""

    def __init__(self) -> None:
        self.runs: list[dict[str, float]] = []

    def wrap(self, owner: type, method: str, label: str) -> None:
        original = getattr(owner, method)
        stages = self

        async def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return await original(*args, **kwargs)
            finally:
                if stages.runs:
                    run = stages.runs[-1]
                    run[label] = run.get(label, 0.0) + time.perf_counter() - t0

        setattr(owner, method, timed)

    def median(self, label: str) -> float:
        return statistics.median(run.get(label, 0.0) for run in self.runs)


def watch_reset_stages() -> Stages:
    """What a local reset and a GIMP task's setup are made of (see STAGES)."""
    stages = Stages()
    for owner, method, label in STAGES:
        stages.wrap(owner, method, label)
    return stages


STAGES: list[tuple[type, str, str]] = [
    (LocalDesktop, "_stop", "stop the old session"),
    (LocalSession, "_start_session_bus", "D-Bus session bus"),
    (LocalSession, "_start_xvnc", "Xvnc"),
    (LocalSession, "_wait_window_manager", "window manager (openbox)"),
    (WindowWatch, "start", "window watch"),
    (VNCSession, "connected", "VNC connection"),
    (LocalGuest, "write_file", "setup: upload"),
    (LocalGuest, "launch", "setup: launch (under the exec trace)"),
]


# A file's size is left out of the comparison: GIMP writes the time of the export into
# the PNG, so the same picture is a byte longer or shorter from one run to the next
# (10061 and 10062 bytes, measured), whatever the settle.
BYTES = re.compile(r"\(\d+ bytes\)")
EVIDENCE_TASKS = ("gimp/gimp-flip-export", "gimp/gimp-grayscale-export", "gimp/gimp-poster-resize")


async def evidence_runs(runs: int) -> tuple[int, int, list[str]]:
    """(reference runs, runs whose score and evidence equal their task's first run's,
    what differed)."""
    same = total = 0
    differed: list[str] = []
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "evidence.db") as store:
        async with LocalDesktop() as desktop:
            for name in EVIDENCE_TASKS:
                task = load_task(ROOT / "tasks" / f"{name}.yaml")
                first: list[tuple[Any, ...]] | None = None
                for n in range(runs):
                    episode = launch(task, store, backend="local", agent="reference",
                                     desktop=desktop)  # fmt: skip
                    result = await episode.run()
                    seen = [(result.score,)] + [
                        (c.path, c.passed, c.score, BYTES.sub("(N bytes)", c.evidence))
                        for c in result.checks
                    ]
                    total += 1
                    if first is None:
                        first = seen
                    if seen == first and result.passed:
                        same += 1
                    else:
                        differed.append(f"{task.id} run {n + 1}: score {result.score}")
    return total, same, differed


async def main(resets: int, frames: int, steps: int, figures: bool, runs: int) -> None:
    task = load_task(TASK)
    reset_times: list[float] = []
    setup_lines: list[tuple[list[tuple[float, str]], float]] = []
    stages = watch_reset_stages()
    async with LocalDesktop() as desktop:
        for _ in range(resets):
            stages.runs.append({})
            prepared = await prepare_start(task, desktop, "local")
            if prepared.error is not None:
                raise SystemExit(f"the GIMP task's start failed: {prepared.error}")
            reset_times.append(prepared.seconds)
            setup_lines.append((prepared.lines, prepared.seconds))
        frame_times: list[float] = []
        for _ in range(frames):
            t0 = time.perf_counter()
            await desktop.frame()
            frame_times.append(time.perf_counter() - t0)
        overheads: dict[bool, list[float]] = {}
        with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "bench.db") as store:
            # Fixed first: the adaptive run then starts from a pace learned from
            # scratch (a fixed settle teaches the connection nothing).
            for adaptive in (False, True):
                agent = TimingAgent(steps)
                options = RunOptions(settle_adaptive=adaptive)
                runner = EpisodeRunner(
                    task, desktop, agent, SimulatedUser(), store, backend="local", options=options
                )
                await runner.run()
                overheads[adaptive] = agent.overheads
        limits = await change_latencies(desktop, steps)
    limit = statistics.median(limits)
    reset = statistics.median(reset_times)
    print("local backend, 1280×800, GIMP task", TASK.stem)
    print(f"reset + setup (prepare_start): {ms(reset_times)}")
    print(f"  each: {', '.join(f'{t:.2f} s' for t in reset_times)}")
    parts = reset_parts(setup_lines, stages)
    for label, seconds in parts:
        print(f"  {label:38} {seconds * 1000:7.0f} ms  {seconds / reset:5.1%}")
    print(f"frame read:                   {ms(frame_times)}")
    print(f"key → change seen (limit):   {ms(limits)}")
    for adaptive, label in ((False, "fixed quiet"), (True, "adaptive")):
        values = overheads[adaptive]
        ratio = statistics.median(values) / limit
        print(f"overhead per step, {label:11}: {ms(values)}   {ratio:5.1f}× the limit")
    print("  goal: adaptive median ≤ 40 ms")
    evidence: list[Figure] = []
    if runs:
        total, same, differed = await evidence_runs(runs)
        print(f"reference runs with the first run's score and evidence: {same} of {total}")
        for line in differed:
            print(f"  differed: {line}")
        evidence.append(Figure("reference runs with identical evidence", same, "runs",
                               total, "reference runs", lower_is_better=False))  # fmt: skip
    if figures:
        limit_label = "limit: key → change seen"
        emit(
            [
                Figure("step overhead, adaptive settle", ms_of(overheads[True]), "ms",
                       limit * 1000, limit_label),
                Figure("step overhead, fixed 100 ms quiet", ms_of(overheads[False]), "ms",
                       limit * 1000, limit_label),
                Figure("frame read 1280×800", ms_of(frame_times), "ms"),
                Figure("local reset + GIMP setup", reset, "s", 1.03, "VM restore (FIELD_NOTES)"),
                *(Figure(f"  of which {label}", seconds, "s") for label, seconds in parts),
                *evidence,
            ]
        )  # fmt: skip


def ms_of(values: list[float]) -> float:
    return statistics.median(values) * 1000


def reset_parts(
    setup_lines: list[tuple[list[tuple[float, str]], float]], stages: Stages
) -> list[tuple[str, float]]:
    """The reset's parts (median seconds): the timed stages, then what setup's own
    lines say of the wait for GIMP's window (from the wait's line to setup's end)."""
    parts = [(label, stages.median(label)) for _, _, label in STAGES]
    waits = []
    for lines, seconds in setup_lines:
        starts = [at for at, text in lines if text.startswith("wait for window")]
        if starts:
            waits.append(seconds - starts[0])
    if waits:
        parts.append(("setup: wait for GIMP's window", statistics.median(waits)))
    return parts


async def change_latencies(desktop: LocalDesktop, count: int) -> list[float]:
    """From sending a step's key to the first update that shows its change: what no
    settle can beat (it must see the change before it can see the quiet after it)."""
    latencies = []
    for n in range(count):
        await desktop.settle(timeout=1.0, quiet=0.05, change_wait=0.2)
        t0 = time.perf_counter()
        await desktop.act(STEP_ACTIONS[n % 2])
        result = await desktop.settle(timeout=1.0, quiet=0.0, change_wait=1.0)
        if result.changed:
            latencies.append(time.perf_counter() - t0)
    if not latencies:
        raise SystemExit("no pointer move changed the screen: the limit cannot be measured")
    return latencies


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--resets", type=int, default=3)
    parser.add_argument("--frames", type=int, default=100)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--figures", action="store_true", help="also print the figures line")
    parser.add_argument(
        "--evidence-runs", type=int, default=0, help="run each reference this many times"
    )
    args = parser.parse_args()
    asyncio.run(main(args.resets, args.frames, args.steps, args.figures, args.evidence_runs))
