"""OpenAI computer use over the Responses API (`POST {base_url}/responses`).

The request offers the computer tool the format table names for the model
(`app.agents.adapters.formats`): the built-in `computer` tool (`{"type": "computer"}`)
for GPT-5.4 and later, whose `computer_call`s batch their actions in `actions`; else
`computer_use_preview`, one `action` per call, declared with `display_width` ×
`display_height`, the size of every screenshot sent, and `environment: linux`. Either
way the coordinates are pixels of the screenshot sent. DeskLoop's `ask_user`, `done` and
`give_up` functions come with it, and `truncation: auto` as the preview requires. Each
`computer_call` is answered in the next request (chained with
`previous_response_id`) by a `computer_call_output` carrying the new screenshot; a
`function_call` by a `function_call_output`. A call's `pending_safety_checks` are
recorded with the step (`safety_checks`) and acknowledged in its output: the desktop
is a throw-away lab session. A response without a call is DONE (its text recorded).
A `screenshot` action is answered in the same step with the screen as it is.

A response that is not usable (no `output` list; `failed`, `incomplete` or
`cancelled` without a call) is refused and is no part of the conversation: the next
request continues the last usable response and carries again all it owed (the calls'
outputs, the user's new messages), with why the answer was refused.

| `action.type` | DeskLoop |
|---|---|
| `click` (`button` left/right/wheel) | `click` |
| `double_click` | `click`, count 2 |
| `drag` (`path`: first → last point) | `drag` |
| `keypress` (`keys`, pressed together: `["CTRL", "S"]`) | `key` |
| `move` | `move` |
| `scroll` (`scroll_y` pixels; 1 notch per 100, at least 1) | `scroll` |
| `type` | `type` |
| `wait` | `wait` 1 s |
| `screenshot` | answered at once with the screen |
| `keys` held during a pointer action (the built-in tool) | refused, with why |
| `ask_user` / `give_up` function call; no call | ASK / FAIL; DONE (`text_turn: ask`: ASK) |
| `done` function call (`answer`, optional, text or any JSON value) | DONE with that answer |

As for Anthropic, a value the task asks for comes through DeskLoop's `done` function;
a response's final text is a summary, recorded as `content`, and its DONE has no answer.
"""

from __future__ import annotations

import json
from typing import Any

from app.agents.adapters.base import (
    Pointer,
    Reading,
    Shot,
    conversation_text,
    ending,
    malformed,
    text_turn,
    tool_answer,
)
from app.agents.adapters.config import AdapterConfig
from app.agents.base import Observation
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
    validate_action,
)
from app.core.errors import ActionError, MalformedAction
from app.core.keys import combo_of
from app.endpoints.client import KeyHeader

INSTRUCTIONS = """\
You are operating a Linux desktop for a user. The user's messages come in this \
conversation; the latest one is the active instruction, and earlier ones stay in force \
unless it says otherwise. {ending} If something is unclear and you need the \
user's input, call ask_user. If you cannot complete the task, call give_up.
"""

FUNCTIONS: list[dict[str, Any]] = [
    {
        "type": "function",
        "name": "ask_user",
        "description": "Ask the user a clarifying question; the task goes on.",
        "parameters": {
            "type": "object",
            "properties": {"question": {"type": "string"}},
            "required": ["question"],
            "additionalProperties": False,
        },
    },
    {
        "type": "function",
        "name": "done",
        "description": "Say that the active instruction is satisfied. When it asks for a "
        "value (a number, a name, a list), give that value as answer.",
        "parameters": {
            "type": "object",
            # No "type" for the answer: it may be text or any JSON value.
            "properties": {"answer": {"description": "The value asked for, if any."}},
            "additionalProperties": False,
        },
    },
    {
        "type": "function",
        "name": "give_up",
        "description": "Give up on the task, saying why.",
        "parameters": {
            "type": "object",
            "properties": {"reason": {"type": "string"}},
            "required": ["reason"],
            "additionalProperties": False,
        },
    },
]
WAIT_SECONDS = 1.0
SCROLL_PIXELS_PER_NOTCH = 100
_BUTTONS = {"left": "left", "right": "right", "wheel": "middle", "middle": "middle"}


