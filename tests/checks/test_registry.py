"""The check registry (app/checks/registry.py): registering, looking up, running, and
what a check may import."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from app.checks import (
    REGISTRY,
    CheckDefinitionError,
    CheckParams,
    CheckResult,
    CheckSpec,
    CheckState,
    UnknownCheck,
    get_check,
    register,
    run_check,
)
from app.checks.base import GuestPath
from tests.checks.helpers import OUT, REF, state_with

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
    package = Path(__file__).parents[2] / "app" / "checks"
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
