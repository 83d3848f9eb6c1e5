"""Build an agent from its command-line spec: reference | null | scripted:FILE | openai."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from app.agents.base import Agent
from app.agents.null import NullAgent
from app.agents.scripted import ScriptedAgent
from app.core.errors import AgentError
from app.tasks.loader import resolve_asset
from app.tasks.model import Task

if TYPE_CHECKING:
    from app.agents.openai import OpenAIConfig

AGENT_SPECS = "reference | null | scripted:FILE | openai | openai:MODEL"


def make_agent(
    spec: str,
    task: Task,
    openai: OpenAIConfig | None = None,
    *,
    agent_timeout: float | None = None,
) -> Agent:
    """The agent named by `spec` for `task`.

    `openai` is the `app.agents.openai.OpenAIConfig` for the `openai` spec
    (`openai:MODEL` overrides its model, or needs no config at all);
    `agent_timeout`, when given, replaces its `deadline` (the TUI's field). Agents that
    call no endpoint ignore it.

    Raises:
        AgentError: unknown spec, a task without a reference, an invalid script, or
            an openai spec without a model.
    """
    if spec == "null":
        return NullAgent()
    if spec == "reference":
        if task.reference is None:
            raise AgentError(f"{task.source}: task {task.id} has no reference solution")
        try:
            path = resolve_asset(task.folder, task.reference, "reference")
        except ValueError as exc:
            raise AgentError(f"{task.source}: {exc}") from None
        return ScriptedAgent.from_file(path, name="reference")
    if spec.startswith("scripted:"):
        path = Path(spec.removeprefix("scripted:"))
        if not path.is_file():
            raise AgentError(f"scripted agent file {path} not found")
        return ScriptedAgent.from_file(path)
    if spec == "openai" or spec.startswith("openai:"):
        from app.agents.openai import OpenAIAgent, OpenAIConfig

        model = spec.partition(":")[2]
        if openai is None:
            if not model:
                raise AgentError("openai agent: a model name is required (--model M)")
            openai = OpenAIConfig(model=model)
        elif model:
            openai = replace(openai, model=model)
        if agent_timeout is not None:
            openai = replace(openai, deadline=agent_timeout)
        return OpenAIAgent(openai)
    raise AgentError(f"unknown agent {spec!r}; expected {AGENT_SPECS}")
