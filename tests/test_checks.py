"""The built-in checks and their registry, on real images made with Pillow."""

from __future__ import annotations

import ast
import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image, ImageDraw
from pydantic import ValidationError

from app.checks import (
    REGISTRY,
    CheckDefinitionError,
    CheckParams,
    CheckResult,
    CheckSpec,
    CheckState,
    FileState,
    UnknownCheck,
    get_check,
    register,
    run_check,
)
from app.checks.base import GuestPath, Probe, ProbeResult
from app.checks.files import FileExistsParams
from app.core.errors import FileTooLarge, GuestError
from app.episode.scoring import score_task
from app.tasks.loader import load_task

OUT = "~/Desktop/out.png"
REF = "assets/in.png"


def scene(width: int = 400, height: int = 300, seed: int = 0) -> Image.Image:
    """A picture with a gradient, shapes and text: structure SSIM can see, nothing symmetric."""
    pixels = np.zeros((height, width, 3), np.uint8)
    pixels[..., 0] = np.linspace(0, 255, width)[None, :]
    pixels[..., 1] = np.linspace(0, 200, height)[:, None]
    pixels[..., 2] = 90
    image = Image.fromarray(pixels)
    draw = ImageDraw.Draw(image)
    rng = np.random.default_rng(seed)
    for _ in range(12):
        x = int(rng.integers(0, max(1, width - 60)))
        y = int(rng.integers(0, max(1, height - 60)))
        side = int(rng.integers(15, 60))
        fill = (int(rng.integers(256)), int(rng.integers(256)), int(rng.integers(256)))
        shape = draw.ellipse if rng.random() < 0.5 else draw.rectangle
        shape((x, y, x + side, y + side), fill=fill)
    draw.text((10, 10), "DeskLoop", fill=(255, 255, 255))
    return image


def encode(image: Image.Image, fmt: str = "PNG", **options: Any) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, fmt, **options)
    return buffer.getvalue()


def state_with(
    files: dict[str, bytes | FileState] | None = None, assets: dict[str, bytes] | None = None
) -> CheckState:
    gathered = {
        path: value if isinstance(value, FileState) else FileState.found(path, value)
        for path, value in (files or {}).items()
    }
    return CheckState(files=gathered, assets=assets or {})


def check(name: str, state: CheckState, /, **params: Any) -> CheckResult:
    spec = get_check(name)
    return run_check(spec, state, spec.parse_params(params))


# --- file_exists --------------------------------------------------------------------


def test_file_exists_passes_for_a_found_file_even_when_empty() -> None:
    result = check("file_exists", state_with({OUT: b""}), path=OUT)
    assert result.passed and result.score == 1.0
    assert result.evidence == f"{OUT} exists (0 bytes)"


def test_file_exists_fails_for_a_missing_file() -> None:
    result = check("file_exists", state_with({OUT: FileState.missing(OUT)}), path=OUT)
    assert not result.passed and result.score == 0.0
    assert result.evidence == f"{OUT} does not exist"


def test_file_exists_passes_for_a_file_too_large_to_fetch() -> None:
    state = state_with({OUT: FileState.too_large(OUT, "64 MiB")})
    result = check("file_exists", state, path=OUT)
    assert result.passed
    assert "larger than 64 MiB" in result.evidence


class BigFileGuest:
    """A guest whose files exist and cannot be read: too large, or refused."""

    home = "/home/user"

    def __init__(self, error: GuestError) -> None:
        self.error = error

    async def exists(self, path: str) -> bool:
        return True

    async def read_file(self, path: str, max_bytes: int = 64 * 1024 * 1024) -> bytes:
        raise self.error


SIZE_TASK = """\
id: big-file
app: gimp
level: L1
title: Export a picture
instruction: Export the picture to ~/Desktop/out.png.
budget: {steps: 5, seconds: 60}
evaluate:
  all:
    - {check: file_exists, path: ~/Desktop/out.png}
    - {check: image_size, path: ~/Desktop/out.png, width: 512, height: 512}
"""


