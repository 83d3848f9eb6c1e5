"""Anthropic's computer tool over the Messages API (`POST {base_url}/messages`).

The request offers the computer tool the model takes, with its beta header, as the
format table says (`app.agents.adapters.formats`: `computer_20251124` for Opus 4.5, 4.6
and 4.7 and Sonnet 4.6, `computer_20250124` for the other Claude 4 models and Sonnet
3.7, `computer_20241022` for Claude 3.5 Sonnet; `--computer-tool` chooses another), with
the screen-size contract: its `display_width_px` × `display_height_px` is the size of
every screenshot sent (the screen scaled down to fit the image box, 1280×800 by
default, and within the model's image bounds in the table, beyond which Anthropic's API
would rescale it and move every point), and the model's coordinates are pixels of it.
DeskLoop adds three client tools, `ask_user`, `done` (with an optional answer) and
`give_up`. The conversation is Anthropic's own:
each `tool_use` is answered with a `tool_result` (the last carrying the new
screenshot), the user's new messages follow as text, and an answer without a tool
call (`stop_reason: end_turn`) is DONE.

| `action` | DeskLoop |
|---|---|
| `left_click`, `right_click`, `middle_click`, `double_click`, `triple_click` | `click` |
| `mouse_move` | `move` |
| `left_click_drag` (`start_coordinate` → `coordinate`) | `drag` |
| `key` (xdotool syntax; 'Return Return' presses twice) | `key` per combo |
| `type` | `type` |
| `scroll` (`scroll_direction` up/down, `scroll_amount`) | `scroll` |
| `wait` (`duration`) | `wait` |
| `screenshot`, `cursor_position` | answered at once: the screen, the position (or: none yet) |
| `hold_key`, `left_mouse_down`/`up`, clicks holding keys, sideways scroll | refused, with why |
| `ask_user` tool | ASK; `give_up` tool: FAIL; no tool call: DONE (`text_turn: ask`: ASK) |
| `done` tool (`answer`, optional, text or any JSON value) | DONE with that answer |

A task that asks for a value gets it through DeskLoop's `done` tool: an answer's
final text is the model's summary, not a value a check could compare, so the final
message without a tool call stays a DONE without an answer (its text is recorded as
`content`). A string answer is read as JSON where it is JSON (`answer_from_text`).
"""

from __future__ import annotations

import copy
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
from app.core.keys import xdotool_combos
from app.endpoints.client import KeyHeader

API_VERSION = "2023-06-01"

SYSTEM_PROMPT = """\
You are operating a Linux desktop for a user, through the computer tool. The user's \
messages come in this conversation; the latest one is the active instruction, and earlier \
ones stay in force unless it says otherwise. {ending} If something is unclear and you need \
the user's input, call ask_user. If you cannot complete the task, call give_up.
"""

CLIENT_TOOLS: list[dict[str, Any]] = [
    {
        "name": "ask_user",
        "description": "Ask the user a clarifying question. The task goes on; the answer "
        "comes as the tool's result.",
        "input_schema": {
            "type": "object",
            "properties": {"question": {"type": "string", "description": "The question."}},
            "required": ["question"],
        },
    },
    {
        "name": "done",
        "description": "Say that the active instruction is satisfied. When it asks for a "
        "value (a number, a name, a list), give that value as answer.",
        "input_schema": {
            "type": "object",
            # No "type" for the answer: it may be text or any JSON value.
            "properties": {"answer": {"description": "The value asked for, if any."}},
        },
    },
    {
        "name": "give_up",
        "description": "Give up on the task, saying why.",
        "input_schema": {
            "type": "object",
            "properties": {"reason": {"type": "string", "description": "Why."}},
            "required": ["reason"],
        },
    },
]

_CLICKS = {
    "left_click": (1, "left"),
    "right_click": (1, "right"),
    "middle_click": (1, "middle"),
    "double_click": (2, "left"),
    "triple_click": (3, "left"),
}
_REFUSED = {
    "hold_key": "hold_key is not in DeskLoop's action space (its keys are pressed, not held)",
    "left_mouse_down": "left_mouse_down is not in DeskLoop's action space: use left_click_drag",
    "left_mouse_up": "left_mouse_up is not in DeskLoop's action space: use left_click_drag",
}
OMITTED = "(an earlier screenshot, omitted to keep the conversation small)"
NO_POSITION = "The pointer's position is not known yet: none of your actions has moved it."
"""The answer to `cursor_position` before any action put the pointer somewhere (DeskLoop
knows where the pointer is from the agent's own actions only)."""