def cua_action(data: Any, shot: Shot) -> list[Action] | None:
    """The DeskLoop actions of one computer_call `action`; None for `screenshot`.

    Raises:
        ActionError: an unknown action or bad arguments.
    """
    if not isinstance(data, dict):
        raise ActionError(f"computer_call: action must be an object, not {data!r}")
    contract = shot.contract
    kind = data.get("type")

    def point(item: Any = data) -> tuple[int, int]:
        if not isinstance(item, dict):
            raise ActionError(f"{kind}: a point is {{x, y}}, not {item!r}")
        return contract.to_screen(item.get("x"), item.get("y"), str(kind))

    held = data.get("keys") if kind != "keypress" else None
    if held:
        # The built-in tool's pointer actions may hold keys (a shift-click).
        what = "click" if kind in ("click", "double_click") else kind
        names = "+".join(map(str, held)) if isinstance(held, list) else repr(held)
        raise ActionError(f"{what} holding {names}: DeskLoop's {what}s hold no keys")

    if kind == "click":
        button = data.get("button", "left")
        if button not in _BUTTONS:
            raise ActionError(f"click: button {button!r} is not read (left, right, wheel)")
        return [Click(*point(), _BUTTONS[button], 1)]  # type: ignore[arg-type]
    if kind == "double_click":
        return [Click(*point(), "left", 2)]
    if kind == "drag":
        path = data.get("path")
        if not isinstance(path, list) or len(path) < 2:
            raise ActionError(f"drag: path must hold at least two points, not {path!r}")
        return [Drag(*point(path[0]), *point(path[-1]))]
    if kind == "keypress":
        keys = data.get("keys")
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            raise ActionError(f"keypress: keys must be a list of key names, not {keys!r}")
        return [Key(combo_of(keys))]
    if kind == "move":
        return [Move(*point())]
    if kind == "scroll":
        dx, dy = data.get("scroll_x", 0) or 0, data.get("scroll_y", 0) or 0
        if not isinstance(dy, int | float) or not isinstance(dx, int | float):
            raise ActionError("scroll: scroll_x and scroll_y must be numbers")
        if dy == 0:
            raise ActionError("scroll: DeskLoop scrolls up or down only (scroll_y is 0)")
        notches = max(1, round(abs(dy) / SCROLL_PIXELS_PER_NOTCH))
        return [Scroll(*point(), notches if dy > 0 else -notches)]
    if kind == "type":
        return [Type(data.get("text"))]  # type: ignore[arg-type]
    if kind == "wait":
        return [Wait(WAIT_SECONDS)]
    if kind == "screenshot":
        return None
    raise ActionError(f"computer_call: unknown action type {kind!r}")