async def test_a_file_too_large_to_read_is_typed_and_fails_with_its_size(
    tmp_path: Path,
) -> None:
    (tmp_path / "big-file.yaml").write_text(SIZE_TASK)
    task = load_task(tmp_path / "big-file.yaml")
    limit = 64 * 1024 * 1024
    # The guest's words say nothing of "larger than": scoring goes by the error's type.
    too_large = FileTooLarge(
        "out.png is 70000000 bytes, over the limit", size=70_000_000, limit=limit
    )
    score = await score_task(task, BigFileGuest(too_large))  # type: ignore[arg-type]
    exists, size = score.checks
    assert exists.passed and "70000000 bytes, larger than 64 MiB" in exists.evidence
    assert not size.passed and not score.passed
    assert size.evidence == f"{OUT} could not be read (70000000 bytes, larger than 64 MiB)"
    # Any other guest error leaves the file's existence unknown.
    refused = await score_task(task, BigFileGuest(GuestError("permission denied")))  # type: ignore[arg-type]
    assert [c.passed for c in refused.checks] == [False, False]
    assert "unreadable: permission denied" in refused.checks[1].evidence


@pytest.mark.parametrize(
    "state",
    [
        state_with({OUT: FileState.unreadable(OUT, "permission denied")}),
        state_with({}),  # scoring did not gather the file at all
    ],
)
def test_file_exists_fails_when_existence_is_unknown(state: CheckState) -> None:
    result = check("file_exists", state, path=OUT)
    assert not result.passed
    assert result.evidence.startswith(f"could not tell whether {OUT} exists")


def test_file_state_requires_exactly_one_of_data_and_error() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        FileState(path=OUT, data=b"x", error="not found")
    with pytest.raises(ValueError, match="exactly one"):
        FileState(path=OUT, data=None, error=None)
    # The words alone do not make a missing file: checks decide on the problem.
    with pytest.raises(ValueError, match="needs its problem"):
        FileState(path=OUT, data=None, error="not found")


@pytest.mark.parametrize("path", ["out.png", "Desktop/out.png", "~", "~/", "/", ""])
def test_guest_paths_must_be_absolute_or_home_relative(path: str) -> None:
    with pytest.raises(ValidationError, match="guest path"):
        FileExistsParams.model_validate({"path": path})


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
    return check("image_similarity", state, path=OUT, reference=REF, **params)


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
    result = check("image_similarity", state, path=OUT, reference=REF)
    assert not result.passed
    assert result.evidence == f"task asset {REF} was not provided to the check"


def test_similarity_fails_when_the_output_is_missing() -> None:
    state = state_with({OUT: FileState.missing(OUT)}, {REF: encode(scene())})
    result = check("image_similarity", state, path=OUT, reference=REF)
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


# --- the registry -------------------------------------------------------------------


def test_builtin_checks_are_registered_with_documented_parameters() -> None:
    assert {"file_exists", "image_size", "image_mode", "image_similarity", "pixel_color"} <= set(
        REGISTRY
    )
    for spec in REGISTRY.values():
        assert spec.doc
        for name, field in spec.params.model_fields.items():
            assert field.description, f"{spec.name}.{name} has no description"


def test_specs_say_which_files_and_assets_to_gather() -> None:
    spec = get_check("image_similarity")
    params = spec.parse_params({"path": OUT, "reference": REF})
    assert spec.files(params) == [OUT]
    assert spec.assets(params) == [REF]
    size = get_check("image_size")
    assert size.assets(size.parse_params({"path": OUT, "width": 3})) == []


def test_unknown_check_suggests_close_names_and_lists_all() -> None:
    with pytest.raises(UnknownCheck) as caught:
        get_check("image_similarty")
    message = str(caught.value)
    assert "did you mean 'image_similarity'" in message
    for name in REGISTRY:
        assert name in message


def test_unknown_check_without_a_close_name_just_lists() -> None:
    with pytest.raises(UnknownCheck) as caught:
        get_check("zzz")
    assert "did you mean" not in str(caught.value)
    assert "known checks: " in str(caught.value)


