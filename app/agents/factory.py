"""Build an agent from its command-line spec: reference | null | scripted:FILE."""

from __future__ import annotations

from pathlib import Path

from app.agents.base import Agent
from app.agents.null import NullAgent
from app.agents.scripted import ScriptedAgent
from app.errors import AgentError
from app.tasks.loader import resolve_asset
from app.tasks.model import Task

AGENT_SPECS = "reference | null | scripted:FILE"


def make_agent(spec: str, task: Task) -> Agent:
    """The agent named by `spec` for `task`.

    Raises:
        AgentError: unknown spec, a task without a reference, or an invalid script.
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
    raise AgentError(f"unknown agent {spec!r}; expected {AGENT_SPECS}")
