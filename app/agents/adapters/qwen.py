"""Qwen2.5-VL / Qwen3-VL `computer_use` function calls.

The model is offered the `computer_use` function of Qwen's computer-use cookbook (and
DeskLoop's `ask_user`), and answers with a tool call: parsed by the server
(`--tool-call-parser hermes` in vLLM: `tool_calls` in the message) or in its text as
`<tool_call>{"name": "computer_use", "arguments": {...}}</tool_call>`. Both are read.

| `action` | DeskLoop |
|---|---|
| `left_click`, `right_click`, `middle_click`, `double_click`, `triple_click` | `click` |
| `mouse_move` (`coordinate`) | `move` |
| `left_click_drag` (`coordinate`; from where the pointer is) | `drag` |
| `key` (`keys`, pressed together) | `key` |
| `type` (`text`) | `type` |
| `scroll` (`pixels`; positive is up, as pyautogui's notches) | `scroll` |
| `wait` (`time`) | `wait` |
| `terminate` (`status`: success / failure) | DONE / FAIL |
| `answer` (`text`, Qwen3-VL) | recorded, the next DONE's answer; asked again at once |
| `ask_user` function (`question`) | ASK |

A task that asks for a value ends as Qwen3-VL's computer-use agents end: `answer`,
then `terminate(status=success)`. The answer's text is read as JSON where it is JSON
(`"2"` → 2, see `answer_from_text`); the DONE carries the latest answer given since
the last DONE (both may come in one message).

Coordinates: Qwen2.5-VL writes pixels of the smart-resized image (`qwen-grid`, the
default); Qwen3-VL writes 0-1000 (`--coords 0-1000`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from app.agents.adapters.base import Pointer, Reading
from app.agents.adapters.coords import CoordinateContract
from app.core.actions import (
    Action,
    Ask,
    Click,
    Done,
    Drag,
    Fail,
    Key,
    Move,
    Scroll,
    Type,
    Wait,
    answer_from_text,
    validate_action,
)
from app.core.errors import ActionError, MalformedAction
from app.core.keys import combo_of
from app.endpoints.client import message_text

_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)
ACTIONS = (
    "key",
    "type",
    "mouse_move",
    "left_click",
    "left_click_drag",
    "right_click",
    "middle_click",
    "double_click",
    "triple_click",
    "scroll",
    "wait",
    "terminate",
    "answer",
)


def tools(contract: CoordinateContract) -> list[dict[str, Any]]:
    """The `computer_use` function (after Qwen2.5-VL's computer-use cookbook, Apache-2.0:
    the model is trained on its action names and arguments) and DeskLoop's `ask_user`."""
    width, height = contract.sent
    where = (
        f"The screen's resolution is {width}x{height}."
        if contract.convention in ("pixels", "qwen-grid")
        else "Coordinates are relative, 0-1000 from the left and top edges."
    )
    description = (
        "Use a mouse and keyboard to interact with a computer, and take screenshots.\n"
        "* This is an interface to a desktop GUI. You do not have access to a terminal or "
        "applications menu. You must click on desktop icons to start applications.\n"
        "* Some applications may take time to start or process actions, so you may need to "
        "wait and take successive screenshots to see the results of your actions.\n"
        f"* {where}\n"
        "* Whenever you intend to move the cursor to click on an element like an icon, you "
        "should consult a screenshot to determine the coordinates of the element before "
        "moving the cursor."
    )
    return [
        {
            "type": "function",
            "function": {
                "name": "computer_use",
                "description": description,
                "parameters": {
                    "type": "object",
                    "required": ["action"],
                    "properties": {
                        "action": {
                            "type": "string",
                            "enum": list(ACTIONS),
                            "description": "The action to perform. `key` presses the keys "
                            "together; `left_click_drag` drags from the cursor to "
                            "`coordinate`; `answer` gives the user the value they asked "
                            "for (then terminate); `terminate` ends the task with its status.",
                        },
                        "keys": {"type": "array", "description": "Required only by action=key."},
                        "text": {
                            "type": "string",
                            "description": "Required only by action=type and action=answer.",
                        },
                        "coordinate": {
                            "type": "array",
                            "description": "(x, y): the point to move the mouse to.",
                        },
                        "pixels": {
                            "type": "number",
                            "description": "The amount of scrolling to perform. Positive "
                            "values scroll up, negative values scroll down.",
                        },
                        "time": {"type": "number", "description": "The seconds to wait."},
                        "status": {
                            "type": "string",
                            "enum": ["success", "failure"],
                            "description": "The status of the task (action=terminate).",
                        },
                    },
                },
            },
        },
        {
            "type": "function",
            "function": {
                "name": "ask_user",
                "description": "Ask the user a clarifying question (the task goes on).",
                "parameters": {
                    "type": "object",
                    "required": ["question"],
                    "properties": {"question": {"type": "string"}},
                },
            },
        },
    ]


