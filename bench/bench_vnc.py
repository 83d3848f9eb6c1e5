"""Compare our asyncio RFB client (app/rfb/client.py) with vncdotool on a local Xvnc.

Run: .venv/bin/python bench/bench_vnc.py [--frames 60] [--keys 30]

Starts its own Xvnc 1280x800 (plus a small Tk window to type into) and measures:
- full-frame read latency: a non-incremental request until the RGB pixels are in
  hand (ours: `frame()`; vncdotool: `refreshScreen()` + `numpy.asarray(screen)`);
- key-press-to-visible-change latency: from sending a key until a frame shows it,
  by polling full frames (both clients) and, for ours, by `settle()` on incremental
  updates.
vncdotool runs through `vncdotool.api` (its own Twisted thread), outside our loop.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from figures import Figure, emit

from app.desktops.local.bare_xvnc import bare_xvnc
from app.rfb.client import VNCClient, connect

PASSWORD = "benchpw1"
# An entry that does not blink its cursor: a blink would look like the key's change.
TK_APP = """
import tkinter as tk
root = tk.Tk()
root.geometry("600x80+100+100")
entry = tk.Entry(root, font=("TkFixedFont", 40), insertofftime=0)
entry.pack(fill="both", expand=True)
entry.bind("<Motion>", lambda e: print("hover", flush=True))
def ready():
    entry.focus_force()
    root.update()
    root.winfo_pointerxy()
    print("ready", flush=True)
