"""What the model agent sends: the system prompt, the tools (every protocol action),
and the one user message describing the episode so far with the screenshot."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.agents.adapters.deskloop.config import ToolMode
from app.agents.base import Observation
from app.core.conversation import message_step

SYSTEM_PROMPT = """\
You operate a Linux desktop for a user. Each turn you see a screenshot ({width}x{height} \
pixels; coordinates are pixels of this screenshot, origin top-left) and the conversation \
with the user. Reply with exactly one action.
GUI actions: click(x, y, button, count), move(x, y), drag(x1, y1, x2, y2), scroll(x, y, dy) \
(dy > 0 scrolls down, in wheel notches), type(text), key(combo) (e.g. "ctrl+shift+s", \
"enter", "alt+f4"), wait(seconds).
When the latest user request is satisfied, call done; when the task asks you to return \
a value (a number, a name, a list), give it as done's answer. If something is unclear and you \
need the user's input, call ask(question). If you cannot complete the task, call \
fail(reason). Earlier user messages stay in force unless a later one says otherwise.
"""

JSON_FORMAT_PROMPT = """\
Answer with one JSON object and nothing else, naming the action in "action" and its \
arguments as the other keys, for example {"action": "click", "x": 100, "y": 200} or \
{"action": "key", "combo": "ctrl+s"} or {"action": "ask", "question": "..."} or \
{"action": "done"} or, when the task asks for a value, {"action": "done", "answer": 3}.
"""


def _prop(kind: str, description: str, **extra: Any) -> dict[str, Any]:
    return {"type": kind, "description": description, **extra}


_XY = {"x": _prop("integer", "x in screenshot pixels"), "y": _prop("integer", "y in pixels")}
_BUTTON = _prop("string", "mouse button", enum=["left", "middle", "right"])

TOOL_PARAMETERS: dict[str, tuple[str, dict[str, Any], list[str]]] = {
    "click": (
        "Click at a point (count 2 = double click).",
        {**_XY, "button": _BUTTON, "count": _prop("integer", "1, 2 or 3", enum=[1, 2, 3])},
        ["x", "y"],
    ),
    "move": ("Move the pointer to a point.", dict(_XY), ["x", "y"]),
    "drag": (
        "Press at (x1, y1), move to (x2, y2), release.",
        {
            "x1": _prop("integer", "start x"),
            "y1": _prop("integer", "start y"),
            "x2": _prop("integer", "end x"),
            "y2": _prop("integer", "end y"),
            "button": _BUTTON,
        },
        ["x1", "y1", "x2", "y2"],
    ),
    "scroll": (
        "Scroll the wheel at a point; dy > 0 scrolls down, < 0 up (notches).",
        {**_XY, "dy": _prop("integer", "wheel notches")},
        ["x", "y", "dy"],
    ),
    "type": ("Type text (use \\n for Enter).", {"text": _prop("string", "the text")}, ["text"]),
    "key": (
        "Press a key combination such as ctrl+s, enter, alt+f4.",
        {"combo": _prop("string", "key combo")},
        ["combo"],
    ),
    "wait": ("Wait before the next look.", {"seconds": _prop("number", "0..120")}, ["seconds"]),
    "done": (
        "The latest user request is satisfied.",
        {
            # No "type": an answer may be text or any JSON value.
            "answer": {
                "description": "only when the task asks for a returned value: that value "
                "(text, a number, a list or an object)"
            }
        },
        [],
    ),
    "ask": (
        "Ask the user a clarifying question (does not end the task).",
        {"question": _prop("string", "the question")},
        ["question"],
    ),
    "fail": ("Give up on the task.", {"reason": _prop("string", "why")}, ["reason"]),
}


def tool_definitions() -> list[dict[str, Any]]:
    """Every action of the protocol as an OpenAI tool, the same list for every task."""
    return [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": description,
                "parameters": {
                    "type": "object",
                    "properties": properties,
                    "required": required,
                    "additionalProperties": False,
                },
            },
        }
        for name, (description, properties, required) in TOOL_PARAMETERS.items()
    ]


@dataclass
class Turn:
    """One of the agent's earlier steps, as the next requests describe it."""

    step: int
    description: str
    rejected: str | None = None
    """Why the answer was refused, when it was."""


def request_messages(
    observation: Observation,
    history: Sequence[Turn],
    sent: tuple[int, int],
    image_url: str,
    tool_mode: ToolMode,
) -> list[dict[str, Any]]:
    """The request's messages: rebuilt from scratch each step (see the package doc)."""
    system = SYSTEM_PROMPT.format(width=sent[0], height=sent[1])
    if tool_mode == "json":
        system += JSON_FORMAT_PROMPT
    return [
        {"role": "system", "content": system},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": describe_state(observation, history)},
                {"type": "image_url", "image_url": {"url": image_url}},
            ],
        },
    ]


def describe_state(observation: Observation, history: Sequence[Turn]) -> str:
    """The conversation (the active instruction marked), `history`, the step count."""
    lines = ["Conversation so far (oldest first):"]
    active = observation.active_message
    for message in observation.conversation:
        who = "User" if message.role == "user" else "You"
        mark = "  <- ACTIVE INSTRUCTION" if message is active else ""
        where = message_step(message.step, message.role)
        lines.append(f"[{where}] {who} ({message.kind}): {message.text}{mark}")
    if history:
        lines.append("")
        lines.append("Your recent actions:")
        for turn in history:
            line = f"step {turn.step}: {turn.description}"
            if turn.rejected:
                line += f" -- REJECTED: {turn.rejected}"
            lines.append(line)
    lines.append("")
    lines.append(f"Steps taken: {observation.steps_taken}. The current screenshot follows.")
    return "\n".join(lines)
