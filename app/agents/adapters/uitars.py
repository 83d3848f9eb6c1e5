"""UI-TARS text actions (`Thought: ... Action: click(start_box='(x,y)')`), read with
`ast`, never run.

| action | DeskLoop |
|---|---|
| `click(start_box=...)`, `left_double`, `left_triple`, `right_single`, `middle` | `click` |
| `drag(start_box=..., end_box=...)` | `drag` |
| `hotkey(key='ctrl c')` (keys separated by spaces) | `key` |
| `press(key=...)` | `key` |
| `type(content='...')` (a trailing `\\n` submits) | `type` |
| `scroll(start_box=..., direction='down' or 'up')` | `scroll` of 5 notches |
| `mouse_move(start_box=...)`, `hover` | `move` |
| `wait()` | `wait` 5 s (UI-TARS's own meaning) |
| `finished(content='...')` | DONE, the content its answer (text, or JSON where it reads as JSON) |
| `call_user()` | ASK, the question being the Thought |

A box is written `(x,y)`, `<|box_start|>(x,y)<|box_end|>`, `[x1,y1,x2,y2]` (its centre),
`<point>x y</point>` or `<bbox>x1 y1 x2 y2</bbox>`; its numbers follow the adapter's
coordinate contract (UI-TARS 1.0: 0-1000; UI-TARS-1.5: pixels of the smart-resized image,
`--coords qwen-grid`).
"""

from __future__ import annotations

import ast
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

# The action space as UI-TARS's published computer-use prompt states it (bytedance/UI-TARS,
# Apache-2.0): the model is trained on these words, so they are kept, with DeskLoop's
# notes on the conversation and on returned values added.
SYSTEM_PROMPT = """\
You are a GUI agent. You are given a task and your action history, with screenshots. \
You need to perform the next action to complete the task.

## Output Format
```
Thought: ...
Action: ...
```

## Action Space
click(start_box='<|box_start|>(x1,y1)<|box_end|>')
left_double(start_box='<|box_start|>(x1,y1)<|box_end|>')
right_single(start_box='<|box_start|>(x1,y1)<|box_end|>')
drag(start_box='<|box_start|>(x1,y1)<|box_end|>', end_box='<|box_start|>(x3,y3)<|box_end|>')
hotkey(key='')
type(content='') #If you want to submit your input, use "\\n" at the end of `content`.
scroll(start_box='<|box_start|>(x1,y1)<|box_end|>', direction='down or up or right or left')
wait() #Sleep for 5s and take a screenshot to check for any changes.
finished(content='xxx') # Use escape characters \\', \\", and \\n in content part to ensure \
we can parse the content in normal python string format.
call_user() # Submit the task and call the user when the task is unsolvable, or when you \
need the user's help.

## Note
- Use English in `Thought` part.
- Write a small plan and finally summarize your next action (with its target element) in \
one sentence in `Thought` part.
- Earlier user messages stay in force unless a later one says otherwise; the latest is \
marked ACTIVE INSTRUCTION.
- When the task asks for a value (a number, a name, a list), put only that value in \
finished's content, e.g. finished(content='2').
"""

SCROLL_NOTCHES = 5
WAIT_SECONDS = 5.0
_THOUGHT = re.compile(r"(?:Thought|Reflection):\s*(.*?)(?=\n\s*Action:|\Z)", re.DOTALL)
_ACTION = re.compile(r"Action:\s*(.*)", re.DOTALL)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _box(value: Any, contract: CoordinateContract, what: str) -> tuple[int, int]:
    if not isinstance(value, str):
        raise ActionError(f"{what}: a box is a string like '(x,y)', not {value!r}")
    numbers = [float(n) for n in _NUMBER.findall(re.sub(r"<\|?/?\w+\|?>", " ", value))]
    if len(numbers) == 2:
        x, y = numbers
    elif len(numbers) == 4:
        x, y = (numbers[0] + numbers[2]) / 2, (numbers[1] + numbers[3]) / 2
    else:
        raise ActionError(f"{what}: {value!r} is neither a point (x,y) nor a box [x1,y1,x2,y2]")
    return contract.to_screen(x, y, what)


