"""Setup's background looks (the frame and windows a failed setup keeps) end with
setup, even when a look loses the cancel meant to end it.

Python 3.11's `asyncio.wait_for` could turn a cancel that landed as its own timeout
fired into a TimeoutError, which a look takes as "no frame this time"; a loop ended
only by cancel then looked on forever while setup waited for it (seen as verify runs
that sat for minutes after their last setup step). The desktop here is a stand-in
whose frame() loses every cancel that way: the test is about setup's own logic.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from app.core.errors import GuestError
from app.desktops.base import DesktopInfo
from app.episode.setup_steps import LastSeen, run_setup
from app.tasks.loader import load_task

TASK = """\
id: looks-end
app: gimp
level: L1
title: A setup of one short sleep
instruction: Nothing to do.
setup:
  - sleep: 0.3
budget: {steps: 5, seconds: 60}
evaluate:
  all:
    - {check: file_exists, path: ~/proof.txt}
"""


class NoWindows:
    async def run(self, argv: list[str], timeout: float = 30.0) -> None:
        raise GuestError("no display here")


class CancelLosingDesktop:
    """frame() answers a cancel with TimeoutError, as a lost cancel looked."""

    guest = NoWindows()

    def __init__(self) -> None:
        self.looks = 0
        self.looking = False

    def info(self) -> DesktopInfo:
        return DesktopInfo(name="stand-in", backend="test", state="running", width=8, height=8)

    async def frame(self, timeout: float = 5.0) -> None:
        self.looks += 1
        self.looking = True
        try:
            await asyncio.sleep(timeout)  # a slow screen: setup's cancel lands here
        except asyncio.CancelledError:
            raise TimeoutError from None
        finally:
            self.looking = False
        raise TimeoutError

    async def until_dead(self) -> str:
        await asyncio.Event().wait()
        return "never"


async def test_setup_ends_though_a_look_loses_its_cancel(tmp_path: Path) -> None:
    path = tmp_path / "gimp" / "looks-end.yaml"
    path.parent.mkdir()
    path.write_text(TASK)
    desktop = CancelLosingDesktop()
    started = time.monotonic()
    async with asyncio.timeout(60):
        await run_setup(load_task(path), desktop, seen=LastSeen())  # type: ignore[arg-type]
    # Not a speed target: without the stop flag setup waited on the looks until this
    # test's own 60 s timeout cancelled it (and swallowed that cancel too).
    assert time.monotonic() - started < 30
    assert desktop.looks >= 1
    # No look runs on after setup: a loop left running would be in its next look.
    await asyncio.sleep(0.2)
    assert not desktop.looking
