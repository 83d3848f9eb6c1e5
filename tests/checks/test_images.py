"""The image checks (app/checks/images.py, imaging.py) on real images made with Pillow:
size, mode, format, alpha, similarity (with transforms, crop and resize), pixel colour,
colour statistics and change, and pixel differences."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from PIL import Image, ImageDraw
from pydantic import ValidationError

from app.checks import (
    CheckResult,
    CheckState,
    FileState,
    get_check,
)
from tests.checks.helpers import OUT, REF, check, encode, scene, state_with


def against_ref(name: str, state: CheckState, **params: Any) -> CheckResult:
    """Check `name` (image_similarity, image_difference) of OUT against the asset REF."""
    return check(name, state, path=OUT, reference=REF, **params)


def color_change(
    state: CheckState, measure: str, direction: str, min_amount: float, **params: Any
) -> CheckResult:
    """The image_color_change check of OUT against its source, the asset REF."""
    return check(
        "image_color_change",
        state,
        path=OUT,
        source=REF,
        measure=measure,
        direction=direction,
        min_amount=min_amount,
        **params,
    )


# --- image_size ---------------------------------------------------------------------


def test_image_size_passes_on_the_exact_size() -> None:
    state = state_with({OUT: encode(scene(512, 512))})
    result = check("image_size", state, path=OUT, width=512, height=512)
    assert result.passed and result.score == 1.0


def test_image_size_evidence_names_the_file_and_both_sizes() -> None:
    state = state_with({OUT: encode(Image.new("RGB", (1024, 768), "white"))})
    result = check("image_size", state, path=OUT, width=512, height=512)
    assert not result.passed and result.score == 0.0
    assert result.evidence == f"{OUT} is 1024×768, expected 512×512"


def test_image_size_checks_only_the_dimension_given() -> None:
    state = state_with({OUT: encode(Image.new("RGB", (400, 333)))})
    assert check("image_size", state, path=OUT, width=400).passed
    result = check("image_size", state, path=OUT, height=300)
    assert not result.passed
    assert result.evidence == f"{OUT} is 400×333, expected any×300"


def test_image_size_tolerance_is_inclusive_per_dimension() -> None:
    state = state_with({OUT: encode(Image.new("RGB", (402, 298)))})
    assert check("image_size", state, path=OUT, width=400, height=300, tolerance=2).passed
    result = check("image_size", state, path=OUT, width=400, height=300, tolerance=1)
    assert not result.passed
    assert result.evidence == f"{OUT} is 402×298, expected 400×300 (±1 px)"


def test_image_size_needs_width_or_height() -> None:
    with pytest.raises(ValidationError, match="give width, height or both"):
        get_check("image_size").parse_params({"path": OUT})


@pytest.mark.parametrize("width", [0, -5, "512", 512.0, True])
def test_image_size_rejects_widths_that_are_not_positive_integers(width: object) -> None:
    with pytest.raises(ValidationError):
        get_check("image_size").parse_params({"path": OUT, "width": width})


def test_image_checks_fail_on_a_missing_file() -> None:
    state = state_with({OUT: FileState.missing(OUT)})
    result = check("image_size", state, path=OUT, width=10)
    assert not result.passed and result.score == 0.0
    assert result.evidence == f"{OUT} does not exist"


def test_image_checks_fail_on_bytes_that_are_not_an_image() -> None:
    state = state_with({OUT: b"%PDF-1.4 not a picture"}, {REF: encode(scene())})
    cases: list[tuple[str, dict[str, Any]]] = [
        ("image_size", {"width": 10}),
        ("image_mode", {"mode": "RGB"}),
        ("pixel_color", {"region": [0, 0, 1, 1], "color": [0, 0, 0]}),
        ("image_similarity", {"reference": REF}),
    ]
    for name, params in cases:
        result = check(name, state, path=OUT, **params)
        assert not result.passed and result.score == 0.0, name
        assert result.evidence.startswith(f"{OUT} is not a readable image (22 bytes"), name


def test_image_checks_fail_on_a_truncated_png() -> None:
    data = encode(scene())
    state = state_with({OUT: data[: len(data) // 2]})
    result = check("image_size", state, path=OUT, width=400)
    assert not result.passed
    assert "is not a readable image" in result.evidence


# --- image_mode ---------------------------------------------------------------------


def test_image_mode_compares_mode_and_format() -> None:
    rgba_png = state_with({OUT: encode(Image.new("RGBA", (8, 8)))})
    assert check("image_mode", rgba_png, path=OUT, mode="RGBA", format="PNG").passed
    result = check("image_mode", rgba_png, path=OUT, mode="RGB")
    assert not result.passed
    assert result.evidence == f"{OUT} is mode RGBA, format PNG, expected mode RGB"


def test_image_mode_checks_the_bytes_not_the_file_name() -> None:
    # A JPEG saved under a .png name is still a JPEG.
    jpeg = state_with({OUT: encode(scene(64, 48), "JPEG", quality=90)})
    result = check("image_mode", jpeg, path=OUT, mode="RGB", format="PNG")
    assert not result.passed
    assert result.evidence == f"{OUT} is mode RGB, format JPEG, expected mode RGB, format PNG"
    assert check("image_mode", jpeg, path=OUT, mode="RGB", format="JPEG").passed


def test_image_mode_sees_grayscale_and_indexed_images() -> None:
    gray = state_with({OUT: encode(scene(32, 32).convert("L"))})
    assert check("image_mode", gray, path=OUT, mode="L").passed
    indexed = state_with({OUT: encode(scene(32, 32).convert("P"))})
    assert check("image_mode", indexed, path=OUT, mode="P").passed
    assert not check("image_mode", indexed, path=OUT, mode="RGB").passed


@pytest.mark.parametrize(
    ("params", "message"),
    [({"mode": "rgb"}, "unknown Pillow mode 'rgb'"), ({"mode": "RGB", "format": "JPG"}, "JPG")],
)
def test_image_mode_rejects_unknown_modes_and_formats(params: dict[str, str], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        get_check("image_mode").parse_params({"path": OUT, **params})


# --- image_similarity ---------------------------------------------------------------


def similarity(output: Image.Image | bytes, reference: Image.Image, **params: Any) -> CheckResult:
    data = output if isinstance(output, bytes) else encode(output)
    state = state_with({OUT: data}, {REF: encode(reference)})
    return against_ref("image_similarity", state, **params)


def test_similarity_passes_for_the_same_picture() -> None:
    result = similarity(scene(), scene())
    assert result.passed and result.score == 1.0
    assert result.evidence == f"{OUT} vs {REF}: SSIM 1.0000 ≥ 0.95 (400×300)"


def test_similarity_fails_for_a_flipped_picture_without_the_transform() -> None:
    source = scene()
    flipped = source.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    result = similarity(flipped, source)
    assert not result.passed
    assert 0.0 <= result.score < 0.9
    assert result.evidence.startswith(f"{OUT} vs {REF}: SSIM 0.")


def test_similarity_transform_says_the_output_is_the_source_flipped() -> None:
    source = scene()
    flipped = source.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    result = similarity(flipped, source, transform="flip_horizontal")
    assert result.passed
    assert "flipped horizontally: SSIM 1.0000" in result.evidence
    # The unflipped source is now the wrong answer.
    assert not similarity(source, source, transform="flip_horizontal").passed
    upside_down = source.transpose(Image.Transpose.FLIP_TOP_BOTTOM)
    assert similarity(upside_down, source, transform="flip_vertical").passed
    assert not similarity(upside_down, source, transform="flip_horizontal").passed


def test_similarity_rotations_are_clockwise_as_in_gimp() -> None:
    source = scene()
    clockwise = source.rotate(-90, expand=True)  # Pillow's rotate() turns counter-clockwise
    assert similarity(clockwise, source, transform="rotate_90").passed
    assert not similarity(clockwise, source, transform="rotate_270").passed
    counter = source.rotate(90, expand=True)
    assert similarity(counter, source, transform="rotate_270").passed
    assert similarity(source.rotate(180), source, transform="rotate_180").passed


@pytest.mark.parametrize("size", [(200, 150), (800, 600), (300, 300)])
def test_similarity_survives_lanczos_resizing(size: tuple[int, int]) -> None:
    source = scene()
    resized = source.resize(size, Image.Resampling.LANCZOS)
    result = similarity(resized, source, threshold=0.9)
    assert result.passed, result.evidence
    assert f"output {size[0]}×{size[1]} resized to 400×300" in result.evidence


def test_similarity_without_resizing_fails_on_a_size_difference_naming_both() -> None:
    source = scene()
    result = similarity(source.resize((200, 150)), source, resize_to_reference=False)
    assert not result.passed and result.score == 0.0
    assert result.evidence == (
        f"{OUT} vs {REF}: output is 200×150, reference is 400×300 (resize_to_reference is off)"
    )


def test_similarity_of_a_different_picture_is_below_threshold() -> None:
    result = similarity(scene(seed=7), scene(seed=0))
    assert not result.passed
    ssim = float(result.evidence.split("SSIM ")[1].split(" ")[0])
    assert ssim < 0.95
    assert result.score == 0.0  # a failed similarity earns no partial credit


def test_similarity_threshold_decides() -> None:
    source = scene()
    noisy = np.asarray(source).astype(np.int16)
    noisy += np.random.default_rng(1).integers(-12, 13, noisy.shape, dtype=np.int16)
    output = Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8))
    loose = similarity(output, source, threshold=0.5)
    strict = similarity(output, source, threshold=0.99)
    assert loose.passed and not strict.passed
    assert loose.evidence.split("SSIM ")[1][:6] == strict.evidence.split("SSIM ")[1][:6]


def test_similarity_composites_transparency_on_white() -> None:
    source = scene()
    # The same picture with a fully transparent border, whose hidden colour is black.
    rgba = source.convert("RGBA")
    alpha = Image.new("L", source.size, 0)
    ImageDraw.Draw(alpha).rectangle((20, 20, 379, 279), fill=255)
    rgba.putalpha(alpha)
    on_white = source.copy()
    ImageDraw.Draw(on_white).rectangle((0, 0, 399, 19), fill="white")
    ImageDraw.Draw(on_white).rectangle((0, 280, 399, 299), fill="white")
    ImageDraw.Draw(on_white).rectangle((0, 0, 19, 299), fill="white")
    ImageDraw.Draw(on_white).rectangle((380, 0, 399, 299), fill="white")
    assert similarity(rgba, on_white, threshold=0.999).passed
    assert not similarity(rgba, source, threshold=0.95).passed


def test_similarity_fails_when_the_reference_asset_is_missing() -> None:
    state = state_with({OUT: encode(scene())}, {})
    result = against_ref("image_similarity", state)
    assert not result.passed
    assert result.evidence == f"task asset {REF} was not provided to the check"


def test_similarity_fails_when_the_output_is_missing() -> None:
    state = state_with({OUT: FileState.missing(OUT)}, {REF: encode(scene())})
    result = against_ref("image_similarity", state)
    assert not result.passed
    assert result.evidence == f"{OUT} does not exist"


def test_similarity_refuses_images_too_small_to_compare() -> None:
    tiny = Image.new("RGB", (2, 2), "red")
    result = similarity(tiny, tiny)
    assert not result.passed
    assert "too small for SSIM" in result.evidence
    assert similarity(Image.new("RGB", (5, 5), "red"), Image.new("RGB", (5, 5), "red")).passed


def test_similarity_compares_very_large_images_downscaled() -> None:
    wide = scene(3000, 120)
    result = similarity(wide, wide)
    assert result.passed
    assert "compared at 2048×82" in result.evidence


@pytest.mark.parametrize(
    "params",
    [
        {"threshold": 0},
        {"threshold": 1.5},
        {"transform": "mirror"},
        {"reference": "../secret.png"},
        {"reference": "/etc/passwd"},
        {"resize_to_reference": "yes"},
    ],
)
def test_similarity_rejects_bad_parameters(params: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        get_check("image_similarity").parse_params({"path": OUT, "reference": REF, **params})


# --- pixel_color --------------------------------------------------------------------


def two_colour_image() -> Image.Image:
    image = Image.new("RGB", (100, 50), (200, 30, 30))
    ImageDraw.Draw(image).rectangle((50, 0, 99, 49), fill=(10, 120, 240))
    return image


def test_pixel_color_passes_on_the_mean_colour_of_a_region() -> None:
    state = state_with({OUT: encode(two_colour_image())})
    result = check("pixel_color", state, path=OUT, region=[0, 0, 50, 50], color=[200, 30, 30])
    assert result.passed
    assert result.evidence == (
        f"mean colour of region [0, 0, 50, 50] in {OUT} is #c81e1e, expected #c81e1e "
        "(max channel difference 0.0 ≤ 10)"
    )
    assert check("pixel_color", state, path=OUT, region=[60, 10, 5, 5], color="#0A78F0").passed


def test_pixel_color_averages_across_a_mixed_region() -> None:
    state = state_with({OUT: encode(two_colour_image())})
    # Half red, half blue: the mean is neither colour.
    mean = [105, 75, 135]
    assert check("pixel_color", state, path=OUT, region=[25, 0, 50, 50], color=mean).passed
    result = check("pixel_color", state, path=OUT, region=[25, 0, 50, 50], color=[200, 30, 30])
    assert not result.passed
    assert result.evidence.endswith("(max channel difference 105.0 > 10)")


def test_pixel_color_tolerance_is_per_channel() -> None:
    state = state_with({OUT: encode(Image.new("RGB", (10, 10), (100, 100, 100)))})
    assert check(
        "pixel_color", state, path=OUT, region=[0, 0, 10, 10], color=[105, 95, 100], tolerance=5
    ).passed
    assert not check(
        "pixel_color", state, path=OUT, region=[0, 0, 10, 10], color=[106, 100, 100], tolerance=5
    ).passed


def test_pixel_color_composites_transparency_on_white() -> None:
    state = state_with({OUT: encode(Image.new("RGBA", (10, 10), (0, 0, 0, 0)))})
    assert check("pixel_color", state, path=OUT, region=[0, 0, 10, 10], color="#ffffff").passed


def test_pixel_color_region_outside_the_image_fails_with_sizes() -> None:
    state = state_with({OUT: encode(two_colour_image())})
    result = check("pixel_color", state, path=OUT, region=[90, 40, 20, 5], color=[0, 0, 0])
    assert not result.passed and result.score == 0.0
    assert result.evidence == f"region [90, 40, 20, 5] lies outside {OUT}, which is 100×50"


@pytest.mark.parametrize(
    "params",
    [
        {"region": [-1, 0, 5, 5], "color": [0, 0, 0]},
        {"region": [0, 0, 0, 5], "color": [0, 0, 0]},
        {"region": [0, 0, 5], "color": [0, 0, 0]},
        {"region": [0, 0, 5, 5], "color": [0, 0, 256]},
        {"region": [0, 0, 5, 5], "color": "#12345"},
        {"region": [0, 0, 5, 5], "color": "red"},
        {"region": [0, 0, 5, 5], "color": [0, 0, 0], "tolerance": -1},
    ],
)
def test_pixel_color_rejects_bad_parameters(params: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        get_check("pixel_color").parse_params({"path": OUT, **params})


# --- image_format and image_has_alpha -------------------------------------------------


def test_image_format_reads_the_bytes_not_the_name() -> None:
    jpeg = state_with({"~/Desktop/out.jpg": encode(scene(), "JPEG")})
    assert check("image_format", jpeg, path="~/Desktop/out.jpg", format="JPEG").passed
    png_named_jpg = state_with({"~/Desktop/out.jpg": encode(scene())})
    result = check("image_format", png_named_jpg, path="~/Desktop/out.jpg", format="JPEG")
    assert not result.passed
    assert result.evidence == "~/Desktop/out.jpg is PNG (400×300, mode RGB), expected JPEG"
    with pytest.raises(ValidationError, match="did you mean 'JPEG'"):
        get_check("image_format").parse_params({"path": OUT, "format": "JPG"})


def test_image_has_alpha_needs_a_channel_and_enough_transparency() -> None:
    cutout = Image.new("RGBA", (100, 100), (255, 0, 0, 255))
    cutout.paste((0, 0, 0, 0), (0, 0, 100, 40))  # 40 % transparent
    state = state_with({OUT: encode(cutout)})
    assert check("image_has_alpha", state, path=OUT).passed
    assert check("image_has_alpha", state, path=OUT, min_transparent=0.4).passed
    near = check("image_has_alpha", state, path=OUT, min_transparent=0.41)
    assert not near.passed and "40.0% of the image is transparent" in near.evidence
    top = check("image_has_alpha", state, path=OUT, region=[0, 0, 100, 40], min_transparent=1.0)
    assert top.passed
    opaque_rgb = state_with({OUT: encode(Image.new("RGB", (10, 10)))})
    result = check("image_has_alpha", opaque_rgb, path=OUT)
    assert not result.passed and result.evidence == f"{OUT} has no alpha channel (mode RGB, PNG)"
    # An alpha channel that is fully opaque exists, but is no cut-out.
    solid = state_with({OUT: encode(Image.new("RGBA", (10, 10), (1, 2, 3, 255)))})
    assert check("image_has_alpha", solid, path=OUT).passed
    assert not check("image_has_alpha", solid, path=OUT, min_transparent=0.01).passed


# --- image_color_stats and image_color_change -----------------------------------------


def test_color_measures_on_known_pixels() -> None:
    from app.checks.imaging import color_measures

    grey = np.full((4, 4, 3), 100, np.uint8)
    assert color_measures(grey) == {
        "brightness": 100.0,
        "contrast": 0.0,
        "saturation": 0.0,
        "warmth": 0.0,
    }
    halves = np.zeros((2, 2, 3), np.uint8)
    halves[0] = (255, 0, 0)  # pure red: saturation 1, luma 76.245
    values = color_measures(halves)
    assert values["saturation"] == pytest.approx(0.5)
    assert values["brightness"] == pytest.approx(0.299 * 255 / 2)
    assert values["contrast"] == pytest.approx(0.299 * 255 / 2)
    assert values["warmth"] == pytest.approx(1.0)  # red, no blue at all


def test_image_color_change_sees_a_warm_cast_removed() -> None:
    source = scene()
    pixels = np.asarray(source).astype(np.float64)
    warm = Image.fromarray((pixels * [1.0, 0.8, 0.6]).astype(np.uint8))
    state = state_with({OUT: encode(source)}, {REF: encode(warm)})
    fixed = color_change(state, "warmth", "decrease", 0.1)
    assert fixed.passed, fixed.evidence
    assert "warmth ((mean red - mean blue) / (mean red + mean blue), -1-1)" in fixed.evidence
    # Darkening (or brightening) alone keeps the cast: warmth is a ratio.
    darker_warm = Image.fromarray((np.asarray(warm) * 0.7).astype(np.uint8))
    darker = state_with({OUT: encode(darker_warm)}, {REF: encode(warm)})
    assert not color_change(darker, "warmth", "decrease", 0.02).passed
    still_warm = state_with({OUT: encode(warm)}, {REF: encode(warm)})
    assert not color_change(still_warm, "warmth", "decrease", 1.0).passed
    neutral = check(
        "image_color_stats",
        state_with({OUT: encode(Image.new("RGB", (4, 4), (90, 90, 90)))}),
        path=OUT,
        warmth=[-0.02, 0.02],
    )
    assert neutral.passed and "warmth 0.000 in [-0.02, 0.02]" in neutral.evidence


def test_image_color_stats_bounds_and_region() -> None:
    image = Image.new("RGB", (100, 100), (128, 128, 128))
    image.paste((250, 20, 20), (0, 0, 50, 100))
    state = state_with({OUT: encode(image)})
    grey_half = check(
        "image_color_stats",
        state,
        path=OUT,
        region=[50, 0, 50, 100],
        saturation=[0.0, 0.02],
        brightness=[120.0, 136.0],
    )
    assert grey_half.passed, grey_half.evidence
    assert grey_half.evidence == (
        f"{OUT}, region [50, 0, 50, 100]: brightness 128.0 in [120, 136]; "
        "saturation 0.000 in [0, 0.02]"
    )
    whole = check("image_color_stats", state, path=OUT, saturation=[0.0, 0.02])
    assert not whole.passed and "saturation 0.460 NOT in [0, 0.02]" in whole.evidence
    flat = check(
        "image_color_stats", state, path=OUT, region=[60, 0, 40, 100], contrast=[0.5, 255.0]
    )
    assert not flat.passed and "contrast 0.0 NOT in" in flat.evidence
    outside = check(
        "image_color_stats", state, path=OUT, region=[90, 0, 20, 10], contrast=[0.0, 1.0]
    )
    assert not outside.passed and "lies outside" in outside.evidence


@pytest.mark.parametrize(
    "params",
    [{}, {"brightness": [200.0, 100.0]}, {"saturation": [0.1]}, {"contrast": "high"}],
)
def test_image_color_stats_rejects_bad_bounds(params: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        get_check("image_color_stats").parse_params({"path": OUT, **params})


def test_image_color_change_direction_and_amount() -> None:
    source = scene()
    pixels = np.asarray(source).astype(np.int16)
    brighter = Image.fromarray(np.clip(pixels + 30, 0, 255).astype(np.uint8))
    state = state_with({OUT: encode(brighter)}, {REF: encode(source)})
    ok = color_change(state, "brightness", "increase", 20.0)
    assert ok.passed, ok.evidence
    assert ok.evidence.startswith(f"brightness (mean luma 0-255) of {OUT} is ")
    too_little = color_change(state, "brightness", "increase", 35.0)
    assert not too_little.passed
    wrong_way = color_change(state, "brightness", "decrease", 1.0)
    assert not wrong_way.passed
    overdone = color_change(state, "brightness", "increase", 5.0, max_amount=10.0)
    assert not overdone.passed and "≤ 10" in overdone.evidence


def test_image_color_change_sees_desaturation_at_another_size() -> None:
    source = scene()
    grey = source.convert("L").convert("RGB").resize((200, 150))
    state = state_with({OUT: encode(grey)}, {REF: encode(source)})
    result = color_change(state, "saturation", "decrease", 0.3)
    assert result.passed, result.evidence
    unchanged = state_with({OUT: encode(source)}, {REF: encode(source)})
    same = color_change(unchanged, "saturation", "decrease", 0.01)
    assert not same.passed and "+0.000" in same.evidence
    missing = color_change(state_with({OUT: encode(grey)}), "contrast", "increase", 1.0)
    assert not missing.passed and "was not provided" in missing.evidence


# --- image_similarity: crop and resize ------------------------------------------------


def test_similarity_crop_says_the_output_is_part_of_the_source() -> None:
    source = scene(400, 300)
    part = source.crop((100, 50, 300, 200))
    state = state_with({OUT: encode(part)}, {REF: encode(source)})
    result = against_ref(
        "image_similarity", state, crop=[100, 50, 200, 150], resize_to_reference=False
    )
    assert result.passed and "cropped to [100, 50, 200, 150]" in result.evidence
    off_by_ten = against_ref(
        "image_similarity",
        state,
        crop=[110, 50, 200, 150],
        resize_to_reference=False,
        threshold=0.9,
    )
    assert not off_by_ten.passed
    outside = against_ref("image_similarity", state, crop=[300, 0, 200, 10])
    assert not outside.passed and "lies outside assets/in.png, which is 400×300" in outside.evidence


def test_similarity_resize_compares_at_the_requested_size() -> None:
    source = scene(400, 300)
    small = source.transpose(Image.Transpose.FLIP_LEFT_RIGHT).resize((200, 150))
    state = state_with({OUT: encode(small)}, {REF: encode(source)})
    result = against_ref(
        "image_similarity",
        state,
        transform="flip_horizontal",
        resize=[200, 150],
        resize_to_reference=False,
    )
    assert result.passed, result.evidence
    assert "flipped horizontally scaled to 200×150" in result.evidence
    wrong = against_ref(
        "image_similarity",
        state,
        resize=[201, 150],
        transform="flip_horizontal",
        resize_to_reference=False,
    )
    assert not wrong.passed and "output is 200×150, reference is 201×150" in wrong.evidence
    unflipped = against_ref("image_similarity", state, resize=[200, 150])
    assert not unflipped.passed


# --- image_difference -----------------------------------------------------------------


def test_image_difference_counts_changed_pixels_anywhere() -> None:
    source = scene(100, 100)
    marked = source.copy()
    marked.paste((0, 0, 0), (10, 10, 30, 30))  # 4 % of the pixels, wherever they are
    state = state_with({OUT: encode(marked)}, {REF: encode(source)})
    added = against_ref("image_difference", state, min_fraction=0.03)
    assert added.passed, added.evidence
    assert "differ from assets/in.png by more than 30" in added.evidence
    assert not against_ref("image_difference", state, min_fraction=0.05).passed
    left_alone = against_ref("image_difference", state, max_fraction=0.01)
    assert not left_alone.passed
    corner = against_ref("image_difference", state, region=[50, 50, 50, 50], max_fraction=0.0)
    assert corner.passed, corner.evidence
    untouched = state_with({OUT: encode(source)}, {REF: encode(source)})
    assert not against_ref("image_difference", untouched, min_fraction=0.001).passed


def test_image_difference_needs_the_same_size_and_a_bound() -> None:
    state = state_with({OUT: encode(scene(100, 90))}, {REF: encode(scene(100, 100))})
    result = against_ref("image_difference", state, min_fraction=0.1)
    assert not result.passed and "needs the same size" in result.evidence
    with pytest.raises(ValidationError, match="give min_fraction"):
        get_check("image_difference").parse_params({"path": OUT, "reference": REF})