def computer_action(data: Any, shot: Shot, pointer: Pointer) -> tuple[list[Action], str | None]:
    """The DeskLoop actions of one `computer` tool input, or the text to answer it with
    at once (a screenshot: '', the cursor position: 'X=..,Y=..', or `NO_POSITION` before
    any action put the pointer somewhere).

    Raises:
        ActionError: an unknown or refused action, or bad arguments.
    """
    if not isinstance(data, dict):
        raise ActionError(f"computer: input must be an object, not {data!r}")
    contract = shot.contract
    name = data.get("action")

    def point(key: str = "coordinate") -> tuple[int, int]:
        value = data.get(key)
        if value is None and key == "coordinate":
            return pointer.need(str(name))
        if not isinstance(value, list | tuple) or len(value) != 2:
            raise ActionError(f"{name}: {key} must be [x, y], not {value!r}")
        return contract.to_screen(value[0], value[1], f"{name} {key}")

    if name in _REFUSED:
        raise ActionError(_REFUSED[name])
    if name in _CLICKS:
        if data.get("text"):
            raise ActionError(f"{name} holding {data['text']!r}: DeskLoop's clicks hold no keys")
        count, button = _CLICKS[name]
        return [Click(*point(), button, count)], None  # type: ignore[arg-type]
    if name == "mouse_move":
        return [Move(*point())], None
    if name == "left_click_drag":
        start = point("start_coordinate") if "start_coordinate" in data else pointer.need(name)
        return [Drag(*start, *point())], None
    if name == "key":
        text = data.get("text")
        if not isinstance(text, str):
            raise ActionError(f"key: text must name keys, not {text!r}")
        return [Key(combo) for combo in xdotool_combos(text)], None
    if name == "type":
        return [Type(data.get("text"))], None  # type: ignore[arg-type]
    if name == "scroll":
        direction, amount = data.get("scroll_direction"), data.get("scroll_amount", 3)
        if data.get("text"):
            raise ActionError(f"scroll holding {data['text']!r}: DeskLoop's scroll holds no keys")
        if direction not in ("up", "down"):
            raise ActionError(
                f"scroll: direction {direction!r} is not read; DeskLoop scrolls up or down"
            )
        if isinstance(amount, bool) or not isinstance(amount, int) or amount < 1:
            raise ActionError(f"scroll: scroll_amount must be a positive integer, not {amount!r}")
        return [Scroll(*point(), amount if direction == "down" else -amount)], None
    if name == "wait":
        return [Wait(data.get("duration", 1.0))], None
    if name == "screenshot":
        return [], ""
    if name == "cursor_position":
        if pointer.at is None:
            return [], NO_POSITION
        x, y = contract.from_screen(*pointer.at)
        return [], f"X={int(x)},Y={int(y)}"
    raise ActionError(f"computer: unknown action {name!r}")


