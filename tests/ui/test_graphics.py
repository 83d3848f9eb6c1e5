"""Kitty and sixel frames: how the mode is chosen, and what the views write."""

from __future__ import annotations

import base64
import fcntl
import io
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.strip import Strip

from app.cli import build_parser
from app.core.errors import DeskLoopError
from app.ui.app import DeskLoopApp
from app.ui.graphics import (
    Graphics,
    KittyView,
    Mode,
    SixelView,
    choose_graphics,
    fit_cells,
    terminal_cell_size,
)
from app.ui.halfblock import FrameView, HalfBlockView
from app.ui.modals import HelpScreen
from app.ui.screens.live import LiveScreen
from tests.ui.helpers import fixture_db, wait_until, write_tasks

TTY_ENV = {"TERM": "xterm-kitty", "COLORTERM": "truecolor"}


def never() -> Mode | None:
    raise AssertionError("the terminal must not be asked")


def found(mode: Mode | None) -> tuple[list[int], object]:
    calls: list[int] = []

    def probe() -> Mode | None:
        calls.append(1)
        return mode

    return calls, probe


def cells() -> tuple[int, int]:
    return (9, 18)


# -- choosing -------------------------------------------------------------------------


def test_the_option_wins_over_the_environment_and_asks_nothing() -> None:
    env = {"DESKLOOP_GRAPHICS": "sixel", **TTY_ENV}
    chosen = choose_graphics("halfblock", environ=env, is_tty=True, probe=never)
    assert (chosen.mode, chosen.reason) == ("halfblock", "chosen with --graphics")
    chosen = choose_graphics("kitty", environ=env, is_tty=False, probe=never, cell_size=cells)
    assert (chosen.mode, chosen.cell) == ("kitty", (9, 18))
    chosen = choose_graphics(None, environ=env, is_tty=False, probe=never, cell_size=cells)
    assert (chosen.mode, chosen.reason) == ("sixel", "chosen with DESKLOOP_GRAPHICS")


def test_a_bad_environment_value_is_named() -> None:
    with pytest.raises(DeskLoopError, match="DESKLOOP_GRAPHICS='vga'"):
        choose_graphics(None, environ={"DESKLOOP_GRAPHICS": "vga"}, is_tty=True, probe=never)


def test_auto_asks_only_a_real_terminal_outside_tmux() -> None:
    assert choose_graphics(None, environ={}, is_tty=False, probe=never).reason == "not a terminal"
    tmux = {"TMUX": "/tmp/tmux-0/default,1,0", **TTY_ENV}
    chosen = choose_graphics("auto", environ=tmux, is_tty=True, probe=never)
    assert chosen.mode == "halfblock" and "tmux" in chosen.reason
    screen = {"TERM": "screen-256color"}
    assert choose_graphics(None, environ=screen, is_tty=True, probe=never).mode == "halfblock"


@pytest.mark.parametrize(
    ("answer", "env", "mode"),
    [
        ("sixel", {"TERM": "xterm"}, "sixel"),
        ("kitty", TTY_ENV, "kitty"),
        ("kitty", {"TERM": "xterm-kitty"}, "halfblock"),  # no truecolor: ids would change
        (None, TTY_ENV, "halfblock"),
    ],
)
def test_auto_uses_what_the_terminal_answers(
    answer: Mode | None, env: dict[str, str], mode: str
) -> None:
    calls, probe = found(answer)
    chosen = choose_graphics(None, environ=env, is_tty=True, probe=probe, cell_size=cells)  # type: ignore[arg-type]
    assert chosen.mode == mode and len(calls) == 1
    if mode != "halfblock":
        assert chosen.reason == "detected" and chosen.cell == (9, 18)


PROBE = "from app.ui.graphics import probe_terminal; print('found', probe_terminal())"


def probe_in_a_terminal(answers: dict[bytes, bytes]) -> str:
    """Run textual-image's detection in a child on a pseudo terminal that answers each
    query (a byte string it contains) with the given bytes; what it found."""
    leader, follower = os.openpty()
    child = subprocess.Popen(
        [sys.executable, "-c", PROBE],
        stdin=follower,
        stdout=follower,
        stderr=subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[2],
        start_new_session=True,
    )
    os.close(follower)
    seen = b""
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.05)
            if not ready:
                if child.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the child closed the terminal
                break
            seen += chunk
            for query, answer in answers.items():
                if query in chunk:
                    os.write(leader, answer)
        child.wait(10)
    finally:
        os.close(leader)
        if child.poll() is None:
            child.kill()
    match = re.search(rb"found (\w+)", seen)
    assert match is not None, (seen, child.stderr.read() if child.stderr else b"")
    return match.group(1).decode()


