"""The evaluator's version names what computed a score: DeskLoop's scoring source and
the versions of the libraries whose results become scores, each pinned to a tested
series in pyproject.toml."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

from app.episode.scoring import (
    SCORING_LIBRARIES,
    evaluator_digest,
    scoring_library_versions,
)

ROOT = Path(__file__).resolve().parents[2]


def pinned() -> dict[str, Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = [Requirement(line) for line in project["dependencies"]]
    return {r.name.lower(): r for r in requirements}


def test_every_scoring_library_is_pinned_to_a_series_the_installed_one_is_in() -> None:
    pins = pinned()
    installed = scoring_library_versions()
    for name in SCORING_LIBRARIES:
        assert name in pins, f"{name} computes scores but pyproject.toml does not name it"
        specifier = pins[name].specifier
        assert any(s.operator == "<" for s in specifier), f"{name} has no upper bound"
        assert Version(installed[name]) in specifier, f"{name} {installed[name]} not in {specifier}"


def test_the_digest_follows_the_sources_and_the_library_versions(tmp_path: Path) -> None:
    source = tmp_path / "checks" / "image.py"
    source.parent.mkdir()
    source.write_text("THRESHOLD = 0.9\n")
    libraries = {"scikit-image": "0.26.0", "pillow": "13.0.0"}
    first = evaluator_digest([source], tmp_path, libraries)
    assert evaluator_digest([source], tmp_path, dict(reversed(libraries.items()))) == first
    assert evaluator_digest([source], tmp_path, {**libraries, "pillow": "13.1.0"}) != first
    assert evaluator_digest([source], tmp_path, {"scikit-image": "0.26.0"}) != first
    source.write_text("THRESHOLD = 0.8\n")
    assert evaluator_digest([source], tmp_path, libraries) != first