class _Params(CheckParams):
    path: GuestPath
    """A file."""


def _crashing(state: CheckState, params: _Params) -> CheckResult:
    return CheckResult(passed=True, score=1.0, evidence=str(1 / len(state.assets)))


def test_a_crashing_check_becomes_a_failed_result() -> None:
    spec = CheckSpec("crashy", _Params, _crashing, ("path",), (), "crashes")
    result = run_check(spec, state_with(), _Params(path=OUT))
    assert not result.passed and result.score == 0.0
    assert result.evidence.startswith("check crashed: ZeroDivisionError: division by zero")
    assert "crashy" in result.evidence


def test_a_check_returning_an_out_of_range_score_is_a_crash() -> None:
    def overconfident(state: CheckState, params: _Params) -> CheckResult:
        return CheckResult(passed=True, score=1.5, evidence="great")

    spec = CheckSpec("over", _Params, overconfident, ("path",), (), "over")
    result = run_check(spec, state_with(), _Params(path=OUT))
    assert not result.passed
    assert "score must be in [0, 1]" in result.evidence


def test_register_refuses_duplicates_reserved_names_and_missing_docs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("app.checks.registry.REGISTRY", dict(REGISTRY))

    def documented(state: CheckState, params: _Params) -> CheckResult:
        """Does nothing."""
        return CheckResult(True, 1.0, "ok")

    def undocumented(state: CheckState, params: _Params) -> CheckResult:
        return CheckResult(True, 1.0, "ok")

    with pytest.raises(CheckDefinitionError, match="already registered"):
        register("file_exists", _Params)(documented)
    with pytest.raises(CheckDefinitionError, match="needs a docstring"):
        register("fresh", _Params)(undocumented)
    with pytest.raises(CheckDefinitionError, match="not a field"):
        register("fresh", _Params, files=("nope",))(documented)

    class Clashing(CheckParams):
        weight: int
        """Collides with the leaf's own weight."""

    def clashing(state: CheckState, params: Clashing) -> CheckResult:
        """Never registered."""
        return CheckResult(True, 1.0, "ok")

    with pytest.raises(CheckDefinitionError, match="reserved"):
        register("fresh", Clashing)(clashing)

    register("fresh", _Params, files=("path",))(documented)
    assert get_check("fresh").files(_Params(path=OUT)) == [OUT]


def test_checks_import_nothing_from_the_app_but_errors() -> None:
    """The task loader imports checks, so checks must not import upwards: only the
    ground floor's errors and the judge's verdict type (app.core.judgements)."""
    package = Path(__file__).parent.parent / "app" / "checks"
    sources = sorted(package.glob("*.py"))
    assert len(sources) >= 6
    for source in sources:
        for node in ast.walk(ast.parse(source.read_text(), str(source))):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                if name == "app" or name.startswith("app."):
                    allowed = name in ("app.core.errors", "app.core.judgements")
                    assert allowed or name.startswith("app.checks"), f"{source.name} imports {name}"


# --- file_not_exists and file_modified_after_start ------------------------------------


def test_file_not_exists_passes_only_when_the_guest_says_missing() -> None:
    assert check("file_not_exists", state_with({OUT: FileState.missing(OUT)}), path=OUT).passed
    present = check("file_not_exists", state_with({OUT: b"abc"}), path=OUT)
    assert not present.passed and present.evidence == f"{OUT} exists (3 bytes)"
    unknown = check("file_not_exists", state_with({}), path=OUT)
    assert not unknown.passed and unknown.evidence.startswith("could not tell")


def stat_state(
    mtime: float | None, started_at: float | None, error: str | None = None
) -> CheckState:
    probe = Probe("stat", OUT)
    result = (
        ProbeResult.not_found()
        if error == "missing"
        else ProbeResult.failure(error)
        if error
        else ProbeResult({"size": 3, "mtime": mtime, "type": "regular file"})
    )
    return CheckState(files={}, assets={}, probes={probe: result}, started_at=started_at)


