"""Build substitutes for the DeskCraft media the imported tasks need but cannot take from
DeskCraft's public repository: no downloads, each file a few KB.

Run: .venv/bin/python scripts/make_deskcraft_assets.py

- Blender (tasks/blender/assets/deskcraft/): its GLB product models and one HDRI are
  Git LFS objects the repository never published; its start scenes were saved by
  Blender 5, which the desktops' Blender 3.4 cannot open; its other HDRI and its
  ground textures are megabytes. Blender itself builds the models, skies and scenes
  (tasks/blender/assets/deskcraft/src/build_substitutes.py); Pillow draws the ground
  textures.
- Kdenlive (tasks/kdenlive/assets/deskcraft/): its stock footage and music (LFS, 1080p
  and 4K) become short 640x360 ffmpeg test pictures and a tone, under DeskCraft's names.

- GIMP (tasks/gimp/assets/deskcraft/, with --deskcraft DIR): DeskCraft's photos without
  their ICC profile, which would make GIMP open a dialog before the image.

The tasks say which of their files are substitutes (a comment at the top of each).
"""

from __future__ import annotations

import argparse
import random
import subprocess
from pathlib import Path

from PIL import Image, ImageFilter

ROOT = Path(__file__).resolve().parent.parent
BLENDER_OUT = ROOT / "tasks" / "blender" / "assets" / "deskcraft"
KDENLIVE_OUT = ROOT / "tasks" / "kdenlive" / "assets" / "deskcraft"
GIMP_OUT = ROOT / "tasks" / "gimp" / "assets" / "deskcraft"
TIMEOUT = 300


def blender_assets() -> None:
    subprocess.run(
        [
            *("blender", "-b", "--factory-startup", "--python-exit-code", "3"),
            *("--python", str(BLENDER_OUT / "src" / "build_substitutes.py")),
            *("--", str(BLENDER_OUT)),
        ],
        check=True,
        capture_output=True,
        timeout=TIMEOUT,
    )


def ground_textures() -> None:
    """Sand-and-rocks maps for the ground of interactive_blender_ib13 (diffuse, OpenGL
    normal, roughness): seeded noise, 256 px, so they are the same on every run."""
    size = 256
    rng = random.Random(13)
    height = Image.new("L", (size, size))
    height.putdata([rng.randrange(256) for _ in range(size * size)])
    height = height.filter(ImageFilter.GaussianBlur(3)).point(lambda v: min(255, v * 2 - 128))
    diffuse = Image.merge(
        "RGB",
        [height.point(lambda v, k=k: int(90 + v * k)) for k in (0.55, 0.48, 0.38)],
    )
    flat = Image.new("L", (size, size), 255)
    normal = Image.merge(
        "RGB",
        [height.point(lambda v: 128 + (v - 128) // 4), height.point(lambda v: 128), flat],
    )
    rough = height.point(lambda v: 255 - v // 3)
    folder = BLENDER_OUT / "jpg"
    folder.mkdir(parents=True, exist_ok=True)
    stem = "texture_coast_sand_rocks_02"
    diffuse.save(folder / f"{stem}_diff_1k.jpg", quality=85)
    normal.save(folder / f"{stem}_nor_gl_1k.jpg", quality=85)
    rough.convert("RGB").save(folder / f"{stem}_rough_1k.jpg", quality=85)


def _ffmpeg(args: list[str], out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["ffmpeg", "-v", "error", "-y", *args, "-map_metadata", "-1", "-fflags", "+bitexact",
         str(out)],
        check=True,
        timeout=TIMEOUT,
    )  # fmt: skip


def _shot(out: Path, source: str, label: str, seconds: int, tone: int) -> None:
    """A 640x360, 25 fps H.264 + AAC shot: a test picture with its name and a tone."""
    video = (
        f"{source}{':' if '=' in source else '='}s=640x360:r=25:d={seconds},"
        f"drawtext=text='{label}':fontsize=44:fontcolor=white:box=1:"
        "boxcolor=black@0.6:boxborderw=8:x=30:y=30"
    )
    _ffmpeg(
        [
            "-f", "lavfi", "-i", video,
            "-f", "lavfi", "-i", f"sine=f={tone}:d={seconds}:r=48000",
            "-c:v", "libx264", "-preset", "veryfast", "-crf", "32", "-pix_fmt", "yuv420p",
            "-flags:v", "+bitexact", "-c:a", "aac", "-b:a", "48k", "-ac", "2", "-shortest",
        ],
        out,
    )  # fmt: skip


KDENLIVE_MEDIA = {
    # DeskCraft's 6533277-hd_1920_1080_24fps.mp4 (stock footage, LFS): 16 s, so that
    # "roughly the first 12 seconds" of it is a real cut.
    "product_demo.mp4": ("color=c=0x305080", "PRODUCT DEMO", 16, 440),
    # DeskCraft's 14307439_1920_1080_60fps.mp4 and 15368811_1920_1080_30fps.mp4.
    "street.mp4": ("smptehdbars", "STREET", 5, 660),
    "skyline.mp4": ("testsrc", "SKYLINE", 6, 330),
}


def kdenlive_media() -> None:
    for name, (source, label, seconds, tone) in KDENLIVE_MEDIA.items():
        _shot(KDENLIVE_OUT / name, source, label, seconds, tone)
    # DeskCraft's 98f73cb483a429d5edf2313da9077769.mp3 (2.7 MB of music): a 12 s chord.
    _ffmpeg(
        [
            "-f", "lavfi", "-i", "sine=f=220:d=12:r=44100",
            "-f", "lavfi", "-i", "sine=f=277:d=12:r=44100",
            "-f", "lavfi", "-i", "sine=f=330:d=12:r=44100",
            "-filter_complex", "amix=inputs=3,volume=0.5", "-ac", "2",
            "-c:a", "libmp3lame", "-b:a", "48k",
        ],
        KDENLIVE_OUT / "background_music.mp3",
    )  # fmt: skip


GIMP_PHOTOS = ("street_city_466685.jpg", "product_camera_90946.jpg", "portrait_woman_774909.jpg")


def gimp_photos(deskcraft: Path) -> None:
    """DeskCraft's photos without their ICC profile: GIMP asks whether to convert an
    embedded profile before it shows the image, a dialog the tasks' setup does not expect.
    `quality="keep"` reuses each file's own quantisation tables, so nothing else changes."""
    for name in GIMP_PHOTOS:
        with Image.open(deskcraft / "assets" / "jpg" / name) as photo:
            out = GIMP_OUT / "jpg" / name
            out.parent.mkdir(parents=True, exist_ok=True)
            photo.save(out, quality="keep", optimize=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--deskcraft",
        type=Path,
        help="a local copy of DeskCraft's repository: also re-derive the GIMP photos from it",
    )
    args = parser.parse_args()
    blender_assets()
    ground_textures()
    kdenlive_media()
    if args.deskcraft is not None:
        gimp_photos(args.deskcraft)


if __name__ == "__main__":
    main()
