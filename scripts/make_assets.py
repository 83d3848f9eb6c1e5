"""Generate every task asset from code (Pillow drawings): no downloads, reproducible.

Run: .venv/bin/python scripts/make_assets.py [--check]
With --check, regenerate in memory and fail if a committed asset's pixels differ.
"""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Callable
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

ROOT = Path(__file__).resolve().parent.parent
GIMP_ASSETS = ROOT / "tasks" / "gimp" / "assets"


def _font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    # Pillow's bundled default font is the same everywhere (no system fonts needed).
    return ImageFont.load_default(size=size)


def _gradient(
    width: int, height: int, top: tuple[int, int, int], bottom: tuple[int, int, int]
) -> Image.Image:
    image = Image.new("RGB", (width, height))
    draw = ImageDraw.Draw(image)
    for y in range(height):
        t = y / max(1, height - 1)
        color = tuple(round(a + (b - a) * t) for a, b in zip(top, bottom, strict=True))
        draw.line([(0, y), (width, y)], fill=color)  # type: ignore[arg-type]
    return image


def photo() -> Image.Image:
    """400×300, deliberately asymmetric so a flip is visible to every check."""
    image = _gradient(400, 300, (30, 60, 120), (200, 220, 240))
    draw = ImageDraw.Draw(image)
    draw.ellipse((30, 40, 150, 160), fill=(220, 40, 40))
    draw.rectangle((260, 180, 380, 280), fill=(40, 160, 60))
    draw.polygon([(200, 30), (240, 110), (160, 110)], fill=(250, 200, 30))
    draw.text((20, 250), "DeskLoop", font=_font(28), fill=(255, 255, 255))
    return image


def poster() -> Image.Image:
    """800×600 poster: top-heavy layout so a vertical flip is detectable."""
    image = _gradient(800, 600, (250, 240, 220), (90, 40, 110))
    draw = ImageDraw.Draw(image)
    draw.rectangle((40, 40, 760, 200), fill=(20, 20, 20))
    draw.text((70, 80), "SUMMER FAIR", font=_font(72), fill=(250, 200, 40))
    for i in range(6):
        x = 60 + i * 120
        draw.ellipse(
            (x, 300 + (i % 2) * 60, x + 90, 390 + (i % 2) * 60),
            fill=(40 + i * 35, 120, 200 - i * 25),
        )
    draw.rectangle((500, 480, 760, 560), fill=(230, 60, 60))
    return image


def badge() -> Image.Image:
    """300×300 badge with a red block on the left and a blue disc on the right."""
    image = Image.new("RGB", (300, 300), (245, 245, 240))
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, 90, 300), fill=(200, 30, 30))
    draw.ellipse((140, 60, 280, 200), fill=(30, 60, 200))
    draw.text((110, 230), "BADGE", font=_font(36), fill=(20, 20, 20))
    return image


ASSETS: dict[Path, Callable[[], Image.Image]] = {
    GIMP_ASSETS / "photo.png": photo,
    GIMP_ASSETS / "poster.png": poster,
    GIMP_ASSETS / "badge.png": badge,
}


def _mean_abs_diff(a: Image.Image, b: Image.Image) -> float:
    # Font rasterisation may move by a grey level between Pillow releases: compare
    # with a small tolerance instead of byte equality.
    pa, pb = a.convert("RGB").tobytes(), b.convert("RGB").tobytes()
    return sum(abs(x - y) for x, y in zip(pa, pb, strict=True)) / len(pa)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="verify committed assets match")
    args = parser.parse_args()
    bad = 0
    for path, make in ASSETS.items():
        image = make()
        if args.check:
            if not path.exists():
                print(f"missing: {path.relative_to(ROOT)}")
                bad += 1
                continue
            with Image.open(path) as existing:
                if existing.size != image.size or _mean_abs_diff(existing, image) > 0.5:
                    print(f"differs: {path.relative_to(ROOT)}")
                    bad += 1
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        buffer = io.BytesIO()
        image.save(buffer, format="PNG", optimize=True)
        path.write_bytes(buffer.getvalue())
        print(f"wrote {path.relative_to(ROOT)} ({image.width}×{image.height})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