DA1 = b"\x1b[c"  # the sixel query: primary device attributes
KITTY_QUERY = b"\x1b_Gi="


def test_textual_image_detection_finds_what_the_terminal_answers() -> None:
    # A VT340-like answer lists 4 (sixel).
    assert probe_in_a_terminal({DA1: b"\x1b[?63;4;22c"}) == "sixel"
    # No sixel, but an OK to kitty's graphics query.
    kitty = {DA1: b"\x1b[?62;22c", KITTY_QUERY: b"\x1b_Gi=1;OK\x1b\\"}
    assert probe_in_a_terminal(kitty) == "kitty"
    # Neither: no answer to kitty's query (textual-image waits 0.1 s).
    assert probe_in_a_terminal({DA1: b"\x1b[?62;22c"}) == "None"


def test_textual_image_detection_without_a_terminal_finds_nothing() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert out.stdout.strip() == "found None"


def test_cell_size_comes_from_the_terminal_window_size() -> None:
    leader, follower = os.openpty()
    try:
        size = struct.pack("HHHH", 50, 160, 1600, 1000)
        fcntl.ioctl(follower, termios.TIOCSWINSZ, size)
        assert terminal_cell_size(follower) == (10, 20)
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 160, 0, 0))
        assert terminal_cell_size(follower) == (10, 20)  # no pixels reported: the default
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 700, 680))
        assert terminal_cell_size(follower) == (7, 17)
    finally:
        os.close(leader)
        os.close(follower)


def test_the_cli_offers_the_graphics_choices() -> None:
    args = build_parser().parse_args(["tui", "--graphics", "sixel"])
    assert args.graphics == "sixel"
    assert build_parser().parse_args(["tui"]).graphics is None
    with pytest.raises(SystemExit):
        build_parser().parse_args(["tui", "--graphics", "ascii"])


def test_fit_cells_keeps_the_aspect_ratio_in_pixels() -> None:
    assert fit_cells(1280, 800, 100, 40, (10, 20)) == (100, 31)  # width-bound
    assert fit_cells(1280, 800, 160, 20, (10, 20)) == (64, 20)  # height-bound
    assert fit_cells(0, 800, 10, 10, (10, 20)) == (0, 0)


# -- drawing --------------------------------------------------------------------------


def frame() -> np.ndarray:
    """40 × 20 pixels: red left half, blue right half."""
    pixels = np.zeros((20, 40, 3), dtype=np.uint8)
    pixels[:, :20] = (255, 0, 0)
    pixels[:, 20:] = (0, 0, 255)
    return pixels


class ViewApp(App[None]):
    def __init__(self, view: FrameView) -> None:
        super().__init__()
        self.view = view

    def compose(self) -> ComposeResult:
        yield self.view


def text_of(strip: Strip) -> str:
    return "".join(segment.text for segment in strip)


class SeenKitty(KittyView):
    """Keeps what the view gave Textual to write (Textual renders it by itself)."""

    def __init__(self, cell: tuple[int, int]) -> None:
        super().__init__(cell=cell)
        self.written: list[str] = []

    def render_lines(self, crop: Region) -> list[Strip]:
        lines = super().render_lines(crop)
        self.written.append("".join(text_of(line) for line in lines))
        return lines

    def taken(self) -> str:
        """What was written since the last call."""
        text, self.written = "".join(self.written), []
        return text


@pytest.fixture
def small() -> Iterator[tuple[int, int]]:
    yield (20, 10)


