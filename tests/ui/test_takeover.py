"""Take-over from the live view, on a real local desktop (Xvnc + xterm): a click in
the half-block view lands on the desktop pixel under that cell, a key typed with
passthrough on reaches the xterm, and both are recorded as the person's steps beside
the agent's. Zoom maps cells to the magnified part."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from textual._xterm_parser import XTermParser
from textual.events import Key

from app.core.actions import Key as KeyAction
from app.store import Store
from app.ui.app import DeskLoopApp, keep_alt_letters
from app.ui.halfblock import HalfBlockView, fit
from app.ui.screens.live import LiveScreen
from app.ui.takeover import key_action
from tests.ui.helpers import start_default_episode, wait_until

pytestmark = pytest.mark.desktop

TASK = """\
id: xterm-takeover
app: gimp
level: L1
title: Make the proof file
instruction: Create ~/proof.txt.
setup:
  - launch: [xterm, -geometry, 80x20+0+0]
  - wait_window: {class: XTerm, timeout: 60}
budget: {steps: 10, seconds: 300}
evaluate:
  all:
    - {check: file_exists, path: ~/proof.txt}
reference: proof.yaml
"""

SCRIPT = """\
kind: demonstration
steps:
  - type: "touch ~/proof.txt\\n"
  - done
"""


def test_a_cell_maps_to_the_pixel_under_it_at_every_zoom() -> None:
    # Pure arithmetic of the view over a frame whose pixels name their own position.
    view = HalfBlockView()
    h, w = 800, 1280
    ys, xs = np.mgrid[0:h, 0:w]
    pixels = np.stack([xs % 256, ys % 256, (xs // 256) * 16 + ys // 256], axis=2).astype(np.uint8)
    view._pixels = pixels
    for zoom in (1, 2, 8):
        view.zoom, view.centre = zoom, (0.25, 0.75)
        part = view.shown_part()
        assert part is not None
        shown, x0, y0 = part
        out_w, out_h = fit(shown.shape[1], shown.shape[0], 100, 30)
        view._shown = (x0, y0, shown.shape[1], shown.shape[0], out_w, out_h)
        view._pad = (100 - out_w) // 2
        for col, row in ((view._pad, 0), (view._pad + out_w // 2, 7), (view._pad + out_w - 1, 14)):
            point = view.desktop_point(col, row)
            assert point is not None
            x, y = point
            # The cell's upper half-pixel is sampled from just above (x, y).
            cell_x = x0 + (col - view._pad) * shown.shape[1] // out_w
            assert cell_x <= x < cell_x + shown.shape[1] / out_w + 1
            assert abs(y - (y0 + (2 * row + 1) * shown.shape[0] / out_h)) < 1
        assert view.desktop_point(view._pad + out_w, 0) is None  # right of the picture
        assert view.desktop_point(view._pad, out_h // 2) is None  # below it


def test_a_terminals_alt_letters_are_alt_chords_for_the_desktop() -> None:
    """A terminal sends Alt+F as ESC f; Textual alone reads that as ctrl+right, so
    take-over sent GIMP ctrl+right instead of opening its File menu."""
    keep_alt_letters()  # as importing the TUI does
    for sent, key in (("\x1bf", "alt+f"), ("\x1bb", "alt+b"), ("\x1bi", "alt+i")):
        parser = XTermParser()
        events = [*parser.feed(sent), *parser.feed("")]
        assert [e.key for e in events if isinstance(e, Key)] == [key]
        assert key_action(events[0]) == KeyAction(key)  # type: ignore[arg-type]
    parser = XTermParser()  # a real ctrl+right has its own sequence, still known
    events = [*parser.feed("\x1b[1;5C"), *parser.feed("")]
    assert [e.key for e in events if isinstance(e, Key)] == ["ctrl+right"]


async def test_click_and_keys_from_the_live_view_are_the_persons(tmp_path: Path) -> None:
    folder = tmp_path / "tasks" / "gimp"
    folder.mkdir(parents=True)
    (folder / "xterm-takeover.yaml").write_text(textwrap.dedent(TASK))
    (folder / "proof.yaml").write_text(textwrap.dedent(SCRIPT))
    db = tmp_path / "db" / "deskloop.db"
    app = DeskLoopApp(db=db, tasks_dir=tmp_path / "tasks")
    async with app.run_test(size=(160, 50)) as pilot:
        live = await start_default_episode(pilot)
        assert isinstance(live, LiveScreen)
        session = app.session
        assert session is not None
        await pilot.press("f2")  # pause before the agent's first step
        await wait_until(pilot, lambda: session.status == "paused", 120, "the pause")
        view = live.frame_view
        assert isinstance(view, HalfBlockView)
        await wait_until(pilot, lambda: view._shown is not None, 30, "a frame in the view")

        # Click the cell at 3/4 of the picture's width, 1/2 of its height.
        _x0, _y0, width, height, out_w, out_h = view._shown  # type: ignore[misc]
        col, row = view._pad + out_w * 3 // 4, out_h // 4
        expected = view.desktop_point(col, row)
        assert expected is not None
        # Independently of the view's code: the cell covers these desktop pixels.
        assert (
            int(width * (col - view._pad) / out_w)
            <= expected[0]
            <= int(width * (col - view._pad + 1) / out_w)
        )
        assert abs(expected[1] - height * (2 * row + 1) / out_h) <= 1
        await pilot.click("#live-frame", offset=(col, row))
        await wait_until(
            pilot,
            lambda: any(s.actor == "person" for s in session.steps),
            30,
            "the person's click as a step",
        )
        located = await session.desktop.guest.run(["xdotool", "getmouselocation", "--shell"])
        where = dict(
            line.split("=", 1) for line in located.stdout.decode().splitlines() if "=" in line
        )
        assert (int(where["X"]), int(where["Y"])) == expected  # the pointer is there

        # Passthrough: keys go to the desktop (the xterm has the pointer's focus or not:
        # click it first at its top-left region, where the -geometry put it).
        await pilot.click("#live-frame", offset=(view._pad + 2, 2))
        await pilot.press("f6")
        assert live.passthrough
        # A burst with doubled letters: sent one after the other through the recording
        # proxy (each key used to be a task of its own, and `aabb` arrived as `abab`).
        await pilot.press("t", "o", "u", "c", "h", "space", "a", "a", "b", "b", "enter")
        await pilot.press("f6")
        assert not live.passthrough
        await wait_until(
            pilot,
            lambda: sum(s.actor == "person" for s in session.steps) == 3,
            60,
            "the person's two clicks and their typing, as three steps",
        )
        # The keys reached the xterm's shell in order: `touch aabb` made the file.
        guest = session.desktop.guest
        deadline = time.monotonic() + 20
        while not await guest.exists(f"{guest.home}/aabb"):
            assert time.monotonic() < deadline, "the typed command made no file aabb"
            await pilot.pause(0.1)
        await pilot.press("f2")  # resume: the agent's steps follow the person's
        person = session.person
        assert person is not None  # user 'person' is the default: the DONE waits for review
        await wait_until(pilot, lambda: person.waiting is not None, 120, "the agent's DONE")
        await pilot.press("f3")  # accept
        await wait_until(pilot, lambda: session.ended, 60, "the end of the episode")
        episode_id = session.episode_id
        assert episode_id is not None
    with Store(db) as store:
        steps = store.steps(episode_id)
    actors = [s.actor for s in steps]
    assert actors[:3] == ["person"] * 3 and "agent" in actors[3:]
    assert steps[0].action == {"kind": "click", "x": expected[0], "y": expected[1],
                               "button": "left", "count": 1}  # fmt: skip
    # The typed run is one step, as a viewer's typing is.
    assert steps[2].action == {"kind": "type", "text": "touch aabb\n"}
    assert [s.idx for s in steps] == list(range(len(steps)))
