"""The one PNG encoder of screen pixels (app.core.frames): bytes, base64 and data URL
are the same image, resized when a size is given."""

from __future__ import annotations

import base64
import io

import numpy as np
from PIL import Image

from app.core.frames import png_base64, png_bytes, png_data_url


def test_bytes_base64_and_data_url_are_one_image() -> None:
    pixels = np.arange(6 * 4 * 3, dtype=np.uint8).reshape(4, 6, 3)
    png = png_bytes(pixels, compress_level=3)
    assert base64.b64decode(png_base64(pixels, compress_level=3)) == png
    assert png_data_url(pixels, compress_level=3) == (
        "data:image/png;base64," + png_base64(pixels, compress_level=3)
    )
    with Image.open(io.BytesIO(png)) as image:
        assert np.array_equal(np.asarray(image.convert("RGB")), pixels)


def test_a_size_resizes_and_the_same_size_does_not() -> None:
    pixels = np.full((40, 60, 3), 200, dtype=np.uint8)
    with Image.open(io.BytesIO(png_bytes(pixels, size=(30, 20), compress_level=1))) as image:
        assert image.size == (30, 20)
    assert png_bytes(pixels, size=(60, 40), compress_level=1) == png_bytes(pixels, compress_level=1)


def test_grey_rgb_and_rgba_decode_to_the_same_pixels() -> None:
    rng = np.random.default_rng(7)
    for shape, mode in (((5, 7), "L"), ((5, 7, 3), "RGB"), ((5, 7, 4), "RGBA")):
        pixels = rng.integers(0, 256, shape, dtype=np.uint8)
        with Image.open(io.BytesIO(png_bytes(pixels, compress_level=1))) as image:
            image.load()  # a bad CRC or a short IDAT raises here
            assert image.mode == mode
            assert np.array_equal(np.asarray(image), pixels)
    # A non-contiguous view (a crop of a screen) is encoded as what it shows.
    screen = rng.integers(0, 256, (20, 30, 3), dtype=np.uint8)
    crop = screen[3:9, 4:17]
    with Image.open(io.BytesIO(png_bytes(crop, compress_level=1))) as image:
        assert np.array_equal(np.asarray(image), crop)
