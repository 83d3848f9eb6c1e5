"""The evaluate tree of a task: checks combined with `all` / `any`, weights and flags.

Shape (YAML). A node is exactly one of:

```yaml
{all: [node, ...], weight: 1, required: true, label: "..."}   # every required child
{any: [node, ...], label: "..."}                              # at least one child
{check: NAME, weight: 1, required: true, label: "...", PARAM: VALUE, ...}   # a leaf
```

- `weight` (number > 0, default 1) is the node's share of its parent `all` group's
  partial credit. `required` (default true) says whether the node must pass for its
  parent `all` group to pass. `label` is a human name shown with the evidence.
- A leaf's other keys are the check's parameters, validated by the check's model
  (unknown keys rejected).
- `weight` and `required` mean something only for a child of an `all` group, so they
  are rejected on the root and on the children of an `any` group.

Semantics:

- a leaf passes when its check passes; its score is the check's score in [0, 1];
- an `all` group passes when every *required* child passes (a non-required child
  only changes the partial credit); its score is the weight-normalised mean of all
  its children's scores (required or not);
- an `any` group passes when at least one child passes; its score is the highest
  child score;
- a `judge` check without `counts: true` (app.checks.judge) is scored and reported
  but left out of its group's pass and score, as if it were not there; a group must
  have a child that decides;
- the task passes (R = 1) when the root passes; the partial credit is the root's
  score. Every score lies in [0, 1], and a tree whose checks all pass with full
  credit scores 1.

Each node has a path such as `evaluate.all[1].any[0]`; leaf results are keyed by
their leaf's path, and validation errors name the path of the offending field
(`evaluate.all[1].width`).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from app.checks.base import CheckParams, CheckResult
from app.checks.registry import LEAF_KEYS, CheckSpec, UnknownCheck, get_check
from app.core.errors import TaskError

Op = Literal["all", "any"]
_Context = Literal["root", "all", "any"]

_GROUP_KEYS = frozenset({"all", "any", "weight", "required", "label"})


class TreeError(TaskError):
    """An evaluate tree is malformed; `field_path` names the offending field."""

    def __init__(self, field_path: str, message: str) -> None:
        super().__init__(f"{field_path}: {message}")
        self.field_path = field_path
        self.detail = message


@dataclass(frozen=True)
class CheckLeaf:
    path: str
    spec: CheckSpec[Any]
    params: CheckParams
    weight: float
    required: bool
    label: str | None


@dataclass(frozen=True)
class CheckGroup:
    path: str
    op: Op
    children: tuple[EvalNode, ...]
    weight: float
    required: bool
    label: str | None


EvalNode = CheckLeaf | CheckGroup


@dataclass(frozen=True)
class LeafOutcome:
    """One leaf's result in the context of the tree."""

    path: str
    check: str
    label: str | None
    required: bool
    weight: float
    result: CheckResult


@dataclass(frozen=True)
class TreeResult:
    passed: bool
    score: float
    leaves: list[LeafOutcome]


# --- parsing ----------------------------------------------------------------------


def parse_tree(raw: object, path: str = "evaluate") -> EvalNode:
    """Validate a raw (YAML-loaded) evaluate tree; TreeError names the first bad field."""
    return _parse(raw, path, "root")


def _parse(raw: object, path: str, context: _Context) -> EvalNode:
    if not isinstance(raw, Mapping):
        raise TreeError(
            path, f"expected a mapping with one of 'all', 'any' or 'check', got {_kind(raw)}"
        )
    for key in raw:
        if not isinstance(key, str):
            raise TreeError(path, f"keys must be strings, got {key!r}")
    node: Mapping[str, object] = raw
    kinds = [k for k in ("all", "any", "check") if k in node]
    if not kinds:
        raise TreeError(
            path,
            f"expected exactly one of 'all', 'any' or 'check', got keys {sorted(node) or 'none'}",
        )
    if len(kinds) > 1:
        raise TreeError(
            path, f"has both {kinds[0]!r} and {kinds[1]!r}; a node is exactly one of them"
        )
    weight, required, label = _common(node, path, context)
    if kinds[0] == "check":
        leaf = _parse_leaf(node, path, weight, required, label)
        if context == "root" and not _decides(leaf):
            raise TreeError(
                f"{path}.counts",
                "a judge that does not count decides nothing, and here it is the whole "
                "tree; add a check that decides, or set counts: true",
            )
        return leaf
    op: Op = "all" if kinds[0] == "all" else "any"
    for key in node:
        if key not in _GROUP_KEYS:
            raise TreeError(
                f"{path}.{key}",
                f"unknown key in an {op!r} group{_did_you_mean(key, _GROUP_KEYS)}; "
                "a group takes all/any, weight, required, label",
            )
    children = node[op]
    if not isinstance(children, list) or not children:
        raise TreeError(
            f"{path}.{op}", f"expected a non-empty list of nodes, got {_kind(children)}"
        )
    parsed = tuple(_parse(child, f"{path}.{op}[{i}]", op) for i, child in enumerate(children))
    if not any(_decides(child) for child in parsed):
        raise TreeError(
            f"{path}.{op}",
            "every check here is a judge that does not count (counts: false), so the group "
            "decides nothing; add a check that decides, or give a judge counts: true",
        )
    return CheckGroup(
        path=path, op=op, children=parsed, weight=weight, required=required, label=label
    )


