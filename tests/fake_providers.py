"""Answers shaped exactly like the providers' documentation examples, for the adapters'
fake endpoints (served by `tests.fake_openai.FakeEndpoint`, which answers any path):

- Anthropic's Messages API with the computer tool (a `message` whose `content` holds
  `text` and `tool_use` blocks, `stop_reason`, `usage.input_tokens/output_tokens`);
- OpenAI's Responses API with computer use (a `response` whose `output` holds
  `reasoning`, `computer_call` (one `action` with the preview tool, batched `actions`
  with the built-in `computer` tool; `pending_safety_checks`), `function_call` and
  `message` items, `usage.input_tokens/output_tokens/total_tokens`);
- chat completions carrying pyautogui code, UI-TARS text actions or Qwen's
  `<tool_call>` blocks (`tests.fake_openai.completion`).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

from tests.fake_openai import Reply, completion

_ids = itertools.count(1)


def _id(prefix: str) -> str:
    return f"{prefix}_01A09q90qw90lq91783{next(_ids):04d}"


# -- Anthropic Messages API --------------------------------------------------------------


def tool_use(name: str, input: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": _id("toolu"), "name": name, "input": input}


def computer(action: str, **fields: Any) -> dict[str, Any]:
    """A `tool_use` block of the computer tool: computer("left_click", coordinate=[x, y])."""
    return tool_use("computer", {"action": action, **fields})


def anthropic_message(
    *blocks: dict[str, Any], text: str | None = None, stop_reason: str | None = None
) -> dict[str, Any]:
    content = ([{"type": "text", "text": text}] if text else []) + list(blocks)
    uses = any(b["type"] == "tool_use" for b in blocks)
    return {
        "id": _id("msg"),
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": content,
        "stop_reason": stop_reason or ("tool_use" if uses else "end_turn"),
        "stop_sequence": None,
        "usage": {"input_tokens": 2095, "output_tokens": 503},
    }


def anthropic_reply(
    *blocks: dict[str, Any], text: str | None = None, gate: Callable[[], bool] | None = None
) -> Reply:
    return Reply(body=anthropic_message(*blocks, text=text), gate=gate)


# -- OpenAI Responses API ---------------------------------------------------------------

SAFETY_CHECK = {
    "id": "cu_sc_67cb2b69c8ac8191b8a5e5c8c2b4c6d30f8e6d7b5c1d3a2f",
    "code": "malicious_instructions",
    "message": "We've detected instructions that may cause your application to perform "
    "malicious or unauthorized actions. Please acknowledge this warning if you'd like to "
    "proceed.",
}


def computer_call(action: dict[str, Any], *checks: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "computer_call",
        "id": _id("cu"),
        "call_id": _id("call"),
        "action": action,
        "pending_safety_checks": list(checks),
        "status": "completed",
    }


def computer_actions(*actions: dict[str, Any]) -> dict[str, Any]:
    """A `computer_call` of the built-in `computer` tool (GPT-5.4 and later): its
    actions batched in `actions`, no `action`."""
    return {
        "type": "computer_call",
        "id": _id("cu"),
        "call_id": _id("call"),
        "actions": list(actions),
        "pending_safety_checks": [],
        "status": "completed",
    }


def function_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": _id("fc"),
        "call_id": _id("call"),
        "name": name,
        "arguments": json.dumps(arguments),
        "status": "completed",
    }


def output_message(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": _id("msg"),
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def response(*items: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": _id("resp"),
        "object": "response",
        "created_at": 1741294021,
        "status": "completed",
        "model": "computer-use-preview-2025-03-11",
        "output": [
            {
                "type": "reasoning",
                "id": _id("rs"),
                "summary": [{"type": "summary_text", "text": "Looking at the screen."}],
            },
            *items,
        ],
        "truncation": "auto",
        "usage": {"input_tokens": 1524, "output_tokens": 37, "total_tokens": 1561},
    }


def responses_reply(*items: dict[str, Any], gate: Callable[[], bool] | None = None) -> Reply:
    return Reply(body=response(*items), gate=gate)


# -- chat completions: pyautogui, UI-TARS, Qwen -----------------------------------------


def code_reply(code: str, gate: Callable[[], bool] | None = None) -> Reply:
    """An OSWorld-style answer: a reflection, then the code block."""
    text = f"The screen shows what I expected. Next step.\n```python\n{code}\n```"
    return Reply(body=completion(content=text), gate=gate)


def uitars_reply(
    action: str, thought: str = "I will do the next step.", gate: Callable[[], bool] | None = None
) -> Reply:
    return Reply(body=completion(content=f"Thought: {thought}\nAction: {action}"), gate=gate)


def qwen_reply(
    arguments: dict[str, Any], name: str = "computer_use", gate: Callable[[], bool] | None = None
) -> Reply:
    """Qwen's Hermes-style answer: the call in the text, as vLLM returns it without a
    tool parser."""
    call = json.dumps({"name": name, "arguments": arguments})
    return Reply(body=completion(content=f"<tool_call>\n{call}\n</tool_call>"), gate=gate)