root.after_idle(ready)
root.mainloop()
"""
REGION = (slice(100, 180), slice(100, 700))
KEY_A, KEY_BACKSPACE = 0x61, 0xFF08

Pixels = npt.NDArray[np.uint8]


@contextmanager
def desktop() -> Iterator[tuple[int, IO[bytes]]]:
    """A fresh Xvnc with the Tk window: yields (rfb port, the window's stdout)."""
    with (
        tempfile.TemporaryDirectory(prefix="bench-vnc-") as tmp,
        bare_xvnc(Path(tmp), PASSWORD) as xvnc,
    ):
        tk = subprocess.Popen([sys.executable, "-c", TK_APP], env=xvnc.env, stdout=subprocess.PIPE)
        try:
            assert tk.stdout is not None
            if tk.stdout.readline().strip() != b"ready":
                raise RuntimeError("the Tk window did not start")
            yield xvnc.port, tk.stdout
        finally:
            tk.kill()
            tk.wait()


def _summary(name: str, seconds: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in seconds)
    p90 = ms[min(len(ms) - 1, round(0.9 * (len(ms) - 1)))]
    median = statistics.median(ms)
    print(f"  {name:<44} median {median:7.2f} ms   p90 {p90:7.2f} ms   (n={len(ms)})")
    return {"median": median, "p90": p90}


# ------------------------------------------------------------------ ours


async def _ours(
    port: int, tk_stdout: IO[bytes], frames: int, keys: int
) -> dict[str, dict[str, float]]:
    client = await connect("127.0.0.1", port, PASSWORD)
    try:
        await _focus(client, tk_stdout)
        await client.frame()
        full = []
        for _ in range(frames):
            start = time.perf_counter()
            await client.frame()
            full.append(time.perf_counter() - start)

        poll, incremental = [], []
        for i in range(keys):
            await client.settle(timeout=2, quiet=0.2, change_wait=0.05)
            before = (await client.frame()).pixels[REGION]
            start = time.perf_counter()
            await client.key_combo([KEY_A if i % 2 == 0 else KEY_BACKSPACE])
            while np.array_equal((await client.frame()).pixels[REGION], before):
                if time.perf_counter() - start > 5:
                    raise RuntimeError("the typed key never showed")
            poll.append(time.perf_counter() - start)

            await client.settle(timeout=2, quiet=0.2, change_wait=0.05)
            start = time.perf_counter()
            await client.key_combo([KEY_A if i % 2 == 0 else KEY_BACKSPACE])
            result = await client.settle(timeout=5, quiet=0.0, change_wait=5, min_area=16)
            if not result.changed:
                raise RuntimeError("settle saw no change after a key")
            incremental.append(time.perf_counter() - start)
        return {
            "full": _summary("ours: full frame()", full),
            "key_poll": _summary("ours: key -> change (polling frame())", poll),
            "key_incremental": _summary("ours: key -> change (settle, incremental)", incremental),
        }
    finally:
        await client.close()


async def _focus(client: VNCClient, tk_stdout: IO[bytes]) -> None:
    """Tk drops input sent just after its window maps: wiggle the pointer over it
    until it reports the motion."""
    hovered = asyncio.ensure_future(asyncio.to_thread(tk_stdout.readline))
    deadline = time.monotonic() + 10
    attempt = 0
    while not hovered.done():
        if time.monotonic() > deadline:
            raise RuntimeError("the Tk window never saw the pointer")
        attempt += 1
        await client.pointer(400 + attempt % 2, 140)
        await asyncio.wait([hovered], timeout=0.05)
    # Keep the pointer over the window: Tk loses keyboard focus when it leaves.
    await client.pointer(690, 170)


# ------------------------------------------------------------------ vncdotool


def _vncdotool(port: int, frames: int, keys: int) -> dict[str, dict[str, float]]:
    from vncdotool import api

    # Its VNC auth uses cryptography's deprecated TripleDES; the warning is noise here.
    warnings.filterwarnings("ignore", message="TripleDES has been moved")

    client: Any = api.connect(f"127.0.0.1::{port}", password=PASSWORD)
    try:

        def grab() -> Pixels:
            client.refreshScreen(incremental=False)
            return np.asarray(client.screen.convert("RGB"))

        grab()
        full = []
        for _ in range(frames):
            start = time.perf_counter()
            grab()
            full.append(time.perf_counter() - start)

        poll = []
        for i in range(keys):
            time.sleep(0.2)  # let the previous change finish drawing
            before = grab()[REGION]
            start = time.perf_counter()
            client.keyPress("a" if i % 2 == 0 else "bsp")
            while np.array_equal(grab()[REGION], before):
                if time.perf_counter() - start > 5:
                    raise RuntimeError("the typed key never showed (vncdotool)")
            poll.append(time.perf_counter() - start)
        return {
            "full": _summary("vncdotool: refreshScreen + screen", full),
            "key_poll": _summary("vncdotool: key -> change (polling refresh)", poll),
        }
    finally:
        client.disconnect()
        api.shutdown()


def _ratio(label: str, theirs: float, ours: float) -> None:
    print(f"  {label:<44} vncdotool / ours = {theirs / ours:5.2f}x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--frames", type=int, default=60)
    parser.add_argument("--keys", type=int, default=30)
    parser.add_argument("--figures", action="store_true", help="also print the figures line")
    args = parser.parse_args(argv)

    print("Xvnc 1280x800, loopback, Raw encoding")
    with desktop() as (port, tk_stdout):
        ours = asyncio.run(_ours(port, tk_stdout, args.frames, args.keys))
        theirs = _vncdotool(port, args.frames, args.keys)
    print("ratios (median):")
    _ratio("full frame", theirs["full"]["median"], ours["full"]["median"])
    _ratio("key -> change, both polling full frames", theirs["key_poll"]["median"],
           ours["key_poll"]["median"])  # fmt: skip
    _ratio("key -> change, ours incremental", theirs["key_poll"]["median"],
           ours["key_incremental"]["median"])  # fmt: skip
    if args.figures:
        emit(
            [
                Figure("frame read 1280×800, ours", ours["full"]["median"], "ms",
                       theirs["full"]["median"], "vncdotool"),
                Figure("key → change seen, ours (incremental)",
                       ours["key_incremental"]["median"], "ms",
                       theirs["key_poll"]["median"], "vncdotool (polling)"),
            ]
        )  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
