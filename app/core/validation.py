"""YAML files validated by pydantic models, with errors that name the file and the field.

Task files (`app.tasks.loader`), suite files (`app.batch.suite`), VM image recipes
(`app.vmimages.recipes`) and reference scripts (`app.agents.reference_script`) report each
problem on a line of its own, `FILE: field.path: message`, e.g.
``suite.yaml: repeats: Input should be a valid integer`` or
``vm_images/images.yaml: images.gimp.memory_mib: Input should be greater than or
equal to 256``. Task and suite files are what a run is told to do, so their errors
are `TaskError`s (the default); the other formats raise their own subsystem's error.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import stat
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


# Limits that keep a hostile file from turning the loader against the lab. The largest
# shipped file (a reference script) is 17 KB and the deepest nests 9 levels.
MAX_YAML_BYTES = 1 << 20
MAX_YAML_DEPTH = 32


class _Refused(yaml.MarkedYAMLError):
    """A YAML construct DeskLoop's files may not use (an alias, a duplicate key...)."""


class _GuardedLoader(yaml.SafeLoader):
    """PyYAML's safe loader without what a hostile file could abuse: anchors and
    aliases (a few hundred bytes of nested aliases expand to gigabytes), duplicate keys
    (YAML keeps the last one silently: a second `evaluate:` replaced a task's checks)
    and nesting past MAX_YAML_DEPTH (deep trees end in a RecursionError further on)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise _Refused(
                problem="anchors and aliases (&name, *name) are not allowed; write the value out",
                problem_mark=event.start_mark,
            )
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise _Refused(
                    problem=f"nested more than {MAX_YAML_DEPTH} levels deep",
                    problem_mark=event.start_mark,
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: the base class says so
                break
            if first is not None:
                raise _Refused(
                    problem=f"duplicate key {key!r} (first at line {first.start_mark.line + 1})",
                    problem_mark=key_node.start_mark,
                )
            seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


def _read_regular_file(source: Path) -> bytes:
    """The bytes of `source`, which must be a regular file of at most MAX_YAML_BYTES.

    Opened without blocking and checked before it is read: a FIFO named as a task once
    hung `run` for ever."""
    fd = os.open(source, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("not a regular file")
        if info.st_size > MAX_YAML_BYTES:
            raise ValueError(f"{info.st_size} bytes; the limit is {MAX_YAML_BYTES}")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as file:
            data = file.read(MAX_YAML_BYTES + 1)
        if len(data) > MAX_YAML_BYTES:  # it grew after the check
            raise ValueError(f"more than {MAX_YAML_BYTES} bytes")
        return data
    finally:
        os.close(fd)


def read_yaml(source: Path, what: str, error: type[DeskLoopError] = TaskError) -> tuple[Any, bytes]:
    """The parsed YAML document in `source` and the file's bytes (for a hash).

    Raises:
        error: as `read_yaml_lines`.
    """
    raw, data, _ = read_yaml_lines(source, what, error)
    return raw, data


Lines = Mapping[str, int]
"""Where each field of a document starts: its field path (`phases[1].trigger`, as
`field_path` writes it; '' is the document) to its line, counted from 1. A mapping
entry's line is its key's."""


def read_yaml_lines(
    source: Path, what: str, error: type[DeskLoopError] = TaskError
) -> tuple[Any, bytes, Lines]:
    """The parsed YAML document in `source`, the file's bytes (for a hash) and the line
    of every field (for errors that name it).

    Raises:
        error: an unreadable, non-regular or too large file; text that is not UTF-8; a
            YAML syntax error; an anchor, alias, duplicate key or too deep nesting —
            each with its line and column where there is one.
    """
    data = read_file_bytes(source, what, error)
    raw, lines = parse_yaml_lines(source, data, error)
    return raw, data, lines


def read_file_bytes(source: Path, what: str, error: type[DeskLoopError] = TaskError) -> bytes:
    """The bytes of the YAML file `source`, read as `read_yaml_lines` reads them (a
    regular file of at most MAX_YAML_BYTES); the task cache hashes them before parsing.

    Raises:
        error: an unreadable, non-regular or too large file.
    """
    try:
        return _read_regular_file(source)
    except OSError as exc:
        raise error(f"{source}: cannot read {what} file: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise error(f"{source}: cannot read {what} file: {exc}") from None


def parse_yaml_lines(
    source: Path, data: bytes, error: type[DeskLoopError] = TaskError
) -> tuple[Any, Lines]:
    """The YAML document in `data` (the bytes of `source`) and the line of every field.

    Raises:
        error: as `read_yaml_lines`, for everything after the file was read.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise error(f"{source}: line {line}: not UTF-8 text ({exc.reason})") from None
    try:
        return _load(text)
    except _Refused as exc:
        raise error(f"{source}: YAML error{_where(exc)}: {exc.problem}") from None
    except yaml.reader.ReaderError as exc:
        # A control character such as NUL: PyYAML's own message spans two lines and
        # gives an offset, not a line.
        line = text[: exc.position].count("\n") + 1
        code = exc.character if isinstance(exc.character, int) else ord(exc.character)
        raise error(
            f"{source}: line {line}: character {code:#06x} is not allowed "
            "in YAML (control characters are refused)"
        ) from None
    except yaml.YAMLError as exc:
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
        raise error(f"{source}: YAML syntax error{_where(exc)}: {problem}") from None


