"""Command-line options for model agents, shared by `run` and `batch run`."""

from __future__ import annotations

import argparse
from typing import Any

from app.core.errors import DeskLoopError


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


def openai_config(args: argparse.Namespace, agents: list[str]) -> Any:
    """The OpenAIConfig the options describe, or None when no agent needs one."""
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
    return OpenAIConfig(
        model=model,
        base_url=args.base_url,
        api_key_env=args.api_key_env,
        image_width=width,
        image_height=height,
        tool_mode=args.tool_mode,
    )
