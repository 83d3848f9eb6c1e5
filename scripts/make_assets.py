"""Generate every task asset from code: no downloads, reproducible.

Pillow drawings, and sample photos that scikit-image ships inside its wheel
(`skimage.data`: coffee, chelsea, rocket, astronaut; CC0 or public domain).

Run: .venv/bin/python scripts/make_assets.py [--check]
With --check, regenerate in memory and fail if a committed asset's pixels differ.
"""

from __future__ import annotations

import argparse
import io
import math
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


def _sample(name: str) -> Image.Image:
    # Imported here: only these assets need scikit-image, and it is slow to import.
    import skimage.data

    pixels = getattr(skimage.data, name)()
    return Image.fromarray(pixels).convert("RGB")


def _framed(content: Image.Image, border: int, color: tuple[int, int, int]) -> Image.Image:
    image = Image.new("RGB", (content.width + 2 * border, content.height + 2 * border), color)
    image.paste(content, (border, border))
    return image


def _graded(image: Image.Image, gains: tuple[float, float, float]) -> Image.Image:
    """`image` with each channel scaled: a colour cast and underexposure, as from a
    badly lit studio shot."""
    channels = [
        band.point(lambda v, g=gain: min(255, round(v * g)))
        for band, gain in zip(image.split(), gains, strict=True)
    ]
    return Image.merge("RGB", channels)


def framed_cat() -> Image.Image:
    """400×300: the chelsea photo at 320×220 inside a plain white 40 px border."""
    cat = _sample("chelsea").crop((60, 20, 380, 240))
    return _framed(cat, 40, (255, 255, 255))


def coffee() -> Image.Image:
    """600×400 colour photo of a cup of coffee."""
    return _sample("coffee")


def card() -> Image.Image:
    """480×360: the coffee photo scaled to 400×280 inside a light grey 40 px border."""
    content = _sample("coffee").resize((400, 280), Image.Resampling.LANCZOS)
    return _framed(content, 40, (236, 236, 236))


def dark_astronaut() -> Image.Image:
    """512×512 astronaut portrait, underexposed with a warm cast (needs correcting)."""
    return _graded(_sample("astronaut"), (0.62, 0.5, 0.4))


def sign() -> Image.Image:
    """480×320 blank shop sign: a wooden board on a wall, room for a word."""
    image = _gradient(480, 320, (210, 220, 230), (150, 160, 175))
    draw = ImageDraw.Draw(image)
    draw.rounded_rectangle((40, 60, 440, 260), radius=18, fill=(150, 95, 50))
    draw.rounded_rectangle((56, 76, 424, 244), radius=12, fill=(232, 214, 170))
    draw.line((120, 20, 140, 60), fill=(60, 60, 60), width=4)
    draw.line((360, 20, 340, 60), fill=(60, 60, 60), width=4)
    return image


def shop_coffee() -> Image.Image:
    """Shop product shot (600×400): coffee, dim and too warm."""
    return _graded(_sample("coffee"), (0.75, 0.6, 0.45))


def shop_cat() -> Image.Image:
    """Shop product shot (451×300): the cat, dim and too warm."""
    return _graded(_sample("chelsea"), (0.75, 0.6, 0.45))


def shop_rocket() -> Image.Image:
    """Shop product shot (640×427): the rocket, dim and too warm."""
    return _graded(_sample("rocket"), (0.75, 0.6, 0.45))


def launch() -> Image.Image:
    """640×427 rocket launch photo for a poster."""
    return _sample("rocket")


def icon() -> Image.Image:
    """256×256 app icon: a rounded tile with a paper plane, for scaling down."""
    image = Image.new("RGB", (256, 256), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    draw.rounded_rectangle((8, 8, 248, 248), radius=48, fill=(40, 110, 210))
    draw.rounded_rectangle((8, 150, 248, 248), radius=48, fill=(25, 80, 170))
    draw.rectangle((8, 150, 248, 200), fill=(25, 80, 170))
    draw.polygon([(50, 120), (210, 50), (150, 200), (120, 140)], fill=(250, 250, 250))
    draw.polygon([(120, 140), (210, 50), (135, 165)], fill=(200, 215, 235))
    return image


def lake() -> Image.Image:
    """400×300 photo of a lake's reflection, taken upside down: water on top, the
    sky (and the sun, on the left) at the bottom."""
    upright = _gradient(400, 300, (120, 170, 230), (230, 240, 250))
    draw = ImageDraw.Draw(upright)
    draw.ellipse((40, 30, 100, 90), fill=(250, 210, 60))
    draw.polygon([(0, 170), (120, 70), (230, 170)], fill=(90, 110, 130))
    draw.polygon([(150, 170), (290, 90), (400, 170)], fill=(70, 90, 110))
    draw.rectangle((0, 170, 400, 300), fill=(40, 90, 120))
    draw.rectangle((300, 200, 360, 215), fill=(200, 60, 40))
    return upright.transpose(Image.Transpose.FLIP_TOP_BOTTOM)


def _film_scene() -> Image.Image:
    """400×300 positive of the film scan: sky, a red house on green grass."""
    image = Image.new("RGB", (400, 300), (140, 190, 235))
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 200, 400, 300), fill=(70, 150, 60))
    draw.rectangle((80, 120, 220, 220), fill=(190, 50, 40))
    draw.polygon([(70, 120), (150, 60), (230, 120)], fill=(90, 50, 30))
    draw.rectangle((135, 170, 165, 220), fill=(60, 40, 30))
    draw.ellipse((300, 30, 360, 90), fill=(250, 220, 90))
    return image


