"""Command-line options for model agents, shared by `run` and `batch run`, and the
one shape of a model call's timeout option (`--agent-timeout`, `--user-timeout`)."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from app.core.errors import DeskLoopError

# The configs' defaults (OpenAIConfig.deadline, LLMUserConfig.deadline), written out so
# that building the parser does not import the endpoint client; tests/test_cli.py holds
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


def add_openai_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("model agents (--agent openai)")
    group.add_argument("--model", help="model name for --agent openai")
    group.add_argument(
        "--base-url",
        default="https://api.openai.com/v1",
        help="OpenAI-compatible endpoint (default: https://api.openai.com/v1)",
    )
    group.add_argument(
        "--api-key-env",
        default="OPENAI_API_KEY",
        help="environment variable holding the API key (default: OPENAI_API_KEY)",
    )
    group.add_argument(
        "--image-size",
        default="1280x800",
        help="largest screenshot sent to the model, WxH (default: 1280x800)",
    )
    group.add_argument(
        "--tool-mode",
        choices=["tools", "json"],
        default="tools",
        help="offer actions as tools, or ask for the JSON action format (default: tools)",
    )
    add_timeout_option(group, "--agent-timeout", "the model agent", AGENT_TIMEOUT)


def openai_config(args: argparse.Namespace, agents: list[str], timeout: float | None = None) -> Any:
    """The OpenAIConfig the options describe, or None when no agent needs one;
    `--agent-timeout`, else `timeout` (a suite's), else the default, is its deadline."""
    from app.agents.openai import OpenAIConfig

    if not any(a == "openai" or a.startswith("openai:") for a in agents):
        return None
    try:
        width, height = (int(v) for v in args.image_size.lower().split("x"))
    except ValueError:
        raise DeskLoopError(
            f"--image-size must look like 1280x800, not {args.image_size!r}"
        ) from None
    model = args.model or next((a.partition(":")[2] for a in agents if a.startswith("openai:")), "")
    if not model:
        raise DeskLoopError("--agent openai needs --model M (or use --agent openai:M)")
    config = OpenAIConfig(
        model=model,
        base_url=args.base_url,
        api_key_env=args.api_key_env,
        image_width=width,
        image_height=height,
        tool_mode=args.tool_mode,
    )
    deadline = args.agent_timeout if args.agent_timeout is not None else timeout
    return config if deadline is None else replace(config, deadline=deadline)


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