class AnthropicFamily:
    """The Messages API conversation of one episode (see the module doc)."""

    path = "/messages"
    key_header: KeyHeader = "x-api-key"

    def __init__(self, config: AdapterConfig) -> None:
        self.config = config
        self.format = config.format
        self.reset()

    def reset(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.shown = 0
        """How many of the episode's conversation messages the model has been sent."""
        self.pending: list[tuple[str, str]] = []
        """(tool_use id, what it asked) of the last answer, each owed a tool_result."""
        self.answers: dict[str, str] = {}
        """Text results owed (cursor_position), by tool_use id."""
        self.errors: dict[str, str] = {}
        """Refused tool uses, by id: answered as `is_error` results."""
        self.note: str | None = None
        """Why the last answer as a whole was refused (one without a tool use)."""
        self.counts: list[tuple[str, int]] = []
        """(tool_use id, how many actions it became) of the last answer, in order."""

    def headers(self) -> dict[str, str]:
        headers = {"anthropic-version": API_VERSION}
        if self.format.beta is not None:
            headers["anthropic-beta"] = self.format.beta
        return headers

    def request(self, observation: Observation, shot: Shot) -> dict[str, Any]:
        image = {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": shot.png_base64},
        }
        content: list[dict[str, Any]] = []
        results = [self._result(tool_id, kind) for tool_id, kind in self.pending]
        screen_results = [r for r in results if isinstance(r["content"], list)]
        if screen_results:
            screen_results[-1]["content"] = [image]
        content += results
        if not self.messages:
            content.append(
                {
                    "type": "text",
                    "text": "Conversation (oldest first):\n" + conversation_text(observation),
                }
            )
        elif len(observation.conversation) > self.shown:
            content.append(
                {
                    "type": "text",
                    "text": "New messages from the user:\n"
                    + conversation_text(observation, self.shown),
                }
            )
        if self.note:
            content.append({"type": "text", "text": f"Your last answer was refused: {self.note}"})
        if not screen_results:
            content.append(image)
        self.shown = len(observation.conversation)
        self.pending, self.answers, self.errors, self.note = [], {}, {}, None
        self.messages.append({"role": "user", "content": content})
        self._trim_images()
        sent_w, sent_h = shot.contract.sent
        return {
            "model": self.config.model,
            "max_tokens": self.config.max_tokens,
            "temperature": self.config.temperature,
            "system": SYSTEM_PROMPT.format(ending=ending(self.config.text_turn)),
            "tools": [
                {
                    "type": self.format.tool,
                    "name": "computer",
                    "display_width_px": sent_w,
                    "display_height_px": sent_h,
                    "display_number": 1,
                },
                *CLIENT_TOOLS,
            ],
            "messages": copy.deepcopy(self.messages),
        }

    def _result(self, tool_id: str, kind: str) -> dict[str, Any]:
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_id}
        if tool_id in self.errors:
            result.update(content=self.errors[tool_id], is_error=True)
        elif tool_id in self.answers:
            result["content"] = self.answers[tool_id]
        elif kind == "ask_user":
            result["content"] = "The user's answer follows."
        elif kind in ("give_up", "done"):
            result["content"] = "Noted."
        else:
            result["content"] = []  # the screen after it: the screenshot, if it is the last
        return result

    def _trim_images(self) -> None:
        """Keep the newest `images_kept` screenshots; older ones become a note."""
        images = [
            image
            for message in self.messages
            if message["role"] == "user"
            for image in _images(message["content"])
        ]
        for image in images[: -self.config.images_kept]:
            image.clear()
            image.update(type="text", text=OMITTED)

    def read(
        self, data: dict[str, Any], shot: Shot, pointer: Pointer, info: dict[str, Any]
    ) -> Reading:
        content = data.get("content")
        if not isinstance(content, list):
            raise MalformedAction("the answer has no content list", data)
        self.messages.append({"role": "assistant", "content": content})
        info["stop_reason"] = data.get("stop_reason")
        text = "".join(
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
        if text:
            info["content"] = text
        uses = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]
        info["tool_uses"] = [{"name": u.get("name"), "input": u.get("input")} for u in uses]
        self.pending = [(str(u.get("id")), str(u.get("name"))) for u in uses]
        self.counts = []
        if not uses:
            if data.get("stop_reason") == "max_tokens":
                raise MalformedAction("the answer was cut off at max_tokens", data)
            return text_turn(self.config.text_turn, text, info, data)
        start = pointer.at
        actions: list[Action] = []
        look = False
        for use in uses:
            tool_id, name, arguments = str(use.get("id")), use.get("name"), use.get("input")
            try:
                found: list[Action]
                if name == "computer":
                    found, answer = computer_action(arguments, shot, pointer)
                    if answer:
                        self.answers[tool_id] = answer
                    look = look or answer is not None
                elif name == "ask_user":
                    found = [Ask((arguments or {}).get("question"))]  # type: ignore[arg-type]
                elif name == "give_up":
                    found = [Fail(str((arguments or {}).get("reason", "")))]
                elif name == "done":
                    found = [Done(tool_answer(arguments))]
                else:
                    raise ActionError(
                        f"unknown tool {name!r}; the tools are computer, ask_user, done, give_up"
                    )
                for action in found:
                    validate_action(action, str(name))
                    pointer.follow(action)
                actions += found
                self.counts.append((tool_id, len(found)))
            except ActionError as exc:
                pointer.at = start
                for other, _ in self.pending:
                    self.errors[other] = "not run: another action of this answer was refused"
                self.errors[tool_id] = str(exc)
                raise malformed(exc, use) from None
        return Reading(actions, look_again=look and not actions)

    def rejected(self, reason: str) -> None:
        if not self.pending:
            self.note = reason

    def dropped(self, count: int) -> None:
        """The last `count` actions of the answer were not taken (the user spoke first):
        the tool uses none of whose actions ran are answered as errors saying so."""
        left = count
        for tool_id, made in reversed(self.counts):
            if left <= 0 or made > left:
                break
            left -= made
            self.errors[tool_id] = "not run: a new message from the user came first"

    def usage(self, data: dict[str, Any]) -> dict[str, Any]:
        usage = data.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        prompt, completion = usage.get("input_tokens"), usage.get("output_tokens")
        total = (
            prompt + completion if isinstance(prompt, int) and isinstance(completion, int) else None
        )
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}


def _images(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The image blocks of a user turn, those inside tool results included."""
    found = []
    for block in content:
        if block.get("type") == "image":
            found.append(block)
        elif block.get("type") == "tool_result" and isinstance(block.get("content"), list):
            found += [inner for inner in block["content"] if inner.get("type") == "image"]
    return found