def test_file_modified_after_start_compares_mtime_with_the_episode_start() -> None:
    spec = get_check("file_modified_after_start")
    params = spec.parse_params({"path": OUT})
    assert spec.probes(params) == [Probe("stat", OUT)]
    after = run_check(spec, stat_state(1000.5, 1000.0), params)
    assert after.passed and after.evidence == f"{OUT} was modified 0.5 s after the episode started"
    before = run_check(spec, stat_state(999.0, 1000.0), params)  # written by setup
    assert not before.passed and "1.0 s before" in before.evidence


@pytest.mark.parametrize(
    ("state", "message"),
    [
        (stat_state(1001.0, None), "start time is unknown"),
        (stat_state(None, 1000.0, error="missing"), "does not exist"),
        (stat_state(None, 1000.0, error="stat failed: EIO"), "could not stat"),
        # Only the probe's flag says missing, not its words.
        (stat_state(None, 1000.0, error="not found"), "could not stat"),
        (CheckState(files={}, assets={}, started_at=1000.0), "not gathered"),
        (stat_state(None, 1000.0), "no modification time"),
    ],
)
def test_file_modified_after_start_fails_when_it_cannot_tell(
    state: CheckState, message: str
) -> None:
    result = check("file_modified_after_start", state, path=OUT)
    assert not result.passed and message in result.evidence


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
    fixed = check(
        "image_color_change",
        state,
        path=OUT,
        source=REF,
        measure="warmth",
        direction="decrease",
        min_amount=0.1,
    )
    assert fixed.passed, fixed.evidence
    assert "warmth ((mean red - mean blue) / (mean red + mean blue), -1-1)" in fixed.evidence
    # Darkening (or brightening) alone keeps the cast: warmth is a ratio.
    darker_warm = Image.fromarray((np.asarray(warm) * 0.7).astype(np.uint8))
    darker = state_with({OUT: encode(darker_warm)}, {REF: encode(warm)})
    assert not check(
        "image_color_change",
        darker,
        path=OUT,
        source=REF,
        measure="warmth",
        direction="decrease",
        min_amount=0.02,
    ).passed
    still_warm = state_with({OUT: encode(warm)}, {REF: encode(warm)})
    assert not check(
        "image_color_change",
        still_warm,
        path=OUT,
        source=REF,
        measure="warmth",
        direction="decrease",
        min_amount=1.0,
    ).passed
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
    ok = check(
        "image_color_change",
        state,
        path=OUT,
        source=REF,
        measure="brightness",
        direction="increase",
        min_amount=20.0,
    )
    assert ok.passed, ok.evidence
    assert ok.evidence.startswith(f"brightness (mean luma 0-255) of {OUT} is ")
    too_little = check(
        "image_color_change",
        state,
        path=OUT,
        source=REF,
        measure="brightness",
        direction="increase",
        min_amount=35.0,
    )
    assert not too_little.passed
    wrong_way = check(
        "image_color_change",
        state,
        path=OUT,
        source=REF,
        measure="brightness",
        direction="decrease",
        min_amount=1.0,
    )
    assert not wrong_way.passed
    overdone = check(
        "image_color_change",
        state,
        path=OUT,
        source=REF,
        measure="brightness",
        direction="increase",
        min_amount=5.0,
        max_amount=10.0,
    )
    assert not overdone.passed and "≤ 10" in overdone.evidence


def test_image_color_change_sees_desaturation_at_another_size() -> None:
    source = scene()
    grey = source.convert("L").convert("RGB").resize((200, 150))
    state = state_with({OUT: encode(grey)}, {REF: encode(source)})
    result = check(
        "image_color_change",
        state,
        path=OUT,
        source=REF,
        measure="saturation",
        direction="decrease",
        min_amount=0.3,
    )
    assert result.passed, result.evidence
    unchanged = state_with({OUT: encode(source)}, {REF: encode(source)})
    same = check(
        "image_color_change",
        unchanged,
        path=OUT,
        source=REF,
        measure="saturation",
        direction="decrease",
        min_amount=0.01,
    )
    assert not same.passed and "+0.000" in same.evidence
    missing = check(
        "image_color_change",
        state_with({OUT: encode(grey)}),
        path=OUT,
        source=REF,
        measure="contrast",
        direction="increase",
        min_amount=1.0,
    )
    assert not missing.passed and "was not provided" in missing.evidence


