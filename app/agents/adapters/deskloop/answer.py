"""What the model's answer means: the action of its tool call or its JSON action.

Anything that is not a usable action raises `MalformedAction` with the reason and the
raw answer, which the runner records as a rejected step (the store caps what it keeps
of it: `app.store.values.cap_raw`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from app.agents.adapters.deskloop.prompt import TOOL_PARAMETERS
from app.core.actions import Action, parse_action
from app.core.errors import ActionError, MalformedAction
from app.endpoints.client import excerpt, message_text

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def action_from_call(name: Any, arguments: Any) -> Action:
    """An action from a tool name and its arguments (a JSON string or a mapping).

    Raises:
        MalformedAction: unknown tool, arguments that are not JSON, invalid values.
    """
    raw = {"name": name, "arguments": arguments}
    if not isinstance(name, str) or name not in TOOL_PARAMETERS:
        known = ", ".join(TOOL_PARAMETERS)
        raise MalformedAction(f"unknown tool {name!r}; the tools are {known}", raw)
    if isinstance(arguments, str):
        text = arguments.strip() or "{}"
        try:
            arguments = json.loads(text)
        except json.JSONDecodeError as exc:
            raise MalformedAction(f"{name}: arguments are not valid JSON ({exc})", raw) from None
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise MalformedAction(
            f"{name}: arguments must be a JSON object, got {excerpt(repr(arguments), 80)}", raw
        )
    try:
        return parse_action({"kind": name, **arguments}, where=f"tool {name}")
    except ActionError as exc:
        raise MalformedAction(str(exc), raw) from None


def action_from_text(text: str) -> Action:
    """An action from the JSON action format (see `app.agents.adapters.deskloop`).

    Raises:
        MalformedAction: no JSON object, or not a valid action.
    """
    fenced = _FENCE.search(text)
    candidate = fenced.group(1) if fenced else text
    start, end = candidate.find("{"), candidate.rfind("}")
    if start < 0 or end <= start:
        raise MalformedAction(
            'no action: expected a tool call or a JSON object like {"action": "done"}', text
        )
    try:
        data = json.loads(candidate[start : end + 1])
    except json.JSONDecodeError as exc:
        raise MalformedAction(f"the JSON action is not valid JSON ({exc})", text) from None
    if not isinstance(data, dict) or "action" not in data:
        raise MalformedAction('the JSON action needs an "action" key naming the tool', text)
    name = data.pop("action")
    try:
        return action_from_call(name, data)
    except MalformedAction as exc:
        raise MalformedAction(exc.message, text) from None


def read_answer(data: dict[str, Any], info: dict[str, Any]) -> Action:
    """The action of a chat completion; what it holds (finish reason, text, tool call)
    goes into `info`, the step's record, even when it is refused.

    Raises:
        MalformedAction: no choice or message, tool calls of the wrong shape, or a call
            or text that is not a valid action.
    """
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise MalformedAction("the answer has no choices", data)
    choice = choices[0]
    message = choice.get("message")
    info["finish_reason"] = choice.get("finish_reason")
    if not isinstance(message, dict):
        raise MalformedAction("the answer's choice has no message", data)
    content = message_text(message.get("content"))
    if content:
        info["content"] = content
    calls = message.get("tool_calls") or []
    legacy = message.get("function_call")
    if not calls and isinstance(legacy, dict):
        # The pre-tools function-calling shape, still sent by some servers.
        calls = [{"function": legacy}]
    if calls:
        if not isinstance(calls, list) or not isinstance(calls[0], dict):
            raise MalformedAction("tool_calls is not a list of calls", message)
        function = calls[0].get("function") or {}
        name, arguments = function.get("name"), function.get("arguments")
        info["tool_call"] = {"name": name, "arguments": arguments}
        if len(calls) > 1:
            # One action per step: the first call is taken, the rest recorded.
            info["ignored_tool_calls"] = len(calls) - 1
        return action_from_call(name, arguments)
    if content and content.strip():
        action = action_from_text(content)
        info["json_action"] = True
        return action
    raise MalformedAction("the answer has neither a tool call nor text", message)
