"""Command-line options for model agents, shared by `run` and `batch run`, and the
one shape of a model call's timeout option (`--agent-timeout`, `--user-timeout`)."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from app.agents.families import (
    COMPUTER_TOOLS,
    CONVENTIONS,
    FAMILY_NAMES,
    TEXT_TURNS,
    TOOL_MODES,
    is_family,
)
from app.agents.spec import MODEL_HEADS, ModelSpec, parse_agent_spec
from app.core.errors import DeskLoopError

if TYPE_CHECKING:
    from app.agents.adapters import ModelConfig

# The configs' defaults (DeskLoopConfig.deadline, LLMUserConfig.deadline), written out so
# that building the parser does not import the endpoint client; tests/cli/test_cli.py holds
# them equal.
AGENT_TIMEOUT = 600.0
USER_TIMEOUT = 300.0


def _seconds(text: str) -> float:
    # Imported when the option is given: building the parser stays light.
    from app.core.validation import positive_seconds

    try:
        return positive_seconds(text)
    except ValueError as exc:
        # argparse prefixes the message with the option's name.
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_timeout_option(group: Any, flag: str, who: str, default: float) -> None:
    """`flag SECONDS`: the total deadline of each call `who` makes to its endpoint
    (`EndpointConfig.deadline`); None when not given, so a suite's value may stand."""
    group.add_argument(
        flag,
        type=_seconds,
        metavar="SECONDS",
        help=f"seconds each call of {who} to its endpoint may take in all, retries and "
        f"a slow or trickling answer included; an endpoint that cannot answer within "
        f"them ends the episode as an infrastructure error (default: {default:g})",
    )


# The families' table's names (app.agents.families), light to import.
ADAPTER_CHOICES = FAMILY_NAMES
COORD_CHOICES = CONVENTIONS
COMPUTER_TOOL_CHOICES = COMPUTER_TOOLS


def add_openai_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "model agents (--agent openai[:MODEL], model[:MODEL] or ADAPTER:MODEL)"
    )
    group.add_argument("--model", help="model name of a model agent")
    group.add_argument(
        "--adapter",
        choices=ADAPTER_CHOICES,
        help="the model family's action format: deskloop (DeskLoop's own tools or JSON), "
        "pyautogui (OSWorld-style code), uitars, anthropic (the computer tool, Messages "
        "API), openai-cua (computer use, Responses API), qwen (computer_use calls) "
        "(default: deskloop, or the one the --agent spec names)",
    )
    group.add_argument(
        "--base-url",
        help="the endpoint's base URL (default: https://api.openai.com/v1; "
        "https://api.anthropic.com/v1 for --adapter anthropic)",
    )
    group.add_argument(
        "--api-key-env",
        help="environment variable holding the API key; unset: no key is sent "
        "(default: OPENAI_API_KEY; ANTHROPIC_API_KEY for --adapter anthropic)",
    )
    group.add_argument(
        "--coords",
        choices=COORD_CHOICES,
        help="the coordinate convention the model writes, when not its family's own "
        "(e.g. qwen-grid for UI-TARS-1.5, 0-1000 for Qwen3-VL)",
    )
    group.add_argument(
        "--computer-tool",
        choices=COMPUTER_TOOL_CHOICES,
        help="the computer tool an anthropic or openai-cua model is offered (its beta header "
        "follows), instead of the one the format table names for the model "
        "(docs/agents.md#tool-versions)",
    )
    group.add_argument(
        "--text-turn",
        choices=TEXT_TURNS,
        help="what an anthropic or openai-cua model's turn of text without a tool call is: "
        "done (a DONE, the text a summary) or ask (its question to the user, for "
        "interactive tasks); recorded with the episode (default: done)",
    )
    group.add_argument(
        "--image-size",
        default="1280x800",
        help="largest screenshot sent to the model, WxH (default: 1280x800)",
    )
    group.add_argument(
        "--history",
        type=int,
        metavar="N",
        help="the model's last N actions or answers described as text in each request "
        "(default: 12 for deskloop, 8 for the adapters over chat completions)",
    )
    group.add_argument(
        "--screenshots",
        type=int,
        default=1,
        metavar="N",
        help="an adapter over chat completions (pyautogui, uitars, qwen) shows the model "
        "its last N screenshots, each earlier one with its answer (default: 1)",
    )
    group.add_argument(
        "--tool-mode",
        choices=TOOL_MODES,
        default="tools",
        help="--adapter deskloop: offer actions as tools, or ask for the JSON action "
        "format (default: tools)",
    )
    add_timeout_option(group, "--agent-timeout", "the model agent", AGENT_TIMEOUT)


