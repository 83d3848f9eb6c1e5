"""The pure parts of web scoring: how a page's verdict is read and how a named value is
found in a page's state (the live page is tested in test_web_desktop.py)."""

from __future__ import annotations

from app.checks.base import CheckState, Probe, ProbeResult
from app.checks.registry import get_check, run_check
from app.checks.web import page_verdict
from app.probes.web import lookup


def test_a_page_verdict_is_a_boolean_or_an_object_with_success() -> None:
    assert page_verdict(True) == (True, "")
    assert page_verdict({"success": False, "message": "cart: nothing"}) == (
        False,
        "cart: nothing",
    )
    assert page_verdict({"success": "yes"}) is None
    assert page_verdict(1) is None
    assert page_verdict(None) is None


def test_names_reach_into_objects_and_match_keys_with_dots_whole() -> None:
    state = {"tags": {"clip.mp4": ["a"], "clip": {"mp4": "other"}}, "counts": {"doing": 2}}
    assert lookup(state, "counts.doing") == 2
    assert lookup(state, "tags.clip.mp4") == ["a"]
    missing = lookup(state, "nope")
    assert missing is not None
    assert lookup(state, "counts.todo") is missing
    assert lookup([1, 2], "0") is missing


def _state_check(value: ProbeResult, equals: object) -> tuple[bool, str]:
    spec = get_check("web_state_equals")
    params = spec.parse_params({"name": "counts.doing", "equals": equals})
    state = CheckState(files={}, assets={}, probes={Probe("web_state", "counts.doing"): value})
    result = run_check(spec, state, params)
    return result.passed, result.evidence


def test_web_state_equals_compares_as_json_and_keeps_true_apart_from_one() -> None:
    assert _state_check(ProbeResult(2), 2)[0] is True
    assert _state_check(ProbeResult(2.0), 2)[0] is True
    assert _state_check(ProbeResult("2"), 2)[0] is False
    assert _state_check(ProbeResult(True), 1)[0] is False
    passed, evidence = _state_check(ProbeResult.not_found(), 2)
    assert passed is False and "could not be read" in evidence


def test_web_evaluate_fails_with_the_reason_when_the_page_could_not_answer() -> None:
    spec = get_check("web_evaluate")
    params = spec.parse_params({"task": "t"})
    probe = Probe("web_evaluate", "t")
    broken = CheckState(
        files={}, assets={}, probes={probe: ProbeResult.failure("the page threw: boom")}
    )
    result = run_check(spec, broken, params)
    assert result.passed is False and "boom" in result.evidence
    odd = CheckState(files={}, assets={}, probes={probe: ProbeResult("yes")})
    assert "expected true/false" in run_check(spec, odd, params).evidence
    good = CheckState(
        files={}, assets={}, probes={probe: ProbeResult({"success": True, "message": "ok"})}
    )
    assert run_check(spec, good, params).passed is True