async def test_kitty_sends_a_png_a_placement_and_placeholders(small: tuple[int, int]) -> None:
    view = SeenKitty(cell=(4, 8))
    app = ViewApp(view)
    async with app.run_test(size=small) as pilot:
        view.show(frame())
        await wait_until(pilot, lambda: "\x1b_G" in "".join(view.written), 10, "the first frame")
        sent = view.taken()
        lines = view.render_lines(Region(0, 0, 20, 10))
        transmit = re.search(r"\x1b_Ga=t,f=100,i=(\d+),q=2,m=0;([A-Za-z0-9+/=]+)\x1b\\", sent)
        assert transmit is not None, sent[:80]
        image_id = int(transmit.group(1))
        # 40×20 px at 2:1 in 20×10 cells of 4×8 px: 20 columns, 5 rows, 80×40 pixels.
        assert f"\x1b_Ga=p,U=1,i={image_id},c=20,r=5,q=2\x1b\\" in sent
        png = PILImage.open(io.BytesIO(base64.b64decode(transmit.group(2))))
        assert png.size == (80, 40)
        assert png.getpixel((5, 20)) == (255, 0, 0) and png.getpixel((75, 20)) == (0, 0, 255)
        for row in range(5):
            placeholders = [s for s in lines[row] if "\U0010eeee" in s.text]
            assert len(placeholders) == 1 and placeholders[0].text.count("\U0010eeee") == 20
            color = placeholders[0].style.color if placeholders[0].style else None
            assert color is not None and color.triplet is not None
            red, green, blue = color.triplet
            assert (red << 16) | (green << 8) | blue == image_id
        assert "\U0010eeee" not in text_of(lines[5])
        assert all(strip.cell_length == 20 for strip in lines)
        assert "\x1b_G" not in "".join(text_of(line) for line in lines)  # sent once
        view.taken()

        ids = [image_id]
        for n in (1, 2):
            view.show(np.roll(frame(), 5 * n, axis=1))
            await wait_until(pilot, lambda: "a=t" in "".join(view.written), 10, "a new frame")
            sent = view.taken()
            new = re.search(r"\x1b_Ga=t,f=100,i=(\d+)", sent)
            assert new is not None
            ids.append(int(new.group(1)))
        # The third frame deletes the first; the second stays until the third is shown.
        assert f"\x1b_Ga=d,d=I,i={ids[0]},q=2\x1b\\" in sent
        assert f"d=I,i={ids[1]}" not in sent
        view.clear()
        await wait_until(pilot, lambda: "a=d" in "".join(view.written), 10, "the deletes")
        cleared = view.taken()
        assert f"\x1b_Ga=d,d=I,i={ids[1]}" in cleared and f"d=I,i={ids[2]}" in cleared
        assert "\U0010eeee" not in cleared


async def test_sixel_draws_over_the_lines_it_covers(small: tuple[int, int]) -> None:
    view = SixelView(cell=(4, 8))
    app = ViewApp(view)
    async with app.run_test(size=small) as pilot:
        view.show(frame())
        await wait_until(pilot, lambda: view.frames_shown == 1, 10, "the frame")
        lines = view.render_lines(Region(0, 0, 20, 10))
        assert all("\x1bP" not in text_of(line) for line in lines[:-1])
        last = text_of(lines[-1])
        # The cursor to the view's top left (row 1, column 1), then the image.
        start = last.index("\x1b[1;1H")
        sixel = last[start + len("\x1b[1;1H") :]
        assert sixel.startswith("\x1b[?80l\x1b[?8452h\x1bP")
        assert sixel.endswith("\x1b\\") and '"1;1;80;40' in sixel  # 20×5 cells of 4×8 px
        assert lines[-1].cell_length == 20
        # Part of the view (something covers the rest): only that part of the image.
        part = text_of(view.render_lines(Region(0, 1, 10, 3))[-1])
        assert "\x1b[2;1H" in part and '"1;1;40;24' in part


async def test_the_live_screen_uses_the_chosen_graphics(tmp_path: Path) -> None:
    db = fixture_db(tmp_path / "db" / "deskloop.db")
    app = DeskLoopApp(
        db=db,
        tasks_dir=write_tasks(tmp_path / "tasks"),
        start_mode="live",
        graphics=Graphics("sixel", "detected", (8, 16)),
    )
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        assert isinstance(screen, LiveScreen)
        view = screen.frame_view
        assert isinstance(view, SixelView) and view.cell == (8, 16)
        assert screen.sub_title is not None and screen.sub_title.endswith("view: sixel graphics")
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), 5, "help")
        assert "**sixel graphics** (detected)" in app.screen.text  # type: ignore[attr-defined]


async def test_tests_and_the_default_use_half_blocks(tmp_path: Path) -> None:
    db = fixture_db(tmp_path / "db" / "deskloop.db")
    app = DeskLoopApp(db=db, tasks_dir=write_tasks(tmp_path / "tasks"), start_mode="live")
    async with app.run_test(size=(100, 30)):
        screen = app.screen
        assert isinstance(screen, LiveScreen) and isinstance(screen.frame_view, HalfBlockView)
        assert app.graphics.mode == "halfblock"
