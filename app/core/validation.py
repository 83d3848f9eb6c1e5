"""YAML files validated by pydantic models, with errors that name the file and the field.

Task files (`app.tasks.loader`) and suite files (`app.batch.suite`) report each problem
on a line of its own, `FILE: field.path: message`, e.g.
``suite.yaml: repeats: Input should be a valid integer``. Both are what a run is told
to do, so their errors are `TaskError`s.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from app.core.errors import TaskError


def read_yaml(source: Path, what: str) -> tuple[Any, bytes]:
    """The parsed YAML document in `source` and the file's bytes (for a hash).

    Raises:
        TaskError: unreadable file, or a YAML syntax error with its line and column.
    """
    try:
        data = source.read_bytes()
    except OSError as exc:
        raise TaskError(f"{source}: cannot read {what} file: {exc.strerror or exc}") from None
    try:
        return yaml.safe_load(data), data
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise TaskError(f"{source}: YAML syntax error{where}: {problem}") from None


def field_path(loc: Sequence[int | str]) -> str:
    """`phases[1].trigger` for pydantic's ('phases', 1, 'trigger')."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def validation_problems(
    exc: ValidationError, what: str, model: type[BaseModel] | None = None
) -> list[str]:
    """One `field.path: message` per error of `exc`.

    `what` names the format (`task`, `suite`) for unknown keys; with the `model` that
    was validated, an unknown top-level key also gets the field it is likely a typo of
    (nested keys would need the path walked through unions of models).
    """
    problems = []
    for err in exc.errors():
        # Validator functions add their own names ('function-after[...]') to the path.
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = f"unknown key (not part of the {what} format)"
            if len(loc) == 1 and model is not None:
                keys = [info.alias or name for name, info in model.model_fields.items()]
                msg += _did_you_mean(str(loc[0]), keys)
        elif err["type"] == "missing":
            msg = "required field is missing"
        problems.append(f"{field_path(loc) or '<top>'}: {msg}")
    return problems


def located(source: Path | str, problems: Iterable[str]) -> str:
    """The problems of one file, each line naming the file."""
    return "\n".join(f"{source}: {problem}" for problem in problems)


def _did_you_mean(key: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""