def _common(
    node: Mapping[str, object], path: str, context: _Context
) -> tuple[float, bool, str | None]:
    if context != "all":
        # Only an `all` group combines children by weight and by required-ness; under
        # `any` (max score, one pass is enough) or at the root they would do nothing.
        where = "the root" if context == "root" else "a child of an 'any' group"
        for key in ("weight", "required"):
            if key in node:
                raise TreeError(f"{path}.{key}", f"{key!r} has no effect on {where}; remove it")
    weight_raw = node.get("weight", 1.0)
    if (
        isinstance(weight_raw, bool)
        or not isinstance(weight_raw, int | float)
        or not math.isfinite(weight_raw)
        or weight_raw <= 0
    ):
        raise TreeError(f"{path}.weight", f"expected a number > 0, got {weight_raw!r}")
    required = node.get("required", True)
    if not isinstance(required, bool):
        raise TreeError(f"{path}.required", f"expected true or false, got {required!r}")
    label = node.get("label")
    if label is not None and (not isinstance(label, str) or not label.strip()):
        raise TreeError(f"{path}.label", f"expected a non-empty string, got {label!r}")
    return float(weight_raw), required, label


def _parse_leaf(
    node: Mapping[str, object], path: str, weight: float, required: bool, label: str | None
) -> CheckLeaf:
    name = node["check"]
    if not isinstance(name, str):
        raise TreeError(f"{path}.check", f"expected a check name, got {_kind(name)}")
    try:
        spec = get_check(name)
    except UnknownCheck as exc:
        raise TreeError(f"{path}.check", exc.message) from None
    raw_params = {k: v for k, v in node.items() if k not in LEAF_KEYS}
    try:
        params = spec.parse_params(raw_params)
    except ValidationError as exc:
        raise _param_error(exc, spec, path) from None
    return CheckLeaf(
        path=path, spec=spec, params=params, weight=weight, required=required, label=label
    )


def _param_error(exc: ValidationError, spec: CheckSpec[Any], path: str) -> TreeError:
    fields = list(spec.params.model_fields)
    problems: list[tuple[str, str]] = []
    for error in exc.errors():
        where = path + "".join(
            f"[{part}]" if isinstance(part, int) else f".{part}" for part in error["loc"]
        )
        kind = error["type"]
        if kind == "missing" and len(error["loc"]) == 1:
            message = f"{spec.name} needs this parameter"
        elif kind == "missing":
            message = "expected a value here (too few items?)"
        elif kind == "extra_forbidden":
            key = str(error["loc"][-1])
            message = (
                f"unknown parameter of {spec.name}{_did_you_mean(key, [*fields, *LEAF_KEYS])}; "
                f"it takes {', '.join(fields)} (and weight, required, label)"
            )
        else:
            message = error["msg"].removeprefix("Value error, ")
            # Our own validators (value_error) already quote the input.
            if error["loc"] and kind != "value_error":
                message += f" (got {error['input']!r})"
        problems.append((where, message))
    first_path, first_message = problems[0]
    more = "".join(f"; also {p}: {m}" for p, m in problems[1:])
    return TreeError(first_path, first_message + more)


def _did_you_mean(key: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _kind(value: object) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    return f"{type(value).__name__} {value!r}"


# --- walking and scoring ----------------------------------------------------------


def _decides(node: EvalNode) -> bool:
    """Whether a node counts toward its parent's pass/fail and credit: every group (a
    parsed group has a child that decides) and every leaf but a judge that does not
    count (app.checks.judge), which is scored and reported beside the others."""
    return node.params.decides if isinstance(node, CheckLeaf) else True


def leaves(node: EvalNode) -> Iterator[CheckLeaf]:
    """Every leaf under `node`, depth first, in file order."""
    if isinstance(node, CheckLeaf):
        yield node
        return
    for child in node.children:
        yield from leaves(child)


def tree_files(node: EvalNode) -> list[str]:
    """Every guest path the tree's checks read, each once, in file order."""
    return list(dict.fromkeys(p for leaf in leaves(node) for p in leaf.spec.files(leaf.params)))


def tree_assets(node: EvalNode) -> list[str]:
    """Every task-folder path the tree's checks read, each once, in file order."""
    return list(dict.fromkeys(p for leaf in leaves(node) for p in leaf.spec.assets(leaf.params)))


def evaluate(node: EvalNode, results: Mapping[str, CheckResult]) -> TreeResult:
    """Combine leaf results (keyed by leaf path) into the task's pass and score.

    A leaf with no entry in `results` counts as failed with a "not run" reason.
    """
    outcomes: list[LeafOutcome] = []
    ok, score = _evaluate(node, results, outcomes)
    return TreeResult(passed=ok, score=score, leaves=outcomes)


def _evaluate(
    node: EvalNode, results: Mapping[str, CheckResult], out: list[LeafOutcome]
) -> tuple[bool, float]:
    if isinstance(node, CheckLeaf):
        result = results.get(node.path)
        if result is None:
            result = CheckResult(False, 0.0, f"{node.spec.name} at {node.path} was not run")
        out.append(
            LeafOutcome(
                path=node.path,
                check=node.spec.name,
                label=node.label,
                required=node.required,
                weight=node.weight,
                result=result,
            )
        )
        return result.passed, result.score
    evaluated = [(child, *_evaluate(child, results, out)) for child in node.children]
    # Scored (its outcome is in `out`) but left out of the group's pass and credit.
    children = [c for c in evaluated if _decides(c[0])]
    if node.op == "any":
        return any(ok for _, ok, _ in children), max(s for _, _, s in children)
    total = sum(child.weight for child, _, _ in children)
    score = sum(child.weight * s for child, _, s in children) / total
    ok = all(ok for child, ok, _ in children if child.required)
    # Rounding in the weighted mean can land a hair outside [0, 1].
    return ok, min(1.0, max(0.0, score))
