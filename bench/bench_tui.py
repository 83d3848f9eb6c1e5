"""The TUI's live view while an episode runs: update rate and CPU cost.

Runs the same episode twice in the real app (Textual's headless driver, so the
screen is composed and rendered but not written to a terminal): once with the live
view off, once on. The episode is an xterm on a real local desktop whose scripted
agent makes the terminal scroll as fast as it can for 8 s (`timeout 8 yes ...`: the
whole screen changes all the time, a worst case for redraws), then says DONE.
Prints, for each run:

- frames received and redrawn per second (the cap is LiveScreen.fps, 12/s);
- terminal rows repainted per redraw;
- process CPU (user+sys) per wall second, with and without the live view; the
  difference is what the live view costs (the runner, the VNC server's traffic on
  our side and PNG encoding are in both);
- event-loop lag (how late a 50 ms timer fires): how much the UI is starved;
- the Live screen's own redraw capacity, without VNC: a recorded frame scrolled so
  every row changes, redrawn as fast as the app can (what the view could do if the
  desktop and the VNC server delivered changes faster).

Run: .venv/bin/python bench/bench_tui.py [--size 160x50] [--task FILE --agent SPEC]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import tempfile
import textwrap
import time
from pathlib import Path

from app.ui.app import DeskLoopApp
from app.ui.halfblock import HalfBlockView
from app.ui.screens.live import LiveScreen

TASK = """\
id: xterm-scroll
app: gimp
level: L1
title: Scroll a terminal
instruction: Scroll for 8 seconds, then create ~/proof.txt.
setup:
  - launch: [xterm, -geometry, 160x50+0+0]
  - wait_window: {class: XTerm, timeout: 60}
budget: {steps: 20, seconds: 300}
evaluate: {check: file_exists, path: ~/proof.txt}
reference: scroll.yaml
"""

SCRIPT = """\
kind: demonstration
steps:
  - type: "timeout 8 yes 'a line of a terminal that scrolls as fast as it can'\\n"
  - wait: 9
  - type: "touch ~/proof.txt\\n"
  - wait_for: {file: ~/proof.txt, timeout: 60}
  - done
"""


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def run_once(
    tasks_dir: Path, db: Path, task_id: str, agent: str, size: tuple[int, int], fps: float
) -> dict[str, float]:
    LiveScreen.fps = fps
    app = DeskLoopApp(db=db, tasks_dir=tasks_dir)
    lags: list[float] = []
    async with app.run_test(size=size) as pilot:
        task = next(t for t in app.tasks if t.id == task_id)
        session = app.start_episode(task, agent, "simulated")
        await pilot.pause()

        async def lag_probe() -> None:
            while True:
                before = time.monotonic()
                await asyncio.sleep(0.05)
                lags.append(time.monotonic() - before - 0.05)

        probe = asyncio.create_task(lag_probe())
        # Measure from the agent's first step (setup and GIMP start are not the view's).
        while not session.steps and not session.ended:
            await pilot.pause(0.02)
        live = app.screen
        assert isinstance(live, LiveScreen)
        view = live.query_one(HalfBlockView)
        frames0, shown0, rows0 = live.frames_received, view.frames_shown, view.rows_painted
        wall0, cpu0 = time.monotonic(), cpu_seconds()
        while not session.ended:
            await pilot.pause(0.05)
        wall, cpu = time.monotonic() - wall0, cpu_seconds() - cpu0
        probe.cancel()
        result = session.result
        assert result is not None
        shown = view.frames_shown - shown0
        return {
            "wall": wall,
            "cpu": cpu / wall,
            "received": (live.frames_received - frames0) / wall,
            "shown": shown / wall,
            "rows": (view.rows_painted - rows0) / shown if shown else 0.0,
            "lag_p50": statistics.median(lags) * 1000 if lags else 0.0,
            "lag_max": max(lags) * 1000 if lags else 0.0,
            "passed": float(bool(result.passed)),
        }


async def render_capacity(frame_png: Path, size: tuple[int, int], seconds: float = 3.0) -> float:
    """Redraws per second the Live screen manages on its own (no VNC, no cap): a
    recorded frame, scrolled by 8 pixels per redraw so every row changes."""
    import numpy as np
    from PIL import Image

    with Image.open(frame_png) as image:
        frame = np.asarray(image.convert("RGB"))
    LiveScreen.fps = 0.0
    app = DeskLoopApp(db=frame_png.parent.parent.parent / "capacity.db", tasks_dir=Path("."))
    async with app.run_test(size=size) as pilot:
        await pilot.press("l")
        await pilot.pause()
        view = app.screen.query_one(HalfBlockView)
        count, started = 0, time.monotonic()
        while time.monotonic() - started < seconds:
            view.show(np.roll(frame, 8 * count, axis=0))
            await pilot.pause()  # until the screen has processed the repaint
            count += 1
        return count / (time.monotonic() - started)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="160x50", help="terminal size, COLSxROWS")
    parser.add_argument("--task", type=Path, help="a task file (default: the xterm scroller)")
    parser.add_argument("--agent", default="reference")
    args = parser.parse_args()
    cols, rows = (int(n) for n in args.size.split("x"))
    with tempfile.TemporaryDirectory(prefix="bench-tui-") as tmp:
        root = Path(tmp)
        if args.task is None:
            folder = root / "tasks" / "gimp"
            folder.mkdir(parents=True)
            (folder / "xterm-scroll.yaml").write_text(textwrap.dedent(TASK))
            (folder / "scroll.yaml").write_text(textwrap.dedent(SCRIPT))
            tasks_dir, task_id = root / "tasks", "xterm-scroll"
        else:
            tasks_dir, task_id = args.task.resolve().parent.parent, args.task.stem
        runs = {}
        cap = LiveScreen.fps
        for label, fps in (("live view off", 0.0), ("live view on", cap)):
            runs[label] = await run_once(
                tasks_dir, root / "db" / "bench.db", task_id, args.agent, (cols, rows), fps
            )
        frames = sorted((root / "db" / "frames").glob("*/*.png"))
        capacity = await render_capacity(frames[-1], (cols, rows)) if frames else 0.0
    print(f"terminal {cols}x{rows}, task {task_id}, agent {args.agent}")
    print(
        f"{'':16}{'wall s':>8}{'CPU/s':>8}{'recv/s':>8}{'drawn/s':>8}{'rows':>6}"
        f"{'lag p50':>9}{'lag max':>9}"
    )
    for label, r in runs.items():
        print(
            f"{label:16}{r['wall']:8.1f}{r['cpu']:8.2f}{r['received']:8.1f}{r['shown']:8.1f}"
            f"{r['rows']:6.0f}{r['lag_p50']:8.1f}ms{r['lag_max']:7.0f}ms"
            + ("" if r["passed"] else "  (episode did not pass)")
        )
    on, off = runs["live view on"], runs["live view off"]
    print(
        f"live view cost: {on['cpu'] - off['cpu']:+.2f} CPU seconds per second "
        f"at {on['shown']:.1f} redraws/s (cap {cap:g}/s)"
    )
    print(f"render capacity without VNC (every row changing): {capacity:.1f} redraws/s")


if __name__ == "__main__":
    asyncio.run(main())