def _load(text: str) -> tuple[Any, dict[str, int]]:
    loader = _GuardedLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}
        lines: dict[str, int] = {}
        _mark_lines(node, (), lines)
        return loader.construct_document(node), lines
    finally:
        loader.dispose()


def _mark_lines(node: yaml.Node, loc: tuple[int | str, ...], lines: dict[str, int]) -> None:
    # Recursion is bounded: the composer refused anything deeper than MAX_YAML_DEPTH.
    lines.setdefault(field_path(loc), node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                here = (*loc, key_node.value)
                lines.setdefault(field_path(here), key_node.start_mark.line + 1)
                _mark_lines(value_node, here, lines)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _mark_lines(item, (*loc, i), lines)


def prefixed(lines: Lines, prefix: str) -> dict[str, int]:
    """`lines` of a document that the model sees under `prefix` (a script's bare list of
    steps is validated as `steps:`)."""
    out = {}
    for path, line in lines.items():
        if not path:
            out[prefix] = out[""] = line
        else:
            out[prefix + path if path.startswith("[") else f"{prefix}.{path}"] = line
    return out


_LAST_PART = re.compile(r"(\.[^.\[]*|\[\d+\])$")
_A_PATH = re.compile(r"^[\w\-]+(\[\d+\])*(\.[\w\-]+(\[\d+\])*)*$|^(\[\d+\])+$")


def line_of(lines: Lines, problem: str) -> int | None:
    """The line of the field a `field.path: message` problem names: the field's own,
    else that of the nearest enclosing field the file has (a missing key is reported
    at its mapping), else the document's. A message that goes on with a path inside
    the field (`phases[0].trigger: any[1].step_count: ...`) is followed into it."""
    parts = problem.split(": ")
    path = parts[0] if len(parts) > 1 and _A_PATH.match(parts[0]) else ""
    if path and len(parts) > 2 and _A_PATH.match(parts[1]):
        inner = parts[1]
        path += inner if inner.startswith("[") else f".{inner}"
    while path and path not in lines:
        shorter = _LAST_PART.sub("", path)
        path = shorter if shorter != path else ""
    return lines.get(path)


def _where(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    return f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""


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
    lines: Lines | None = None,
) -> Model:
    """`raw` (the document read from `source`) validated as `model`.

    Raises:
        error: one line per problem, each ``SOURCE: field.path: message``.
    """
    try:
        return model.model_validate(raw, context=dict(context or {}))
    except ValidationError as exc:
        problems = validation_problems(exc, what, model, hidden)
        raise error(located(source, problems, lines)) from None


def located(source: Path | str, problems: Iterable[str], lines: Lines | None = None) -> str:
    """The problems of one file, each line naming the file, and with `lines` (from
    `read_yaml_lines`) the line of its field: ``FILE:LINE: field.path: message``."""
    out = []
    for problem in problems:
        line = line_of(lines, problem) if lines else None
        out.append(f"{source}:{line}: {problem}" if line else f"{source}: {problem}")
    return "\n".join(out)


def _did_you_mean(key: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def positive_seconds(text: str) -> float:
    """A number of seconds as a person types it (`--agent-timeout 90`, the TUI's field):
    positive and finite.

    Raises:
        ValueError: anything else, worded for a message that names the setting first.
    """
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"must be a positive number of seconds, not {text!r}")
    return seconds
