"""A compiled window guard must match the same window on another desktop."""

from __future__ import annotations

import re

from app.authoring.compile import title_pattern


def test_a_local_session_home_in_a_title_matches_any_home() -> None:
    recorded = "Blender* [/tmp/deskloop-sowasnbj/home/Desktop/product.blend]"
    pattern = f"^{title_pattern(recorded)}$"
    assert re.search(pattern, recorded)
    assert re.search(pattern, "Blender* [/tmp/deskloop-k2j4_x9q/home/Desktop/product.blend]")
    assert re.search(pattern, "Blender* [/home/user/Desktop/product.blend]")
    # Everything else stays literal: another file or the clean title is another window.
    assert not re.search(pattern, "Blender* [/tmp/deskloop-k2j4x9q/home/Desktop/cube.blend]")
    assert not re.search(pattern, "Blender [/tmp/deskloop-k2j4x9q/home/Desktop/product.blend]")


def test_a_title_without_a_session_home_is_matched_literally() -> None:
    assert title_pattern("[photo] (imported)-1.0 – GIMP") == r"\[photo\] \(imported\)-1\.0 – GIMP"
    assert title_pattern("Blender File View") == "Blender File View"
