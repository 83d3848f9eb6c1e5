"""Build an agent for a task from its spec (`app.agents.spec`): reference | null |
scripted:FILE | replay:EPISODE | a model.

Model agents: `openai[:MODEL]` and `model[:MODEL]` (the family the config names,
DeskLoop's own tools by default), or `FAMILY:MODEL` naming the family
(`app.agents.families`). A person is no agent this module builds: one drives a
desktop, so `app.episode.launch` builds them with it.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from app.agents.base import Agent
from app.agents.families import FAMILIES, is_family
from app.agents.null import NullAgent
from app.agents.scripted import ScriptedAgent
from app.agents.spec import (
    AgentSpec,
    ModelSpec,
    NullSpec,
    PersonSpec,
    ReferenceSpec,
    ReplaySpec,
    ScriptedSpec,
    agent_spec_from_mapping,
    parse_agent_spec,
)
from app.core.errors import AgentError
from app.tasks.loader import resolve_asset
from app.tasks.model import Task

if TYPE_CHECKING:
    from app.agents.adapters import AdapterConfig, DeskLoopConfig, ModelConfig
    from app.store import Store


def make_agent(
    spec: AgentSpec | str,
    task: Task,
    openai: ModelConfig | None = None,
    *,
    agent_timeout: float | None = None,
    store: Store | None = None,
) -> Agent:
    """The agent `spec` names, for `task` (a string is parsed first:
    `app.agents.spec.parse_agent_spec`).

    `replay:EPISODE` replays an episode of `task` recorded in `store`
    (`app.agents.replay`).

    `openai` is the model agent's config (an `DeskLoopConfig` for DeskLoop's own tools, an
    `AdapterConfig` for an adapter); a spec naming a model, a family or options
    overrides the config's, or needs no config at all. `agent_timeout`, when given,
    replaces its `deadline` (the TUI's field). Agents that call no endpoint ignore both.

    Raises:
        AgentError: unknown spec, a task without a reference, an invalid script, a
            model agent without a model, or a person (`app.episode.launch` builds one
            with its desktop).
    """
    if isinstance(spec, str):
        spec = parse_agent_spec(spec)
    if isinstance(spec, NullSpec):
        return NullAgent()
    if isinstance(spec, ReferenceSpec):
        if task.reference is None:
            raise AgentError(f"{task.source}: task {task.id} has no reference solution")
        try:
            path = resolve_asset(task.folder, task.reference, "reference")
        except ValueError as exc:
            raise AgentError(f"{task.source}: {exc}") from None
        return ScriptedAgent.from_file(path, name="reference")
    if isinstance(spec, ReplaySpec):
        from app.agents.replay import ReplayAgent, recorded_steps

        if store is None:
            raise AgentError(f"{spec}: a replay reads the store; start it with deskloop run")
        return ReplayAgent(spec.episode, recorded_steps(store, spec.episode, task))
    if isinstance(spec, ScriptedSpec):
        script = Path(spec.path)
        if not script.is_file():
            raise AgentError(f"scripted agent file {script} not found")
        return ScriptedAgent.from_file(script)
    if isinstance(spec, PersonSpec):
        raise AgentError(
            "person: a person drives a desktop; run deskloop human, or choose human in the TUI"
        )
    config = model_config(spec, openai, agent_timeout=agent_timeout)
    from app.agents.adapters import AdapterAgent, AdapterConfig
    from app.agents.adapters.deskloop import DeskLoopAgent

    if isinstance(config, AdapterConfig):
        return AdapterAgent(config)
    return DeskLoopAgent(config)


class _Shared(TypedDict):
    """The settings both model configs have, carried from one to the other when a
    spec names the other family than its config's."""

    model: str
    base_url: str
    api_key_env: str
    temperature: float
    seed: int | None
    max_tokens: int
    timeout: float
    max_retries: int
    backoff: float
    backoff_cap: float
    deadline: float
    image_width: int
    image_height: int
    history: int


def _shared(config: ModelConfig, model: str) -> _Shared:
    return _Shared(
        model=model or config.model,
        base_url=config.base_url,
        api_key_env=config.api_key_env,
        temperature=config.temperature,
        seed=config.seed,
        max_tokens=config.max_tokens,
        timeout=config.timeout,
        max_retries=config.max_retries,
        backoff=config.backoff,
        backoff_cap=config.backoff_cap,
        deadline=config.deadline,
        image_width=config.image_width,
        image_height=config.image_height,
        history=config.history,
    )


def model_config(
    spec: ModelSpec, base: ModelConfig | None = None, *, agent_timeout: float | None = None
) -> ModelConfig:
    """The config of the model agent `spec` names: `base` (the command line's or a
    suite's), as the spec's family, model and options change it; `agent_timeout`, when
    given, is its deadline.

    Raises:
        AgentError: no model in the spec or the config; an option the family refuses.
    """
    from app.agents.adapters import AdapterConfig
    from app.agents.adapters.deskloop import DeskLoopConfig

    configured = base.adapter if isinstance(base, AdapterConfig) else "deskloop"
    family = spec.family or configured
    if not (spec.model or (base is not None and base.model)):
        raise AgentError(
            f"{spec}: a model name is required (--model M, the Model field, or {family}:M)"
        )
    config: ModelConfig
    if family == "deskloop":
        if base is None:
            config = DeskLoopConfig(model=spec.model)
        elif isinstance(base, DeskLoopConfig):
            config = replace(base, model=spec.model or base.model)
        else:
            config = DeskLoopConfig(**_shared(base, spec.model))
        config = _deskloop_options(config, spec)
    else:
        config = _adapter_options(_as_family(base, family, spec.model), spec)
    deadline = agent_timeout if agent_timeout is not None else spec.deadline
    return config if deadline is None else replace(config, deadline=deadline)


def _as_family(base: ModelConfig | None, family: str, model: str) -> AdapterConfig:
    """`base` as an adapter's config of `family`."""
    from app.agents.adapters import AdapterConfig
    from app.endpoints.client import EndpointConfig

    if base is None:
        return AdapterConfig(model=model, adapter=family)
    if not isinstance(base, AdapterConfig):
        return AdapterConfig(adapter=family, **_shared(base, model))
    if base.adapter == family:
        return replace(base, model=model or base.model)
    # The other family's own endpoint and key variable are not this one's: back to the
    # defaults, which AdapterConfig makes this family's.
    row = FAMILIES[family] if is_family(family) else None
    tools = row.tools if row is not None else {}
    return replace(
        base,
        adapter=family,
        model=model or base.model,
        base_url=EndpointConfig.base_url
        if base.base_url == _family_base_url(base.adapter)
        else base.base_url,
        api_key_env=EndpointConfig.api_key_env
        if base.api_key_env == _family_key_env(base.adapter)
        else base.api_key_env,
        # A computer tool chosen for the other family: this one takes the table's.
        computer_tool=base.computer_tool if base.computer_tool in tools else None,
    )


def _family_base_url(family: str) -> str:
    from app.agents.adapters.config import family_base_url

    return family_base_url(family)


def _family_key_env(family: str) -> str:
    from app.agents.adapters.config import family_key_env

    return family_key_env(family)


def _deskloop_options(config: DeskLoopConfig, spec: ModelSpec) -> DeskLoopConfig:
    """`config` with the options `spec` sets (the rest are the adapters')."""
    if spec.computer_tool is not None or spec.text_turn is not None:
        raise AgentError(
            f"{spec}: the computer tool and the text-turn policy are the anthropic and "
            "openai-cua adapters': DeskLoop's tools are its own"
        )
    if spec.coords not in (None, "pixels"):
        raise AgentError(f"{spec}: coords are an adapter's: DeskLoop's tools take pixels")
    return replace(
        config,
        base_url=spec.base_url or config.base_url,
        api_key_env=spec.api_key_env or config.api_key_env,
        image_width=spec.image_width or config.image_width,
        image_height=spec.image_height or config.image_height,
        history=config.history if spec.history is None else spec.history,
        tool_mode=spec.tool_mode or config.tool_mode,
    )


def _adapter_options(config: AdapterConfig, spec: ModelSpec) -> AdapterConfig:
    """`config` with the options `spec` sets (the tool mode is DeskLoop's tools')."""
    if spec.tool_mode is not None:
        raise AgentError(f"{spec}: the tool mode is the deskloop family's")
    return replace(
        config,
        base_url=spec.base_url or config.base_url,
        api_key_env=spec.api_key_env or config.api_key_env,
        coords=spec.coords or config.coords,
        computer_tool=spec.computer_tool or config.computer_tool,
        text_turn=spec.text_turn or config.text_turn,
        image_width=spec.image_width or config.image_width,
        image_height=spec.image_height or config.image_height,
        history=config.history if spec.history is None else spec.history,
        screenshots=spec.screenshots or config.screenshots,
    )


def endpoint_config(
    spec: AgentSpec | str,
    *,
    adapter: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    api_key_env: str | None = None,
    computer_tool: str | None = None,
    text_turn: str | None = None,
) -> ModelConfig | None:
    """A model agent's config from the fields a person fills in (the TUI's start
    dialog): each empty one is the family's default (the format table's computer tool,
    text turns read as DONE). The fields are read as a spec file's model agent is
    (`app.agents.spec.agent_spec_from_mapping`), and built by `model_config`.
    None when `spec` is no model agent's or no field is given (the spec alone then
    decides).

    Raises:
        AgentError: an unknown adapter, fields without a model anywhere, a computer
            tool the adapter does not have, or an unknown text-turn policy, each
            naming its field.
    """
    parsed = parse_agent_spec(spec) if isinstance(spec, str) else spec
    given = (adapter, model, base_url, api_key_env, computer_tool, text_turn)
    if not isinstance(parsed, ModelSpec) or not any(given):
        return None
    fields = {
        "family": adapter or parsed.family or "deskloop",
        "model": model or parsed.model,
        "base_url": base_url,
        "api_key_env": api_key_env,
        "computer_tool": computer_tool,
        "text_turn": text_turn,
    }
    options = agent_spec_from_mapping(
        {"kind": "model", **{name: value for name, value in fields.items() if value}},
        where="start dialog",
    )
    assert isinstance(options, ModelSpec)
    return model_config(options)
