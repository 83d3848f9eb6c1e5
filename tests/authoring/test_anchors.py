"""Image anchors: a region agrees when enough of its pixels are within tolerance."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from app.agents.anchors import Anchor, agreement, cut_anchor, load_anchor_image, matches


def screen() -> np.ndarray:
    rng = np.random.default_rng(7)
    return rng.integers(0, 256, size=(200, 300, 3), dtype=np.uint8)


def test_a_cut_region_matches_where_it_was_cut_and_not_elsewhere() -> None:
    pixels = screen()
    cut, left, top = cut_anchor(pixels, 100, 80, half=16)
    assert (left, top, cut.shape) == (84, 64, (32, 32, 3))
    anchor = Anchor(cut, left, top)
    assert agreement(pixels, anchor) == 1.0
    assert not matches(pixels, Anchor(cut, left + 20, top))


def test_a_small_local_change_still_matches_a_large_one_does_not() -> None:
    pixels = screen()
    cut, left, top = cut_anchor(pixels, 100, 80, half=20)
    anchor = Anchor(cut, left, top)
    hover = pixels.copy()
    hover[top : top + 4, left : left + 40] = 255  # a highlight along one edge: 10%
    assert agreement(hover, anchor) == pytest.approx(0.9, abs=0.02)
    assert matches(hover, Anchor(cut, left, top, match=0.85))
    dialog = pixels.copy()
    dialog[top : top + 30, left : left + 40] = 128  # something else covers most of it
    assert not matches(dialog, anchor)


def test_tolerance_absorbs_slight_colour_drift() -> None:
    pixels = screen()
    cut, left, top = cut_anchor(pixels, 50, 50)
    drifted = np.clip(pixels.astype(int) + 10, 0, 255).astype(np.uint8)
    assert matches(drifted, Anchor(cut, left, top, tolerance=24))
    assert not matches(drifted, Anchor(cut, left, top, tolerance=4))


def test_a_region_off_the_screen_never_matches() -> None:
    pixels = screen()
    cut, _, _ = cut_anchor(pixels, 10, 10)
    assert agreement(pixels, Anchor(cut, 290, 190)) == 0.0
    assert agreement(pixels, Anchor(cut, -1, 0)) == 0.0


def test_cuts_near_the_edge_are_clipped() -> None:
    cut, left, top = cut_anchor(screen(), 2, 198, half=24)
    assert (left, top, cut.shape[:2]) == (0, 174, (26, 26))


def test_loading_refuses_what_is_not_an_anchor(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no such anchor image"):
        load_anchor_image(tmp_path / "none.png")
    (tmp_path / "text.png").write_text("not a png")
    with pytest.raises(ValueError, match="not a readable image"):
        load_anchor_image(tmp_path / "text.png")
    Image.new("RGB", (600, 10)).save(tmp_path / "wide.png")
    with pytest.raises(ValueError, match="larger than an anchor may be"):
        load_anchor_image(tmp_path / "wide.png")
    Image.new("RGBA", (5, 4), (1, 2, 3, 0)).save(tmp_path / "ok.png")
    assert load_anchor_image(tmp_path / "ok.png").shape == (4, 5, 3)