# --- image_similarity: crop and resize ------------------------------------------------


def test_similarity_crop_says_the_output_is_part_of_the_source() -> None:
    source = scene(400, 300)
    part = source.crop((100, 50, 300, 200))
    state = state_with({OUT: encode(part)}, {REF: encode(source)})
    result = check(
        "image_similarity",
        state,
        path=OUT,
        reference=REF,
        crop=[100, 50, 200, 150],
        resize_to_reference=False,
    )
    assert result.passed and "cropped to [100, 50, 200, 150]" in result.evidence
    off_by_ten = check(
        "image_similarity",
        state,
        path=OUT,
        reference=REF,
        crop=[110, 50, 200, 150],
        resize_to_reference=False,
        threshold=0.9,
    )
    assert not off_by_ten.passed
    outside = check("image_similarity", state, path=OUT, reference=REF, crop=[300, 0, 200, 10])
    assert not outside.passed and "lies outside assets/in.png, which is 400×300" in outside.evidence


def test_similarity_resize_compares_at_the_requested_size() -> None:
    source = scene(400, 300)
    small = source.transpose(Image.Transpose.FLIP_LEFT_RIGHT).resize((200, 150))
    state = state_with({OUT: encode(small)}, {REF: encode(source)})
    result = check(
        "image_similarity",
        state,
        path=OUT,
        reference=REF,
        transform="flip_horizontal",
        resize=[200, 150],
        resize_to_reference=False,
    )
    assert result.passed, result.evidence
    assert "flipped horizontally scaled to 200×150" in result.evidence
    wrong = check(
        "image_similarity",
        state,
        path=OUT,
        reference=REF,
        resize=[201, 150],
        transform="flip_horizontal",
        resize_to_reference=False,
    )
    assert not wrong.passed and "output is 200×150, reference is 201×150" in wrong.evidence
    unflipped = check("image_similarity", state, path=OUT, reference=REF, resize=[200, 150])
    assert not unflipped.passed


# --- GIMP projects (.xcf), read from files the real GIMP wrote ------------------------

XCF = "~/Desktop/project.xcf"

_MAKE_XCF = """
(let* ((img (car (gimp-image-new 400 300 RGB)))
       (bg (car (gimp-layer-new img 400 300 RGB-IMAGE "Background" 100 LAYER-MODE-NORMAL)))
       (box (car (gimp-layer-new img 120 80 RGBA-IMAGE "Red Box" 75 LAYER-MODE-MULTIPLY)))
       (hid (car (gimp-layer-new img 50 50 RGBA-IMAGE "Hidden" 100 LAYER-MODE-SCREEN)))
       (grp (car (gimp-layer-group-new img)))
       (child (car (gimp-layer-new img 20 20 RGBA-IMAGE "Child" 100 LAYER-MODE-NORMAL))))
  (gimp-image-insert-layer img bg 0 0)
  (gimp-drawable-fill bg FILL-WHITE)
  (gimp-image-insert-layer img box 0 0)
  (gimp-layer-set-offsets box 30 40)
  (gimp-image-insert-layer img hid 0 0)
  (gimp-item-set-visible hid FALSE)
  (let ((txt (car (gimp-text-fontname img -1 200 150 "Hello \\"World\\"" 0 TRUE 24 PIXELS
                                      "Sans"))))
    (gimp-item-set-name txt "Title"))
  (gimp-image-insert-layer img grp 0 0)
  (gimp-item-set-name grp "Group A")
  (gimp-image-insert-layer img child grp 0)
  (gimp-xcf-save 0 img bg "OUT" "OUT"))
"""


