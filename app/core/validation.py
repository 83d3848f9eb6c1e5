"""YAML files validated by pydantic models, with errors that name the file and the field.

Task files (`app.tasks.loader`), suite files (`app.batch.suite`), VM image recipes
(`app.vmimages.recipes`) and reference scripts (`app.agents.scripted`) report each
problem on a line of its own, `FILE: field.path: message`, e.g.
``suite.yaml: repeats: Input should be a valid integer`` or
``vm_images/images.yaml: images.gimp.memory_mib: Input should be greater than or
equal to 256``. Task and suite files are what a run is told to do, so their errors
are `TaskError`s (the default); the other formats raise their own subsystem's error.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from app.core.errors import DeskLoopError, TaskError

Model = TypeVar("Model", bound=BaseModel)


class StrictModel(BaseModel):
    """A file format's model: an unknown key is an error (a typo must not silently
    become a default) and a loaded value never changes."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def read_yaml(source: Path, what: str, error: type[DeskLoopError] = TaskError) -> tuple[Any, bytes]:
    """The parsed YAML document in `source` and the file's bytes (for a hash).

    Raises:
        error: unreadable file, or a YAML syntax error with its line and column.
    """
    try:
        data = source.read_bytes()
    except OSError as exc:
        raise error(f"{source}: cannot read {what} file: {exc.strerror or exc}") from None
    try:
        return yaml.safe_load(data), data
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise error(f"{source}: YAML syntax error{where}: {problem}") from None


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
    exc: ValidationError,
    what: str,
    model: type[BaseModel] | None = None,
    hidden: Collection[str] = (),
) -> list[str]:
    """One `field.path: message` per error of `exc` (the message alone when it is about
    the whole document, as a model validator's own message may carry its path).

    `what` names the format (`task`, `suite`) for unknown keys; with the `model` that
    was validated, an unknown top-level key also gets the field it is likely a typo of
    (nested keys would need the path walked through unions of models). `hidden` are
    the tags of discriminated unions, which pydantic puts in the path before the
    member's own fields and which mean nothing to an author.
    """
    problems = []
    for err in exc.errors():
        # Validator functions add their own names ('function-after[...]') to the path.
        loc = tuple(
            p
            for p in err["loc"]
            if not (isinstance(p, str) and (p.startswith("function-") or p in hidden))
        )
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = f"unknown key (not part of the {what} format)"
            if len(loc) == 1 and model is not None:
                keys = [info.alias or name for name, info in model.model_fields.items()]
                msg += _did_you_mean(str(loc[0]), keys)
        elif err["type"] == "missing":
            msg = "required field is missing"
        elif err["type"] == "model_type":
            # Pydantic names the model class here, which means nothing to an author.
            msg = f"expected a mapping of fields, got {type(err['input']).__name__}"
        path = field_path(loc)
        problems.append(f"{path}: {msg}" if path else msg)
    return problems


def validate(
    model: type[Model],
    raw: Any,
    source: Path | str,
    what: str,
    *,
    error: type[DeskLoopError] = TaskError,
    context: Mapping[str, Any] | None = None,
    hidden: Collection[str] = (),
) -> Model:
    """`raw` (the document read from `source`) validated as `model`.

    Raises:
        error: one line per problem, each ``SOURCE: field.path: message``.
    """
    try:
        return model.model_validate(raw, context=dict(context or {}))
    except ValidationError as exc:
        problems = validation_problems(exc, what, model, hidden)
        raise error(located(source, problems)) from None


def located(source: Path | str, problems: Iterable[str]) -> str:
    """The problems of one file, each line naming the file."""
    return "\n".join(f"{source}: {problem}" for problem in problems)


def _did_you_mean(key: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""
