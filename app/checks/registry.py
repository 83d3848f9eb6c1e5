"""Checks by name: what parameters each takes and what state it needs.

A check is a plain function `(CheckState, Params) -> CheckResult` registered with
`@register(name, Params, files=(...), assets=(...), probes=(...))`. `files` names
the params fields that hold guest paths (scoring fetches them), `assets` the
fields that hold task-folder paths (scoring reads them), `probes` pairs of
(probe kind, field holding a guest path): state made by a tool run in the guest at
scoring time (app/probes/ implements each kind; a test checks none is missing).
The task loader uses this registry to validate a task's check names and
parameters without touching a desktop.
"""

from __future__ import annotations

import difflib
import inspect
import os
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from app.checks.base import CheckParams, CheckResult, CheckState, Probe, failed
from app.core.errors import DeskLoopError, TaskError

P = TypeVar("P", bound=CheckParams)
CheckFn = Callable[[CheckState, P], CheckResult]

LEAF_KEYS = frozenset({"check", "weight", "required", "label"})
"""Keys a check-tree leaf uses for itself; no check parameter may take these names."""


class UnknownCheck(TaskError):
    """A task names a check that is not registered."""

    def __init__(self, name: str, known: list[str]) -> None:
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
        hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
        super().__init__(f"unknown check {name!r}; {hint}known checks: {', '.join(known)}")
        self.name = name
        self.known = known


class CheckDefinitionError(DeskLoopError):
    """A check was registered wrongly (a programming error, found at import time)."""

    title = "Check definition error"
    kind = "check"


@dataclass(frozen=True)
class CheckSpec(Generic[P]):
    """A registered check: its name, parameter model, function and documentation."""

    name: str
    params: type[P]
    run: Callable[[CheckState, P], CheckResult]
    file_fields: tuple[str, ...]
    asset_fields: tuple[str, ...]
    doc: str
    probe_fields: tuple[tuple[str, str], ...] = ()
    """(probe kind, params field holding the guest path) pairs."""

    def files(self, params: CheckParams) -> list[str]:
        """Guest paths scoring must fetch for this check, in field order (a field may
        hold a tuple of paths: each, in order)."""
        paths: list[str] = []
        for name in self.file_fields:
            value = getattr(params, name)
            if isinstance(value, tuple):
                paths.extend(str(v) for v in value)
            else:
                paths.append(str(value))
        return paths

    def assets(self, params: CheckParams) -> list[str]:
        """Task-folder paths scoring must read for this check, in field order."""
        return [str(getattr(params, name)) for name in self.asset_fields]

    def probes(self, params: CheckParams) -> list[Probe]:
        """Probes scoring must run in the guest for this check, in declaration order."""
        return [Probe(kind, str(getattr(params, name))) for kind, name in self.probe_fields]

    def parse_params(self, raw: Mapping[str, object]) -> P:
        """Validate raw parameters (pydantic.ValidationError on bad input)."""
        return self.params.model_validate(dict(raw))

    def __reduce__(self) -> tuple[Callable[[str], CheckSpec[Any]], tuple[str]]:
        # Pickled by name (the task cache stores parsed trees): a loaded tree points at
        # the registered spec itself, never a copy of it.
        return get_check, (self.name,)


REGISTRY: dict[str, CheckSpec[Any]] = {}


def register(
    name: str,
    params: type[P],
    *,
    files: tuple[str, ...] = (),
    assets: tuple[str, ...] = (),
    probes: tuple[tuple[str, str], ...] = (),
) -> Callable[[CheckFn[P]], CheckFn[P]]:
    """Register the decorated function as check `name`; its docstring is the check's doc."""

    def decorate(fn: CheckFn[P]) -> CheckFn[P]:
        where = f"check {name!r} ({fn.__module__}.{fn.__qualname__})"
        if name in REGISTRY:
            raise CheckDefinitionError(f"{where}: the name is already registered")
        if not name.isidentifier() or name != name.lower():
            raise CheckDefinitionError(f"{where}: names are lowercase identifiers")
        fields = params.model_fields
        for field in (*files, *assets, *(name for _, name in probes)):
            if field not in fields:
                raise CheckDefinitionError(f"{where}: {field!r} is not a field of {params}")
        clash = LEAF_KEYS & fields.keys()
        if clash:
            raise CheckDefinitionError(
                f"{where}: parameter names {sorted(clash)} are reserved for tree leaves"
            )
        undocumented = [f for f, info in fields.items() if not info.description]
        if undocumented:
            raise CheckDefinitionError(f"{where}: undocumented parameters {undocumented}")
        doc = inspect.getdoc(fn)
        if not doc:
            raise CheckDefinitionError(f"{where}: a check needs a docstring")
        REGISTRY[name] = CheckSpec(
            name=name,
            params=params,
            run=fn,
            file_fields=files,
            asset_fields=assets,
            doc=doc,
            probe_fields=probes,
        )
        return fn

    return decorate


def get_check(name: str) -> CheckSpec[Any]:
    """The check registered as `name`; UnknownCheck (with suggestions) otherwise."""
    spec = REGISTRY.get(name)
    if spec is None:
        raise UnknownCheck(name, sorted(REGISTRY))
    return spec


def run_check(spec: CheckSpec[P], state: CheckState, params: P) -> CheckResult:
    """Run one check; a check that raises becomes a failed result, never a dead scorer."""
    try:
        result = spec.run(state, params)
    except Exception as exc:  # a bug in one check must not lose the other checks' scores
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return failed(
            f"check crashed: {type(exc).__name__}: {exc} "
            f"(in {spec.name}, {os.path.basename(where.filename)}:{where.lineno})"
        )
    if not isinstance(result, CheckResult):
        return failed(f"check crashed: {spec.name} returned {type(result).__name__}")
    return result
