"""GIMP projects (app/checks/xcf.py, gimp.py), read from files the real GIMP wrote."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from app.checks import (
    FileState,
    get_check,
)
from tests.checks.helpers import check, encode, scene, state_with

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
