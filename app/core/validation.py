"""Validated YAML file formats: the base of their pydantic models, and one way to read
such a file and to turn its problems into ``FILE: field.path: what is wrong`` lines.

Task files, VM image recipes and reference scripts are pydantic models that reject
unknown keys. Their loaders share this module so an author reads the same kind of
message whichever file is wrong, e.g.
``vm_images/images.yaml: images.gimp.memory_mib: Input should be greater than or
equal to 256`` or ``tasks/gimp/x.yaml: phases[1].trigger: unknown trigger 'agent_dne'``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from app.core.errors import DeskLoopError

Model = TypeVar("Model", bound=BaseModel)


class StrictModel(BaseModel):
    """A file format's model: an unknown key is an error (a typo must not silently
    become a default) and a loaded value never changes."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def field_path(loc: tuple[int | str, ...], hidden: Collection[str] = ()) -> str:
    """``phases[1].trigger`` for pydantic's ``('phases', 1, 'trigger')``.

    Pydantic puts the names of validator functions (``function-after[...]``) into the
    location, and the tag of a discriminated union before the member's own fields;
    the first never means anything to an author, the tags in `hidden` neither.
    """
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.startswith("function-") or part in hidden:
            continue
        else:
            out += f".{part}" if out else part
    return out


def validation_problems(
    exc: ValidationError, format_name: str, hidden: Collection[str] = ()
) -> list[str]:
    """One ``field.path: problem`` per error of `exc` (just the problem when it is
    about the whole document); `format_name` completes "not part of the ... format"."""
    problems = []
    for err in exc.errors():
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = f"unknown key (not part of the {format_name} format)"
        elif err["type"] == "missing":
            msg = "required field is missing"
        elif err["type"] == "model_type":
            # Pydantic names the model class here, which means nothing to an author.
            msg = f"expected a mapping of fields, got {type(err['input']).__name__}"
        where = field_path(err["loc"], hidden)
        problems.append(f"{where}: {msg}" if where else msg)
    return problems


def validate_file(
    model: type[Model],
    raw: Any,
    source: Path | str,
    error: type[DeskLoopError],
    format_name: str,
    *,
    context: Mapping[str, Any] | None = None,
    hidden: Collection[str] = (),
) -> Model:
    """`raw` (a parsed document) validated as `model`, the file being `source`.

    Raises:
        error: one line per problem, each ``SOURCE: field.path: problem``.
    """
    try:
        return model.model_validate(raw, context=dict(context or {}))
    except ValidationError as exc:
        lines = validation_problems(exc, format_name, hidden)
        raise error("\n".join(f"{source}: {line}" for line in lines)) from None


def yaml_syntax_error(exc: yaml.YAMLError) -> str:
    """``YAML syntax error (line 3, column 7): <problem>``: where the parser stopped,
    counted from 1 as editors do."""
    mark = getattr(exc, "problem_mark", None)
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
    problem = getattr(exc, "problem", None) or str(exc)
    return f"YAML syntax error{where}: {problem}"


def read_yaml(path: Path, error: type[DeskLoopError], what: str) -> tuple[bytes, Any]:
    """The bytes of `path` and the YAML document in them.

    Raises:
        error: ``PATH: cannot read <what>: ...`` or ``PATH: YAML syntax error ...``.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise error(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    try:
        return data, yaml.safe_load(data)
    except yaml.YAMLError as exc:
        raise error(f"{path}: {yaml_syntax_error(exc)}") from None
