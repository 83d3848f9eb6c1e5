"""Checks of the answer an agent returned with DONE (text or JSON).

Some tasks ask for a value, not a change: "how many cards are in progress?". The
agent's DONE then carries an answer; scoring hands it to these checks (and to a web
page's `evaluateTask` as its second argument). An episode that ended without a DONE
answer fails them, saying so.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field

from app.checks.base import CheckParams, CheckResult, CheckState, failed, passed, verdict
from app.checks.registry import register

_SHOWN = 120


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def _same(a: Any, b: Any) -> bool:
    """JSON equality that keeps true apart from 1 (Python's == does not)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


class AnswerEqualsParams(CheckParams):
    value: Any
    """The expected answer: text, or JSON (a number, a list, an object)."""
    ignore_case: bool = False
    """Compare text answers without regard to case."""
    trim: bool = True
    """Ignore spaces around a text answer (and around the expected text)."""


@register("answer_equals", AnswerEqualsParams)
def answer_equals(state: CheckState, params: AnswerEqualsParams) -> CheckResult:
    """Passes when the answer returned with DONE equals `value`. Text is compared as
    text (`trim`, `ignore_case`); anything else as JSON, so 3 equals 3.0 but not "3"
    nor true."""
    if state.answer is None:
        return failed(f"no answer was returned with DONE; expected {_show(params.value)}")
    got, want = state.answer, params.value
    if isinstance(got, str) and isinstance(want, str):
        if params.trim:
            got, want = got.strip(), want.strip()
        if params.ignore_case:
            got, want = got.casefold(), want.casefold()
        ok = got == want
    else:
        ok = _same(got, want)
    return verdict(ok, f"answer {_show(state.answer)}, expected {_show(params.value)}")


class AnswerSchemaParams(CheckParams):
    json_schema: dict[str, Any] | None = Field(default=None, alias="schema")
    """A JSON schema the answer must satisfy; left out, the task's `answer_schema`."""


@register("answer_matches_schema", AnswerSchemaParams)
def answer_matches_schema(state: CheckState, params: AnswerSchemaParams) -> CheckResult:
    """Passes when the answer returned with DONE satisfies a JSON schema: the check's
    own `schema`, or else the task's `answer_schema`."""
    schema = params.json_schema if params.json_schema is not None else state.answer_schema
    if schema is None:
        return failed("no schema: give the check a schema or the task an answer_schema")
    if state.answer is None:
        return failed("no answer was returned with DONE")
    # Imported where it scores (as the task model does where it loads): every command
    # that loads tasks imports this module, and jsonschema was 40 ms of their start.
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        validator = Draft202012Validator(schema)
        problems = sorted(validator.iter_errors(state.answer), key=lambda e: list(e.path))
    except SchemaError as exc:
        return failed(f"the schema is not a JSON schema: {exc.message}")
    if problems:
        where = "/".join(str(p) for p in problems[0].path) or "the answer"
        return failed(f"answer {_show(state.answer)}: {where}: {problems[0].message}")
    return passed(f"answer {_show(state.answer)} matches the schema")
