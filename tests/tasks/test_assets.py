"""Committed task assets are exactly what the generator script draws."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_assets_match_their_generator() -> None:
    out = subprocess.run(
        [sys.executable, "scripts/make_assets.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_check_mode_detects_a_changed_asset(tmp_path: Path) -> None:
    # Run the generator's check against a copy of the tree with one asset altered.
    import shutil

    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "scripts", copy / "scripts")
    shutil.copytree(ROOT / "tasks", copy / "tasks")
    target = copy / "tasks" / "gimp" / "assets" / "badge.png"
    from PIL import Image

    with Image.open(target) as image:
        image.convert("RGB").transpose(Image.Transpose.FLIP_LEFT_RIGHT).save(target)
    out = subprocess.run(
        [sys.executable, "scripts/make_assets.py", "--check"],
        cwd=copy,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 1
    assert "differs: tasks/gimp/assets/badge.png" in out.stdout