def _calls(text: str) -> list[ast.Call]:
    found = _ACTION.search(text)
    if found is None:
        raise ActionError("no 'Action:' line")
    source = found.group(1).strip().strip("`").strip()
    calls = []
    for chunk in re.split(r"\n\s*\n", source):
        chunk = chunk.strip()
        if not chunk:
            continue
        try:
            node = ast.parse(chunk, mode="eval").body
        except SyntaxError as exc:
            raise ActionError(f"the action {chunk!r} does not parse: {exc.msg}") from None
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            raise ActionError(f"the action {chunk!r} is not a call like click(start_box=...)")
        calls.append(node)
    if not calls:
        raise ActionError("the 'Action:' line is empty")
    return calls


def _kwargs(call: ast.Call, what: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    if call.args:
        raise ActionError(f"{what}: arguments are named (start_box=..., content=...)")
    for keyword in call.keywords:
        if keyword.arg is None:
            raise ActionError(f"{what}: **kwargs are not read")
        try:
            values[keyword.arg] = ast.literal_eval(keyword.value)
        except (ValueError, TypeError, SyntaxError):
            raise ActionError(f"{what}: {keyword.arg} must be a literal string") from None
    return values


def _one(call: ast.Call, contract: CoordinateContract, thought: str) -> Action:
    assert isinstance(call.func, ast.Name)
    name = call.func.id
    args = _kwargs(call, name)
    start = args.get("start_box", args.get("point", args.get("start_point")))
    clicks = {
        "click": (1, "left"),
        "left_single": (1, "left"),
        "left_double": (2, "left"),
        "left_triple": (3, "left"),
        "right_single": (1, "right"),
        "middle": (1, "middle"),
    }
    if name in clicks:
        count, button = clicks[name]
        return Click(*_box(start, contract, name), button, count)  # type: ignore[arg-type]
    if name in ("mouse_move", "hover", "move_to"):
        return Move(*_box(start, contract, name))
    if name in ("drag", "select"):
        end = args.get("end_box", args.get("end_point"))
        return Drag(*_box(start, contract, f"{name} start"), *_box(end, contract, f"{name} end"))
    if name in ("hotkey", "press"):
        keys = args.get("key", args.get("hotkey"))
        if not isinstance(keys, str) or not keys.strip():
            raise ActionError(f"{name}: key must name keys, like key='ctrl c'")
        return Key(combo_of(keys.replace("+", " ").split()))
    if name == "type":
        content = args.get("content")
        if not isinstance(content, str) or not content:
            raise ActionError("type: content must be non-empty text")
        return Type(content)
    if name == "scroll":
        direction = args.get("direction")
        if direction not in ("down", "up"):
            raise ActionError(
                f"scroll: direction {direction!r} is not read; DeskLoop scrolls down or up"
            )
        x, y = _box(start, contract, name)
        return Scroll(x, y, SCROLL_NOTCHES if direction == "down" else -SCROLL_NOTCHES)
    if name == "wait":
        return Wait(WAIT_SECONDS)
    if name == "finished":
        # UI-TARS's own way to return content (its prompt's `finished(content='xxx')`):
        # the content is the DONE's answer, read as JSON where it is JSON (see
        # `answer_from_text`); finished() or empty content is a DONE without one.
        content = args.get("content")
        if content is not None and not isinstance(content, str):
            raise ActionError(f"finished: content must be text, not {content!r}")
        return Done(answer_from_text(content or ""))
    if name == "call_user":
        return Ask(thought or "I need your help to go on.")
    raise ActionError(f"{name}() is not in UI-TARS's action space")


def read_uitars(text: str, contract: CoordinateContract, pointer: Pointer) -> Reading:
    """The actions of one UI-TARS answer, in screen pixels.

    Raises:
        MalformedAction: no Action line, or an action that is not UI-TARS's.
    """
    thought_match = _THOUGHT.search(text)
    thought = thought_match.group(1).strip() if thought_match else ""
    start = pointer.at
    try:
        actions = [_one(call, contract, thought) for call in _calls(text)]
        for action in actions:
            validate_action(action, "UI-TARS")
            pointer.follow(action)
    except ActionError as exc:
        pointer.at = start
        raise MalformedAction(str(exc), text) from None
    return Reading(actions)
