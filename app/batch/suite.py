"""What a batch runs: a suite file (`Suite`, `load_suite`) and the tasks its references
name (`resolve_tasks`).

A suite file is YAML validated like a task file: unknown keys are refused, and every
problem is a line naming the file and the field (`app.core.validation`).
"""

from __future__ import annotations

import glob
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from app.agents.families import ComputerTool, Convention, Family, TextTurn
from app.agents.spec import parse_agent_spec
from app.core.errors import AgentError, TaskError
from app.core.validation import located, read_yaml, validation_problems
from app.tasks.loader import TASK_SUFFIXES, find_task, load_task, task_files
from app.tasks.model import Task

_GLOB_CHARS = "*?["


class EndpointSettings(BaseModel):
    """A suite's model endpoint: what `--model`, `--adapter`, `--base-url`,
    `--api-key-env`, `--coords`, `--computer-tool` and `--text-turn` say on the command
    line (which override it)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    model: str | None = None
    adapter: Family | None = None
    """The model family's action format (docs/agents.md)."""
    base_url: str | None = None
    api_key_env: str | None = None
    """The environment variable holding the key (never the key itself)."""
    coords: Convention | None = None
    computer_tool: ComputerTool | None = None
    """The computer tool instead of the format table's (docs/agents.md#tool-versions)."""
    text_turn: TextTurn | None = None
    """What a text-only turn of an anthropic or openai-cua model is (`--text-turn`)."""


class Suite(BaseModel):
    """What to run: task references (ids, files, folders, globs) × agents × repeats."""

    # Strict: `repeats: "2"` or `tasks: [3]` is a mistake in the file, not a value.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    tasks: list[str] = Field(min_length=1)
    """Task ids, task files, folders of tasks or globs; paths are relative to the
    suite file's folder."""
    agents: list[str] = Field(min_length=1)
    """Agent specs, as `--agent` takes them (reference, null, scripted:FILE, openai:M,
    ADAPTER:M)."""
    repeats: int = Field(default=1, ge=1)
    """Runs of each (task, agent)."""
    agent_timeout: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Seconds each call of a model agent to its endpoint may take in all (its
    `deadline`); `--agent-timeout` overrides it; None: the agent's default."""
    endpoint: EndpointSettings | None = None
    """The model agents' endpoint, model and adapter; None: the command line's."""

    @field_validator("agents", mode="before")
    @classmethod
    def _bare_null(cls, value: Any) -> Any:
        # YAML reads a bare `null` as nothing; in an agent list it can only mean the
        # null agent.
        if isinstance(value, list):
            return ["null" if agent is None else agent for agent in value]
        return value


def load_suite(path: Path | str) -> Suite:
    """A suite file: YAML with `tasks:` (list), `agents:` (list), `repeats:` (int),
    `agent_timeout:` (seconds).

    Raises:
        TaskError: unreadable file, YAML syntax error, or invalid fields — one line per
            problem, each naming the file and the field.
    """
    where = Path(path)
    raw, _ = read_yaml(where, "suite")
    if not isinstance(raw, dict):
        raise TaskError(f"{where}: a suite is a mapping with tasks, agents, repeats")
    try:
        suite = Suite.model_validate(raw)
    except ValidationError as exc:
        raise TaskError(located(where, validation_problems(exc, "suite", Suite))) from None
    for index, agent in enumerate(suite.agents):
        # Parsed here so that a bad spec names its place in the file; the batch parses
        # the same strings again for each slot (they are what its records name).
        try:
            parse_agent_spec(agent, f"agents[{index}]")
        except AgentError as exc:
            raise TaskError(f"{where}: {exc}") from None
    # Task references in a suite file are relative to the file's folder.
    base = where.parent
    resolved = [
        str(base / ref) if not Path(ref).is_absolute() and _looks_like_path(ref) else ref
        for ref in suite.tasks
    ]
    return suite.model_copy(update={"tasks": resolved})


def _looks_like_path(ref: str) -> bool:
    return "/" in ref or ref.endswith(TASK_SUFFIXES) or any(c in ref for c in _GLOB_CHARS)


def resolve_tasks(refs: Sequence[str], tasks_dir: Path | str) -> list[Task]:
    """Tasks for references: a glob, a task file, a folder of tasks, or an id."""
    tasks: list[Task] = []
    seen: set[str] = set()
    for ref in refs:
        if any(c in ref for c in _GLOB_CHARS):
            paths = sorted(Path(p) for p in glob.glob(ref, recursive=True))
            paths = [p for p in paths if p.suffix in TASK_SUFFIXES and p.is_file()]
            if not paths:
                raise TaskError(f"task pattern {ref!r} matches no task file")
            found = [load_task(p) for p in paths]
        elif Path(ref).is_dir():
            found = [load_task(p) for p in task_files(ref)]
        else:
            found = [find_task(ref, [tasks_dir])]
        for task in found:
            if task.id not in seen:
                seen.add(task.id)
                tasks.append(task)
    return tasks