def needs_model(agent: str) -> bool:
    """Whether `agent` is a model agent's spec (a bad spec is the factory's to refuse)."""
    return agent.partition(":")[0] in MODEL_HEADS


def openai_config(
    args: argparse.Namespace,
    agents: list[str],
    timeout: float | None = None,
    endpoint: dict[str, Any] | None = None,
) -> ModelConfig | None:
    """The model agents' config the options describe (an `DeskLoopConfig` for DeskLoop's
    tools, an `AdapterConfig` for an adapter), or None when no agent needs one.
    `endpoint` is a suite file's endpoint settings, which the options override;
    `--agent-timeout`, else `timeout` (a suite's), else the default, is its deadline.

    The options become one `ModelSpec`, which `app.agents.factory.model_config` builds,
    as it builds every model agent's config; what is checked here is only what the
    options name by their flags."""
    from app.agents.factory import model_config

    model_agents = [a for a in agents if needs_model(a)]
    if not model_agents:
        return None
    settings = dict(endpoint or {})
    try:
        width, height = (int(v) for v in args.image_size.lower().split("x"))
    except ValueError:
        raise DeskLoopError(
            f"--image-size must look like 1280x800, not {args.image_size!r}"
        ) from None
    named = [spec for spec in map(parse_agent_spec, model_agents) if isinstance(spec, ModelSpec)]
    model = args.model or settings.get("model") or next((s.model for s in named if s.model), "")
    if not model:
        raise DeskLoopError("a model agent needs --model M (or --agent openai:M, or ADAPTER:M)")
    family = (
        args.adapter
        or settings.get("adapter")
        or next((s.family for s in named if s.family is not None), "deskloop")
    )
    if not is_family(family):  # argparse and the suite's schema refused it already
        raise DeskLoopError(f"unknown adapter {family!r}; known: {', '.join(FAMILY_NAMES)}")
    coords = args.coords or settings.get("coords")
    computer_tool = args.computer_tool or settings.get("computer_tool")
    text_turn = args.text_turn or settings.get("text_turn")
    own_tools = family == "deskloop"
    if own_tools:
        if coords not in (None, "pixels"):
            raise DeskLoopError("--coords is an adapter's: DeskLoop's tools take pixels")
        if computer_tool is not None:
            raise DeskLoopError(
                "--computer-tool is an adapter's (anthropic, openai-cua): DeskLoop's tools "
                "are its own"
            )
        if text_turn is not None:
            raise DeskLoopError(
                "--text-turn is the anthropic and openai-cua adapters': DeskLoop's tools "
                "agent reads text as a JSON action"
            )
    options = ModelSpec(
        family=family,
        model=model,
        base_url=args.base_url or settings.get("base_url"),
        api_key_env=args.api_key_env or settings.get("api_key_env"),
        coords=coords,
        computer_tool=computer_tool,
        text_turn=text_turn,
        image_width=width,
        image_height=height,
        history=args.history,
        # Each option is one family's; the other family's default is no choice.
        screenshots=None if own_tools else args.screenshots,
        tool_mode=args.tool_mode if own_tools else None,
        deadline=args.agent_timeout if args.agent_timeout is not None else timeout,
    )
    return model_config(options)


JUDGE_TIMEOUT = 300.0
"""JudgeConfig.deadline's default, written out like AGENT_TIMEOUT."""


def add_judge_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "model judge (the tasks' `judge` checks; see docs/evaluators.md#judge)"
    )
    group.add_argument(
        "--judge-model",
        help="vision model that answers `judge` checks; without it, a judge that does not "
        "count records that none was asked, and a task whose judge counts is refused",
    )
    group.add_argument(
        "--judge-base-url",
        default="https://api.openai.com/v1",
        help="the judge's OpenAI-compatible endpoint (default: https://api.openai.com/v1)",
    )
    group.add_argument(
        "--judge-api-key-env",
        default="OPENAI_API_KEY",
        help="environment variable holding the judge's API key (default: OPENAI_API_KEY)",
    )
    add_timeout_option(group, "--judge-timeout", "the judge", JUDGE_TIMEOUT)


def judge_config(args: argparse.Namespace) -> Any:
    """The JudgeConfig the options describe, or None without --judge-model."""
    if not getattr(args, "judge_model", None):
        return None
    from app.episode.judge import JudgeConfig

    config = JudgeConfig(
        model=args.judge_model,
        base_url=args.judge_base_url,
        api_key_env=args.judge_api_key_env,
    )
    return config if args.judge_timeout is None else replace(config, deadline=args.judge_timeout)