def negative() -> Image.Image:
    """400×300 scan of a colour film negative: the film scene with its colours inverted."""
    return Image.eval(_film_scene(), lambda v: 255 - v)


def web_banner() -> Image.Image:
    """600×200 web site banner."""
    image = _gradient(600, 200, (20, 40, 90), (60, 140, 200))
    draw = ImageDraw.Draw(image)
    draw.text((40, 60), "Spring Workshop", font=_font(52), fill=(255, 255, 255))
    draw.ellipse((470, 40, 570, 140), fill=(250, 190, 50))
    draw.rectangle((40, 140, 300, 150), fill=(250, 190, 50))
    return image


def faded() -> Image.Image:
    """360×240 photo of coffee, faded: its tones squeezed into a narrow grey band."""
    small = _sample("coffee").resize((360, 240), Image.Resampling.LANCZOS)
    return small.point(lambda v: 95 + round(v * 0.3))


def logo() -> Image.Image:
    """320×200 logo drawn on a plain white background (to be made transparent)."""
    image = Image.new("RGB", (320, 200), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    draw.ellipse((30, 40, 150, 160), fill=(220, 60, 40))
    draw.rectangle((70, 80, 110, 120), fill=(255, 255, 255))
    draw.text((170, 70), "Kiln", font=_font(48), fill=(30, 30, 60))
    draw.text((172, 125), "ceramics", font=_font(22), fill=(30, 30, 60))
    return image


def old_scan() -> Image.Image:
    """The scanner's picture of an old print: the cameraman photo (192×192), faded
    and yellowed, lying on its side (turned clockwise), inside a white 24 px border."""
    photo = _sample("camera").resize((192, 192), Image.Resampling.LANCZOS)
    faded_grey = photo.convert("L").point(lambda v: 70 + round(v * 0.45))
    sepia = Image.merge(
        "RGB",
        [faded_grey.point(lambda v, g=g: min(255, round(v * g))) for g in (1.12, 1.0, 0.78)],
    )
    return _framed(sepia.transpose(Image.Transpose.ROTATE_270), 24, (255, 255, 255))


def signature() -> Image.Image:
    """300×120 scanned signature: dark blue ink strokes on plain white paper."""
    image = Image.new("RGB", (300, 120), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    ink = (20, 40, 120)
    draw.line([(20, 80), (45, 30), (60, 85), (80, 35), (95, 80)], fill=ink, width=5, joint="curve")
    draw.arc((100, 40, 150, 90), 0, 360, fill=ink, width=5)
    draw.line([(150, 65), (175, 40), (185, 85), (215, 45), (240, 75)], fill=ink, width=5)
    draw.line([(30, 98), (270, 92)], fill=ink, width=3)
    return image


def page_scan() -> Image.Image:
    """384×191 scan of a printed page (scikit-image's `page`), fed in upside down."""
    return _sample("page").transpose(Image.Transpose.ROTATE_180)


def sticker() -> Image.Image:
    """360×300 drawing of a smiling star for a chat sticker, small in the middle of a
    plain white sheet."""
    image = Image.new("RGB", (360, 300), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    points = []
    for i in range(10):
        radius = 80 if i % 2 == 0 else 36
        angle = math.pi / 2 + i * math.pi / 5
        points.append((180 + radius * math.cos(angle), 160 - radius * math.sin(angle)))
    draw.polygon(points, fill=(250, 200, 30), outline=(200, 120, 20))
    draw.ellipse((160, 140, 170, 152), fill=(40, 30, 20))
    draw.ellipse((190, 140, 200, 152), fill=(40, 30, 20))
    draw.arc((165, 150, 195, 175), 20, 160, fill=(40, 30, 20), width=3)
    return image


ASSETS: dict[Path, Callable[[], Image.Image]] = {
    GIMP_ASSETS / "photo.png": photo,
    GIMP_ASSETS / "poster.png": poster,
    GIMP_ASSETS / "badge.png": badge,
    GIMP_ASSETS / "framed-cat.png": framed_cat,
    GIMP_ASSETS / "coffee.png": coffee,
    GIMP_ASSETS / "card.png": card,
    GIMP_ASSETS / "dark-astronaut.png": dark_astronaut,
    GIMP_ASSETS / "sign.png": sign,
    GIMP_ASSETS / "shop-coffee.png": shop_coffee,
    GIMP_ASSETS / "shop-cat.png": shop_cat,
    GIMP_ASSETS / "shop-rocket.png": shop_rocket,
    GIMP_ASSETS / "launch.png": launch,
    GIMP_ASSETS / "icon.png": icon,
    GIMP_ASSETS / "lake.png": lake,
    GIMP_ASSETS / "negative.png": negative,
    GIMP_ASSETS / "web-banner.png": web_banner,
    GIMP_ASSETS / "faded.png": faded,
    GIMP_ASSETS / "logo.png": logo,
    GIMP_ASSETS / "old-scan.png": old_scan,
    GIMP_ASSETS / "signature.png": signature,
    GIMP_ASSETS / "page-scan.png": page_scan,
    GIMP_ASSETS / "sticker.png": sticker,
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