def _point(args: dict[str, Any], contract: CoordinateContract, what: str) -> tuple[int, int]:
    value = args.get("coordinate")
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise ActionError(f"{what}: coordinate must be [x, y], not {value!r}")
    return contract.to_screen(value[0], value[1], what)


def _action(
    args: dict[str, Any], contract: CoordinateContract, pointer: Pointer, info: dict[str, Any]
) -> Action | None:
    name = args.get("action")
    clicks = {
        "left_click": (1, "left"),
        "right_click": (1, "right"),
        "middle_click": (1, "middle"),
        "double_click": (2, "left"),
        "triple_click": (3, "left"),
    }
    if name in clicks:
        count, button = clicks[name]
        if "coordinate" in args:
            x, y = _point(args, contract, name)
        else:
            x, y = pointer.need(name)
        return Click(x, y, button, count)  # type: ignore[arg-type]
    if name == "mouse_move":
        return Move(*_point(args, contract, name))
    if name == "left_click_drag":
        start = pointer.need(name)
        return Drag(*start, *_point(args, contract, name))
    if name == "key":
        keys = args.get("keys")
        if isinstance(keys, str):
            keys = [keys]
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            raise ActionError(f"key: keys must be a list of key names, not {keys!r}")
        return Key(combo_of(keys))
    if name == "type":
        return Type(args.get("text"))  # type: ignore[arg-type]
    if name == "scroll":
        pixels = args.get("pixels")
        if isinstance(pixels, bool) or not isinstance(pixels, int | float) or round(pixels) == 0:
            raise ActionError(f"scroll: pixels must be a non-zero number, not {pixels!r}")
        x, y = _point(args, contract, name) if "coordinate" in args else pointer.need(name)
        return Scroll(x, y, -round(pixels))
    if name == "wait":
        return Wait(args.get("time", 1.0))
    if name == "terminate":
        status = args.get("status")
        return Done() if status == "success" else Fail(f"terminate(status={status!r})")
    if name == "answer":
        # The schema says text; a model that writes a number or a list there means it.
        text = args.get("text")
        info["answer"] = answer_from_text(text) if isinstance(text, str) else text
        return None
    raise ActionError(f"computer_use: unknown action {name!r}; actions: {', '.join(ACTIONS)}")


def _calls(message: dict[str, Any]) -> list[tuple[Any, Any]]:
    calls = message.get("tool_calls") or []
    if isinstance(calls, list) and calls:
        found = []
        for call in calls:
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict):
                raise ActionError("tool_calls is not a list of function calls")
            found.append((function.get("name"), function.get("arguments")))
        return found
    text = message_text(message.get("content")) or ""
    found = []
    for block in _TOOL_CALL.findall(text):
        try:
            data = json.loads(block)
        except json.JSONDecodeError as exc:
            raise ActionError(f"a <tool_call> is not valid JSON ({exc})") from None
        if not isinstance(data, dict):
            raise ActionError("a <tool_call> is not a JSON object")
        found.append((data.get("name"), data.get("arguments")))
    return found


def read_qwen(
    message: dict[str, Any],
    contract: CoordinateContract,
    pointer: Pointer,
    info: dict[str, Any],
    answer: Any = None,
) -> Reading:
    """The actions of a Qwen answer's `computer_use` calls, in screen pixels. `answer`
    is the value of an `answer` action of an earlier message, not yet carried by a
    DONE; a DONE carries the latest (its value is in `info["answer"]` when this
    message gave one).

    Raises:
        MalformedAction: no call, an unknown function or action, bad arguments.
    """
    start = pointer.at
    actions: list[Action] = []
    try:
        calls = _calls(message)
        if not calls:
            raise ActionError("no action: expected a computer_use tool call")
        info["tool_calls"] = [{"name": n, "arguments": a} for n, a in calls]
        for name, arguments in calls:
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments or "{}")
                except json.JSONDecodeError as exc:
                    raise ActionError(f"{name}: arguments are not valid JSON ({exc})") from None
            if not isinstance(arguments, dict):
                raise ActionError(f"{name}: arguments must be a JSON object")
            if name == "ask_user":
                action: Action | None = Ask(arguments.get("question"))  # type: ignore[arg-type]
            elif name == "computer_use":
                action = _action(arguments, contract, pointer, info)
            else:
                raise ActionError(
                    f"unknown function {name!r}; the tools are computer_use, ask_user"
                )
            if isinstance(action, Done):
                action = Done(info.get("answer", answer))
            if action is not None:
                validate_action(action, name)
                pointer.follow(action)
                actions.append(action)
    except ActionError as exc:
        pointer.at = start
        raise MalformedAction(str(exc), message) from None
    return Reading(actions, look_again=not actions)
