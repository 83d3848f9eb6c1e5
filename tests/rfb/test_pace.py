"""A settle sized from the screen's own pace (app.rfb.pace): the rule alone, and on a
real Xvnc with a window that draws some answers in one go and some in two parts."""

from __future__ import annotations

import asyncio
import importlib.util
import shutil
import sys
import time
from collections.abc import AsyncIterator, Iterator

import numpy as np
import pytest

from app.core.actions import Key
from app.desktops.local.bare_xvnc import BareXvnc, bare_xvnc
from app.rfb.client import VNCClient, connect
from app.rfb.pace import FLOOR, MARGIN, SAMPLES, Pace

# ---------------------------------------------------------------- the rule


def test_a_kind_gets_the_whole_window_until_enough_bursts_were_seen() -> None:
    pace = Pace()
    for _ in range(SAMPLES - 1):
        pace.burst("move", [])
    assert pace.quiet("move", 0.1) == 0.1
    pace.burst("move", [])
    assert pace.quiet("move", 0.1) == FLOOR
    # Another kind, and no kind at all, still get the caller's window.
    assert pace.quiet("click", 0.1) == 0.1
    assert pace.quiet(None, 0.1) == 0.1


def test_the_quiet_covers_the_longest_pause_seen_twice_within_the_window() -> None:
    pace = Pace()
    for pauses in ([0.01], [0.04, 0.002], *([[]] * SAMPLES)):
        pace.burst("click", pauses)
    assert pace.quiet("click", 0.1) == FLOOR  # 0.04 came once: a timer's, maybe
    pace.burst("click", [0.03])
    assert pace.quiet("click", 0.1) == pytest.approx(MARGIN * 0.03)
    pace.burst("click", [0.05])
    assert pace.quiet("click", 0.1) == pytest.approx(MARGIN * 0.04)
    assert pace.quiet("click", 0.05) == 0.05  # never past the caller's window


def test_a_late_change_teaches_its_kind() -> None:
    pace = Pace()
    for _ in range(SAMPLES):
        pace.burst("key", [])
    assert pace.quiet("key", 0.1) == FLOOR
    pace.late("key", 0.05)
    assert pace.quiet("key", 0.1) == FLOOR
    pace.late("key", 0.05)
    assert pace.quiet("key", 0.1) == pytest.approx(MARGIN * 0.05)


# ---------------------------------------------------------------- on a real screen

PASSWORD = "p4cepace"
# `a` repaints one square at once; `b` paints one square, and another PAUSE ms later
# (a dialog that draws in parts); `c` clears both. Each says what it drew.
PAUSE_MS = 60
TK_APP = f"""
import tkinter as tk
root = tk.Tk()
root.geometry("400x200+0+0")
canvas = tk.Canvas(root, width=400, height=200, bg="white", highlightthickness=0)
canvas.pack()
count = 0
def say(text):
    print(text, flush=True)
def a(event):
    global count
    count += 1
    canvas.create_rectangle(10, 10, 60, 60, fill=("blue" if count % 2 else "green"), width=0)
def b(event):
    canvas.create_rectangle(100, 10, 150, 60, fill="black", width=0, tags="b")
    def second():
        canvas.create_rectangle(200, 10, 250, 60, fill="black", width=0, tags="b")
        root.update_idletasks()
        say("second")
    root.after({PAUSE_MS}, second)
def c(event):
    canvas.delete("b")
root.bind("<KeyPress-a>", a)
root.bind("<KeyPress-b>", b)
root.bind("<KeyPress-c>", c)
root.bind("<KeyPress-x>", lambda event: say("x"))
def ready():
    root.focus_force()
    root.update()
    root.winfo_pointerxy()
    say("ready")
root.after_idle(ready)
root.mainloop()
"""
SECOND = (slice(10, 60), slice(200, 250))


@pytest.fixture(scope="module")
def xvnc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BareXvnc]:
    assert shutil.which("Xvnc"), "Xvnc not installed: run scripts/setup.sh"
    with bare_xvnc(tmp_path_factory.mktemp("xvnc"), PASSWORD) as desktop:
        yield desktop


@pytest.fixture
async def live(xvnc: BareXvnc) -> AsyncIterator[VNCClient]:
    assert importlib.util.find_spec("tkinter"), "no tkinter: run scripts/setup.sh --tests"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", TK_APP, env=xvnc.env, stdout=asyncio.subprocess.PIPE
    )
    assert proc.stdout is not None
    client = await connect("127.0.0.1", xvnc.port, PASSWORD, timeout=5)
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), 15)
        assert line.strip() == b"ready"
        # Keys sent in the first ~0.1 s after a Tk window maps are lost (see
        # tests/rfb/test_vnc.py): press one the window reports until it does.
        deadline = time.monotonic() + 10
        while True:
            assert time.monotonic() < deadline, "the Tk window never saw a key"
            await client.perform(Key("x"))
            try:
                if (await asyncio.wait_for(proc.stdout.readline(), 0.2)).strip() == b"x":
                    break
            except TimeoutError:
                continue
        # The first full picture a connection receives is no change to settle on.
        await client.frame()
        yield client
    finally:
        await client.close()
        proc.kill()
        await proc.wait()


def _second_square_drawn(pixels: np.ndarray) -> bool:
    return bool((pixels[SECOND] == 0).all())


async def _until(condition: object, timeout: float = 5.0) -> None:
    assert callable(condition)
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the screen never showed it"
        await asyncio.sleep(0.005)


async def _press_until_learned(client: VNCClient, key: str) -> None:
    """Press `key` until its kind's pace is trusted, each press settled and seen."""
    for _ in range(SAMPLES + 1):
        await client.perform(Key(key))
        result = await client.settle(adaptive=True)
        assert result.changed and result.settled


@pytest.mark.desktop
async def test_a_kind_that_repaints_at_once_settles_near_the_floor(live: VNCClient) -> None:
    await _press_until_learned(live, "a")
    assert live.pace.quiet("key", 0.1) < 2 * FLOOR
    assert live.pace.quiet("click", 0.1) == 0.1  # a kind not seen keeps the window


@pytest.mark.desktop
async def test_a_burst_cut_short_teaches_its_kind_to_wait_for_the_rest(
    live: VNCClient,
) -> None:
    await _press_until_learned(live, "a")
    pace = live.pace
    assert pace.quiet("key", 0.1) * 1000 < PAUSE_MS  # `b`'s second part would be missed
    for _ in range(2):  # a pause that came twice is the kind's
        await live.perform(Key("b"))
        await live.settle(adaptive=True)
        # The second square comes; the connection has a request out, so it arrives.
        await _until(lambda: _second_square_drawn(live.current_frame().pixels))
        await live.perform(Key("c"))  # the next input: the late change is learned now
        await live.settle(adaptive=True)
    assert pace.quiet("key", 0.1) * 1000 > PAUSE_MS
    assert not _second_square_drawn(live.current_frame().pixels)
    # The next burst of the kind is waited for whole.
    await live.perform(Key("b"))
    result = await live.settle(adaptive=True)
    assert result.settled
    assert _second_square_drawn(live.current_frame().pixels)
