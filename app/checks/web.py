"""Checks of a web desktop's page, through the page contract (app/desktops/web/kiosk.py).

The page's own verdict (`window.evaluateTask(id, returned)`) and its named state
(`window.getState()`) are gathered by probes at scoring time over the browser's
private DevTools channel; these checks read the gathered JSON only.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field

from app.checks.base import CheckParams, CheckResult, CheckState, Probe, failed, verdict
from app.checks.registry import register

_EVIDENCE_LIMIT = 200


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= _EVIDENCE_LIMIT else text[: _EVIDENCE_LIMIT - 1] + "…"


class WebEvaluateParams(CheckParams):
    task: str = Field(min_length=1)
    """The page's task id, as its `getTasks()` lists it (e.g. 'approve-review-card')."""


def page_verdict(value: Any) -> tuple[bool, str] | None:
    """A page's `evaluateTask` value as (success, the page's words); None when it is
    neither a boolean nor an object with a boolean `success` (ScaleWoB's shapes)."""
    if isinstance(value, bool):
        return value, ""
    if isinstance(value, dict) and isinstance(value.get("success"), bool):
        words = value.get("message") or value.get("reason") or ""
        return value["success"], str(words)
    return None


@register("web_evaluate", WebEvaluateParams, probes=(("web_evaluate", "task"),))
def web_evaluate(state: CheckState, params: WebEvaluateParams) -> CheckResult:
    """Passes when the page's `window.evaluateTask(task, returned)` says the task
    succeeded (true, or an object whose `success` is true). `returned` is the answer
    the agent's DONE carried, or null. The page judges its own state; DeskLoop calls it
    over the browser's private DevTools channel after the episode."""
    result = state.probe(Probe("web_evaluate", params.task))
    if result.error is not None:
        return failed(f"evaluateTask({params.task!r}) could not run: {result.error}")
    found = page_verdict(result.data)
    if found is None:
        return failed(
            f"evaluateTask({params.task!r}) returned {_short(result.data)}: expected true/"
            "false or an object with a boolean 'success'"
        )
    success, words = found
    said = f": {words}" if words else ""
    return verdict(
        success, f"the page says task {params.task!r} {'succeeded' if success else 'failed'}{said}"
    )


class WebStateParams(CheckParams):
    name: str = Field(min_length=1)
    """A name in the object the page's `window.getState()` returns (e.g. 'cart.count':
    dots reach into nested objects; a key holding dots, such as 'clip.mp4', is matched
    whole first)."""
    equals: Any
    """The value it must equal (compared as JSON: 3 and 3.0 are equal, '3' is not)."""


@register("web_state_equals", WebStateParams, probes=(("web_state", "name"),))
def web_state_equals(state: CheckState, params: WebStateParams) -> CheckResult:
    """Passes when the named value of the page's `window.getState()` equals `equals`.
    For state the page's own `evaluateTask` does not judge (a count, a chosen item)."""
    result = state.probe(Probe("web_state", params.name))
    if result.error is not None:
        return failed(f"page state {params.name!r} could not be read: {result.error}")
    value = result.data
    same = value == params.equals and isinstance(value, bool) == isinstance(params.equals, bool)
    return verdict(
        same, f"page state {params.name} = {_short(value)}, expected {_short(params.equals)}"
    )