class OpenAICUAFamily:
    """The Responses API conversation of one episode (see the module doc)."""

    path = "/responses"
    key_header: KeyHeader = "bearer"

    def __init__(self, config: AdapterConfig) -> None:
        self.config = config
        self.reset()

    def reset(self) -> None:
        self.previous: str | None = None
        """The last usable response's id: the next request continues it."""
        self.shown = 0
        """How many of the episode's messages that response's conversation holds."""
        self.sending = 0
        """How many the request in flight holds (`shown` once its answer is usable)."""
        self.pending: list[dict[str, Any]] = []
        """The last usable response's calls, each owed an output."""
        self.note: str | None = None

    def headers(self) -> dict[str, str]:
        return {}

    def request(self, observation: Observation, shot: Shot) -> dict[str, Any]:
        items: list[dict[str, Any]] = []
        for call in self.pending:
            if call["type"] == "computer_call":
                output: dict[str, Any] = {
                    "type": "computer_call_output",
                    "call_id": call["call_id"],
                    "output": {"type": "computer_screenshot", "image_url": shot.data_url},
                }
                if call.get("pending_safety_checks"):
                    output["acknowledged_safety_checks"] = call["pending_safety_checks"]
                items.append(output)
            else:
                said = "The user's answer follows." if call["name"] == "ask_user" else "Noted."
                items.append(
                    {"type": "function_call_output", "call_id": call["call_id"], "output": said}
                )
        parts: list[dict[str, Any]] = []
        if self.previous is None:
            parts.append(
                {
                    "type": "input_text",
                    "text": "Conversation (oldest first):\n" + conversation_text(observation),
                }
            )
        elif len(observation.conversation) > self.shown:
            parts.append(
                {
                    "type": "input_text",
                    "text": "New messages from the user:\n"
                    + conversation_text(observation, self.shown),
                }
            )
        if self.note:
            parts.append(
                {"type": "input_text", "text": f"Your last answer was refused: {self.note}"}
            )
        if not any(call["type"] == "computer_call" for call in self.pending):
            parts.append({"type": "input_image", "image_url": shot.data_url})
        if parts:
            items.append({"role": "user", "content": parts})
        # What this request owes stays owed until a usable answer comes (`read`): an
        # unusable one is no part of the conversation, and the next request continues
        # the last usable response with all of it again.
        self.sending = len(observation.conversation)
        body: dict[str, Any] = {
            "model": self.config.model,
            "instructions": INSTRUCTIONS.format(ending=ending(self.config.text_turn)),
            "tools": [self._computer_tool(shot), *FUNCTIONS],
            "input": items,
            "truncation": "auto",
        }
        if self.previous is not None:
            body["previous_response_id"] = self.previous
        return body

    def _computer_tool(self, shot: Shot) -> dict[str, Any]:
        """The computer tool the format table names for the model: the built-in
        `computer` (the screenshot's own size is the display), or the preview, declared
        with the screenshot's size."""
        tool = self.config.format.tool
        if tool == "computer":
            return {"type": "computer"}
        sent_w, sent_h = shot.contract.sent
        return {
            "type": tool,
            "display_width": sent_w,
            "display_height": sent_h,
            "environment": "linux",
        }

    def read(
        self, data: dict[str, Any], shot: Shot, pointer: Pointer, info: dict[str, Any]
    ) -> Reading:
        output = data.get("output")
        if not isinstance(output, list):
            raise MalformedAction("the response has no output list", data)
        calls = [
            item
            for item in output
            if isinstance(item, dict) and item.get("type") in ("computer_call", "function_call")
        ]
        status = data.get("status")
        if status in ("failed", "incomplete", "cancelled") and not calls:
            raise MalformedAction(f"the response is {status}{_why(data)}", data)
        # A usable answer: the conversation goes on from it.
        if isinstance(data.get("id"), str):
            self.previous = data["id"]
        self.shown, self.pending, self.note = self.sending, calls, None
        text = "".join(
            part.get("text", "")
            for item in output
            if isinstance(item, dict) and item.get("type") == "message"
            for part in item.get("content") or []
            if isinstance(part, dict) and part.get("type") == "output_text"
        )
        if text:
            info["content"] = text
        info["calls_in_answer"] = [
            {
                "type": c.get("type"),
                "action": c.get("action"),
                "name": c.get("name"),
                "arguments": c.get("arguments"),
            }
            for c in calls
        ]
        checks = [check for c in calls for check in c.get("pending_safety_checks") or []]
        if checks:
            info["safety_checks"] = checks
        if not calls:
            return text_turn(self.config.text_turn, text, info, data)
        start = pointer.at
        actions: list[Action] = []
        look = False
        for call in calls:
            try:
                found: list[Action]
                if call["type"] == "computer_call":
                    batch = call.get("actions") or [call.get("action")]
                    found = []
                    for item in batch:
                        read = cua_action(item, shot)
                        look = look or read is None
                        found += read or []
                else:
                    found = [self._function(call)]
                for action in found:
                    validate_action(action, str(call.get("type")))
                    pointer.follow(action)
                actions += found
            except ActionError as exc:
                pointer.at = start
                raise malformed(exc, call) from None
        return Reading(actions, look_again=look and not actions)

    @staticmethod
    def _function(call: dict[str, Any]) -> Action:
        name, arguments = call.get("name"), call.get("arguments") or "{}"
        try:
            args = json.loads(arguments) if isinstance(arguments, str) else arguments
        except json.JSONDecodeError as exc:
            raise ActionError(f"{name}: arguments are not valid JSON ({exc})") from None
        if not isinstance(args, dict):
            raise ActionError(f"{name}: arguments must be a JSON object")
        if name == "ask_user":
            return Ask(args.get("question"))  # type: ignore[arg-type]
        if name == "give_up":
            return Fail(str(args.get("reason", "")))
        if name == "done":
            return Done(tool_answer(args))
        raise ActionError(f"unknown function {name!r}; the functions are ask_user, done, give_up")

    def rejected(self, reason: str) -> None:
        self.note = reason

    def dropped(self, count: int) -> None:
        self.note = f"the last {count} action(s) of your answer were not run: the user spoke first"

    def usage(self, data: dict[str, Any]) -> dict[str, Any]:
        usage = data.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        return {
            "prompt_tokens": usage.get("input_tokens"),
            "completion_tokens": usage.get("output_tokens"),
            "total_tokens": usage.get("total_tokens"),
        }


def _why(data: dict[str, Any]) -> str:
    """': reason' of a response that failed or stopped short, where it says one."""
    details = data.get("incomplete_details") or data.get("error")
    if not isinstance(details, dict):
        return ""
    why = details.get("reason") or details.get("message")
    return f": {why}" if why else ""
