"""Half-block frames: sizing, sampling, and repainting only the rows that changed."""

from __future__ import annotations

import numpy as np
from textual.app import App, ComposeResult

from app.ui.halfblock import HalfBlockView, cell_codes, fit, mark_point, sample


def test_fit_keeps_the_aspect_ratio_in_half_cells() -> None:
    assert fit(1280, 800, 160, 50) == (160, 100)  # width-bound: 160 px wide, 100 tall
    assert fit(1280, 800, 200, 30) == (96, 60)  # height-bound: 30 rows hold 60 pixels
    assert fit(0, 800, 10, 10) == (0, 0)
    width, height = fit(1280, 800, 33, 7)
    assert width <= 33 and height <= 14 and height % 2 == 0


def test_sample_and_cell_codes_pair_upper_and_lower_pixels() -> None:
    pixels = np.zeros((4, 4, 3), dtype=np.uint8)
    pixels[0] = (255, 0, 0)  # row 0 red, row 1 black: cell (0, x) = red over black
    pixels[2:] = (0, 0, 255)
    small = sample(pixels, 2, 4)
    assert small.shape == (4, 2, 3)
    codes = cell_codes(small)
    assert codes.shape == (2, 2)
    assert int(codes[0, 0]) == (0xFF0000 << 24) | 0x000000
    assert int(codes[1, 1]) == (0x0000FF << 24) | 0x0000FF


def test_mark_point_draws_a_red_cross_and_copies() -> None:
    pixels = np.zeros((50, 50, 3), dtype=np.uint8)
    marked = mark_point(pixels, 25, 25, radius=5, thick=1)
    assert tuple(marked[25, 20]) == (255, 40, 40) and tuple(marked[30, 25]) == (255, 40, 40)
    assert tuple(marked[0, 0]) == (0, 0, 0) and not pixels.any()
    assert not mark_point(pixels, 99, 0, radius=5).any()  # off-screen: unchanged


class ViewApp(App[None]):
    def compose(self) -> ComposeResult:
        yield HalfBlockView(id="view")


async def test_only_changed_rows_are_rebuilt() -> None:
    app = ViewApp()
    async with app.run_test(size=(80, 20)) as pilot:
        view = app.query_one(HalfBlockView)
        frame = np.full((400, 640, 3), 30, dtype=np.uint8)
        assert view.show(frame) == 20  # first frame: every row (80×40 px fits 80×20 cells)
        assert view.show(frame.copy()) == 0  # same picture: nothing to repaint
        changed = frame.copy()
        changed[0:20, 100:200] = (200, 10, 10)  # the top 20 px → the first cell row
        assert view.show(changed) == 1
        await pilot.pause()
        strip = view.render_line(0)
        styles = {seg.style.color.triplet for seg in strip if seg.style and seg.style.color}
        assert any(c is not None and c.red == 200 for c in styles)
        await pilot.resize_terminal(40, 20)
        await pilot.pause()
        assert view.frames_shown >= 3  # a resize redraws at the new size
