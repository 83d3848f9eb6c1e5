"""Build the Blender tasks' start scenes with Blender itself: no downloads.

Run: .venv/bin/python scripts/make_blend_assets.py [--check]

Blender runs in background mode on tasks/blender/assets/src/build_scenes.py and
saves each scene (compressed, ~100 KB) into tasks/blender/assets/. The .blend
files are committed, so a task's setup never needs Blender to build anything.
A .blend file is not byte-reproducible (Blender writes memory addresses into it),
so --check rebuilds the scenes in a temporary folder and compares what matters:
the scene dump that scoring itself makes (app/probes/guest_scripts/blender_dump.py),
less the file's own path.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "tasks" / "blender" / "assets"
BUILD_SCRIPT = ASSETS / "src" / "build_scenes.py"
DUMP_SCRIPT = ROOT / "app" / "probes" / "guest_scripts" / "blender_dump.py"
SCENES = (
    *("cube.blend", "product.blend", "turntable.blend"),
    *("stool.blend", "lamp.blend", "table.blend"),  # blender-three-scenes-l3
    *("window.blend", "bottle.blend", "gift.blend"),  # blender-shop-window-l3
)
BLENDER_TIMEOUT = 300


def build(out_dir: Path) -> None:
    subprocess.run(
        [
            *("blender", "-b", "--factory-startup", "--python-exit-code", "3"),
            *("--python", str(BUILD_SCRIPT), "--", str(out_dir)),
        ],
        check=True,
        capture_output=True,
        timeout=BLENDER_TIMEOUT,
    )


def dump(blend: Path, out: Path) -> dict[str, Any]:
    subprocess.run(
        [
            *("blender", "-b", "--factory-startup", "--disable-autoexec", str(blend)),
            *("--python-exit-code", "3", "--python", str(DUMP_SCRIPT), "--", str(out)),
        ],
        check=True,
        capture_output=True,
        timeout=BLENDER_TIMEOUT,
    )
    data: dict[str, Any] = json.loads(out.read_text())
    # Where the file lies is not part of the scene.
    for key in ("filepath", "home"):
        data.pop(key, None)
    data["scene"].pop("filepath_abs", None)
    return data


def check() -> list[str]:
    problems: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "fresh"
        fresh.mkdir()
        build(fresh)
        for name in SCENES:
            committed = ASSETS / name
            if not committed.is_file():
                problems.append(f"{committed.relative_to(ROOT)} is missing")
                continue
            want = dump(fresh / name, Path(tmp) / f"{name}.fresh.json")
            got = dump(committed, Path(tmp) / f"{name}.committed.json")
            if got != want:
                keys = sorted(k for k in want if got.get(k) != want.get(k))
                problems.append(
                    f"{committed.relative_to(ROOT)} differs from the generator in {keys}"
                )
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="verify committed scenes match")
    args = parser.parse_args()
    if args.check:
        problems = check()
        for line in problems:
            print(line, file=sys.stderr)
        if not problems:
            print(f"{len(SCENES)} Blender scenes match their generator")
        return 1 if problems else 0
    build(ASSETS)
    for name in SCENES:
        print(f"wrote {(ASSETS / name).relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
