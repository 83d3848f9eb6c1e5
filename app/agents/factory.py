"""Build an agent from its command-line spec: reference | null | scripted:FILE | a model.

Model agents: `openai[:MODEL]` and `model[:MODEL]` (the adapter the config names,
DeskLoop's own tools by default), or `ADAPTER:MODEL` naming the adapter
(`deskloop`, `pyautogui`, `uitars`, `anthropic`, `openai-cua`, `qwen`).
"""

from __future__ import annotations

from dataclasses import fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.agents.base import Agent
from app.agents.null import NullAgent
from app.agents.scripted import ScriptedAgent
from app.core.errors import AgentError
from app.tasks.loader import resolve_asset
from app.tasks.model import Task

if TYPE_CHECKING:
    from app.agents.adapters import AdapterConfig
    from app.agents.openai import OpenAIConfig
    from app.store import Store

    ModelConfig = OpenAIConfig | AdapterConfig

AGENT_SPECS = "reference | null | scripted:FILE | replay:EPISODE | openai[:MODEL] | ADAPTER:MODEL"
# The adapters' names, written out so that the factory's import stays light;
# tests/test_adapters.py holds them equal to app.agents.adapters.ADAPTERS.
ADAPTER_NAMES = ("deskloop", "pyautogui", "uitars", "anthropic", "openai-cua", "qwen")


def model_spec(spec: str) -> tuple[str | None, str] | None:
    """(adapter, model) of a model agent's spec; adapter None: as the config says,
    model '' : the config's. None: not a model agent's spec."""
    head, _, model = spec.partition(":")
    if head in ("openai", "model"):
        return None, model
    if head in ADAPTER_NAMES:
        return head, model
    return None


def make_agent(
    spec: str,
    task: Task,
    openai: ModelConfig | None = None,
    *,
    agent_timeout: float | None = None,
    store: Store | None = None,
) -> Agent:
    """The agent named by `spec` for `task`.

    `replay:EPISODE` replays an episode of `task` recorded in `store`
    (`app.agents.replay`).

    `openai` is the model agent's config (an `OpenAIConfig` for DeskLoop's own tools, an
    `AdapterConfig` for an adapter); a spec naming a model or an adapter overrides the
    config's, or needs no config at all. `agent_timeout`, when given, replaces its
    `deadline` (the TUI's field). Agents that call no endpoint ignore both.

    Raises:
        AgentError: unknown spec, a task without a reference, an invalid script, or
            a model agent without a model.
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
    if spec.startswith("replay:"):
        from app.agents.replay import ReplayAgent, recorded_steps

        number = spec.removeprefix("replay:")
        if not number.isdigit():
            raise AgentError(f"{spec}: replay takes an episode id, like replay:12")
        if store is None:
            raise AgentError(f"{spec}: a replay reads the store; start it with deskloop run")
        return ReplayAgent(int(number), recorded_steps(store, int(number), task))
    if spec.startswith("scripted:"):
        path = Path(spec.removeprefix("scripted:"))
        if not path.is_file():
            raise AgentError(f"scripted agent file {path} not found")
        return ScriptedAgent.from_file(path)
    parsed = model_spec(spec)
    if parsed is None:
        raise AgentError(f"unknown agent {spec!r}; expected {AGENT_SPECS}")
    adapter, model = parsed
    from app.agents.adapters import AdapterAgent, AdapterConfig
    from app.agents.openai import OpenAIAgent, OpenAIConfig

    configured = "deskloop" if not isinstance(openai, AdapterConfig) else openai.adapter
    adapter = adapter or configured
    if not (model or (openai is not None and openai.model)):
        raise AgentError(f"{spec}: a model name is required (--model M, or {adapter}:M)")
    if adapter == "deskloop":
        config = _convert(OpenAIConfig, openai, model=model or None)
        if agent_timeout is not None:
            config = replace(config, deadline=agent_timeout)
        return OpenAIAgent(config)
    from app.agents.adapters.config import family_base_url, family_key_env
    from app.agents.adapters.formats import TOOLS
    from app.endpoints.client import EndpointConfig

    changes: dict[str, Any] = {"adapter": adapter, "model": model or None}
    if isinstance(openai, AdapterConfig) and openai.adapter != adapter:
        # The other family's own endpoint and key variable are not this one's: back to
        # the defaults, which AdapterConfig makes this family's.
        if openai.base_url == family_base_url(openai.adapter):
            changes["base_url"] = EndpointConfig.base_url
        if openai.api_key_env == family_key_env(openai.adapter):
            changes["api_key_env"] = EndpointConfig.api_key_env
        if openai.computer_tool not in TOOLS.get(adapter, {}):
            # A computer tool chosen for the other family: this one takes the table's.
            openai = replace(openai, computer_tool=None)
    adapter_config = _convert(AdapterConfig, openai, **changes)
    if agent_timeout is not None:
        adapter_config = replace(adapter_config, deadline=agent_timeout)
    return AdapterAgent(adapter_config)


def endpoint_config(
    spec: str,
    *,
    adapter: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    api_key_env: str | None = None,
    computer_tool: str | None = None,
    text_turn: str | None = None,
) -> ModelConfig | None:
    """A model agent's config from the fields a person fills in (the TUI's start
    dialog): each empty one is the adapter's default (the format table's computer tool,
    text turns read as DONE).
    None when `spec` is no model agent's or no field is given (the spec alone then
    decides).

    Raises:
        AgentError: an unknown adapter, fields without a model anywhere, a computer
            tool the adapter does not have, or an unknown text-turn policy.
    """
    parsed = model_spec(spec)
    fields = (adapter, model, base_url, api_key_env, computer_tool, text_turn)
    if parsed is None or not any(fields):
        return None
    named, spec_model = parsed
    family = adapter or named or "deskloop"
    if family not in ADAPTER_NAMES:
        raise AgentError(f"unknown adapter {family!r}; known: {', '.join(ADAPTER_NAMES)}")
    name = model or spec_model
    if not name:
        raise AgentError(f"{spec}: a model name is required (the Model field, or {family}:M)")
    from app.agents.adapters import AdapterConfig
    from app.agents.openai import OpenAIConfig

    # An empty field is the family's default (AdapterConfig puts in the family's own).
    values = {"base_url": base_url, "api_key_env": api_key_env}
    given: dict[str, Any] = {k: v for k, v in values.items() if v}
    if family == "deskloop":
        if computer_tool or text_turn:
            raise AgentError(
                "the computer tool and the text-turn policy are the anthropic and "
                "openai-cua adapters': DeskLoop's tools are its own"
            )
        return OpenAIConfig(model=name, **given)
    if text_turn:
        given["text_turn"] = text_turn
    return AdapterConfig(model=name, adapter=family, computer_tool=computer_tool or None, **given)


def _convert(cls: Any, config: Any, **changes: Any) -> Any:
    """`config` as a `cls` (the fields both have), with `changes` (None: keep)."""
    values: dict[str, Any] = {}
    if config is not None:
        names = {f.name for f in fields(cls)}
        values = {f.name: getattr(config, f.name) for f in fields(config) if f.name in names}
    values.update({k: v for k, v in changes.items() if v is not None})
    return cls(**values)