@pytest.fixture(scope="module")
def gimp_xcf(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A project with a group, a text layer, a hidden layer and a multiply layer at 75 %,
    saved by GIMP itself in batch mode (about 3 s)."""
    import os
    import subprocess

    folder = tmp_path_factory.mktemp("xcf")
    out = folder / "project.xcf"
    env = {**os.environ, "HOME": str(folder)}
    proc = subprocess.run(
        [
            "gimp-console-2.10",
            "-i",
            "-d",
            "-b",
            _MAKE_XCF.replace("OUT", str(out)),
            "-b",
            "(gimp-quit 0)",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    # GIMP's batch mode exits 0 even when the script failed: the file is the proof.
    assert out.exists(), proc.stderr
    return out.read_bytes()


def test_xcf_reader_reads_gimps_layers_top_to_bottom(gimp_xcf: bytes) -> None:
    from app.checks.xcf import parse_xcf

    image = parse_xcf(gimp_xcf)
    assert (image.version, image.width, image.height) == (11, 400, 300)
    summary = [
        (
            layer.name,
            layer.depth,
            layer.is_group,
            layer.x,
            layer.y,
            layer.width,
            layer.height,
            layer.visible,
            layer.opacity,
            layer.mode_name,
            layer.text,
        )
        for layer in image.layers
    ]
    assert summary[0][:3] == ("Group A", 0, True)
    assert summary[1][:3] == ("Child", 1, False)
    assert summary[2][0] == "Title" and summary[2][3:5] == (200, 150)
    assert summary[2][10] == 'Hello "World"'
    assert summary[3] == ("Hidden", 0, False, 0, 0, 50, 50, False, 100.0, "screen", None)
    assert summary[4] == ("Red Box", 0, False, 30, 40, 120, 80, True, 75.0, "multiply", None)
    assert summary[5] == ("Background", 0, False, 0, 0, 400, 300, True, 100.0, "normal", None)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x89PNG\r\n\x1a\n", "not an XCF file"),
        (b"gimp xcf v0x1\0", "unknown XCF version"),
        (b"gimp xcf v011\0\0\0", "truncated"),
    ],
)
def test_xcf_reader_refuses_what_it_cannot_read(data: bytes, message: str) -> None:
    from app.checks.xcf import XcfError, parse_xcf

    with pytest.raises(XcfError, match=message):
        parse_xcf(data)


def test_xcf_reader_refuses_a_truncated_real_file(gimp_xcf: bytes) -> None:
    from app.checks.xcf import XcfError, parse_xcf

    with pytest.raises(XcfError, match="truncated"):
        parse_xcf(gimp_xcf[:200])


def test_text_layer_markup_is_read_without_tags() -> None:
    from app.checks.xcf import text_layer_text

    parasite = b'(markup "<markup><b>Big</b> &amp; bold</markup>")\n(font "Sans")\0'
    assert text_layer_text(parasite) == "Big & bold"


def test_xcf_layers_count_order_and_canvas(gimp_xcf: bytes) -> None:
    state = state_with({XCF: gimp_xcf})
    ok = check(
        "xcf_layers",
        state,
        path=XCF,
        count=6,
        order=["Title", "Red Box", "Background"],
        width=400,
        height=300,
    )
    assert ok.passed, ok.evidence
    assert "'Group A', 'Child', 'Title'" in ok.evidence
    one_short = check("xcf_layers", state, path=XCF, count=7, width=400)
    assert not one_short.passed and one_short.score == 0.5
    assert "NOT OK: 6 layers, expected 7" in one_short.evidence
    swapped = check("xcf_layers", state, path=XCF, order=["Background", "Red Box"])
    assert not swapped.passed and "does not hold" in swapped.evidence
    unknown = check("xcf_layers", state, path=XCF, order=["Logo"])
    assert not unknown.passed and "no layer named 'Logo'" in unknown.evidence
    assert check("xcf_layers", state, path=XCF, min_count=6).passed
    assert not check("xcf_layers", state, path=XCF, min_count=7).passed


def test_xcf_layer_properties_and_near_misses(gimp_xcf: bytes) -> None:
    state = state_with({XCF: gimp_xcf})
    box = check(
        "xcf_layer",
        state,
        path=XCF,
        name="Red Box",
        visible=True,
        opacity=75.0,
        mode="multiply",
        x=30,
        y=40,
        width=120,
        height=80,
        is_group=False,
    )
    assert box.passed, box.evidence
    assert box.evidence.startswith(
        f"{XCF} layer 'Red Box' (120×80 at 30,40, visible, opacity 75, multiply)"
    )
    wrong_mode = check("xcf_layer", state, path=XCF, name="Red Box", mode="screen", opacity=75.0)
    assert not wrong_mode.passed and wrong_mode.score == 0.5
    off_by_one = check("xcf_layer", state, path=XCF, name="Red Box", width=121)
    assert not off_by_one.passed
    assert check("xcf_layer", state, path=XCF, name="Red Box", width=121, size_tolerance=1).passed
    assert not check("xcf_layer", state, path=XCF, name="Hidden", visible=True).passed
    assert check("xcf_layer", state, path=XCF, name="Hidden", visible=False).passed
    assert check("xcf_layer", state, path=XCF, name="Title", text='Hello "World"').passed
    wrong_text = check("xcf_layer", state, path=XCF, name="Title", text="Hello World")
    assert not wrong_text.passed
    not_text = check("xcf_layer", state, path=XCF, name="Background", text="Hello")
    assert not not_text.passed and "expected a text layer" in not_text.evidence
    assert check("xcf_layer", state, path=XCF, name="Group A", is_group=True).passed
    # Names are exact: a layer is never found by a substring or a byte search.
    missing = check("xcf_layer", state, path=XCF, name="Red")
    assert not missing.passed and "has no layer named 'Red'" in missing.evidence


def test_xcf_checks_fail_on_files_that_are_not_xcf() -> None:
    state = state_with({XCF: encode(scene())})
    result = check("xcf_layers", state, path=XCF, count=1)
    assert not result.passed and "is not a readable GIMP .xcf file" in result.evidence
    gone = check("xcf_layer", state_with({XCF: FileState.missing(XCF)}), path=XCF, name="x")
    assert not gone.passed and gone.evidence == f"{XCF} does not exist"
    with pytest.raises(ValidationError, match="unknown layer mode"):
        get_check("xcf_layer").parse_params({"path": XCF, "name": "a", "mode": "mult"})
    with pytest.raises(ValidationError, match="give count"):
        get_check("xcf_layers").parse_params({"path": XCF})


# --- image_difference -----------------------------------------------------------------


def test_image_difference_counts_changed_pixels_anywhere() -> None:
    source = scene(100, 100)
    marked = source.copy()
    marked.paste((0, 0, 0), (10, 10, 30, 30))  # 4 % of the pixels, wherever they are
    state = state_with({OUT: encode(marked)}, {REF: encode(source)})
    added = check("image_difference", state, path=OUT, reference=REF, min_fraction=0.03)
    assert added.passed, added.evidence
    assert "differ from assets/in.png by more than 30" in added.evidence
    assert not check("image_difference", state, path=OUT, reference=REF, min_fraction=0.05).passed
    left_alone = check("image_difference", state, path=OUT, reference=REF, max_fraction=0.01)
    assert not left_alone.passed
    corner = check(
        "image_difference",
        state,
        path=OUT,
        reference=REF,
        region=[50, 50, 50, 50],
        max_fraction=0.0,
    )
    assert corner.passed, corner.evidence
    untouched = state_with({OUT: encode(source)}, {REF: encode(source)})
    assert not check(
        "image_difference", untouched, path=OUT, reference=REF, min_fraction=0.001
    ).passed


def test_image_difference_needs_the_same_size_and_a_bound() -> None:
    state = state_with({OUT: encode(scene(100, 90))}, {REF: encode(scene(100, 100))})
    result = check("image_difference", state, path=OUT, reference=REF, min_fraction=0.1)
    assert not result.passed and "needs the same size" in result.evidence
    with pytest.raises(ValidationError, match="give min_fraction"):
        get_check("image_difference").parse_params({"path": OUT, "reference": REF})
