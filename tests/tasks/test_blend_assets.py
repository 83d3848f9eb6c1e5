"""The committed Blender start scenes are what their generator builds (real Blender)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.desktop  # runs the real Blender (no display needed)


def _check(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "scripts/make_blend_assets.py", "--check"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


def test_blend_assets_match_their_generator() -> None:
    out = _check(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr


def test_check_mode_detects_a_changed_scene(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    for part in ("scripts", "tasks/blender", "app/probes/guest_scripts"):
        shutil.copytree(ROOT / part, copy / part)
    # The turntable scene swapped for the product-shot scene: the same objects, but
    # another camera pose, no light and another paint.
    assets = copy / "tasks" / "blender" / "assets"
    shutil.copy(assets / "product.blend", assets / "turntable.blend")
    out = _check(copy)
    assert out.returncode == 1
    assert "tasks/blender/assets/turntable.blend differs from the generator" in out.stderr
    assert "objects" in out.stderr
