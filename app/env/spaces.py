"""The Gymnasium spaces of `DeskLoopEnv`, and the action form that lies in them.

Observation (a `Dict`):
    screen        Box uint8 (height, width, 3): the desktop's screen
    instruction   text: the active instruction (the latest user message)
    messages      Sequence of Dict(role, kind, text, step, source), oldest first
    step          Discrete(budget + 1): agent turns taken

Action (a `Dict`; every field is always present, each kind reads only its own):
    kind     Discrete(10), an index into `app.core.actions.KINDS`:
             0 click, 1 move, 2 drag, 3 scroll, 4 type, 5 key, 6 wait, 7 done, 8 ask, 9 fail
    point    MultiDiscrete([width, height]): the pixel x, y of click, move, scroll,
             and where a drag starts
    end      MultiDiscrete([width, height]): where a drag ends
    button   Discrete(3): left, middle, right (click, drag)
    count    Discrete(3, start=1): single, double, triple click
    dy       Discrete(21, start=-10): scroll notches, positive down (0 is rejected)
    text     text of type, the combo of key ("ctrl+s"), the question of ask, the
             reason of fail, the answer of done (empty: a DONE without one; text that
             is JSON is that value, "2" the number 2 and '"2"' the text 2, as a
             person's typed answer is read)
    seconds  Box float32 (), 0..120: how long wait waits

Why a Dict of Discrete, MultiDiscrete, Box and Text rather than one Text of the
compact form: every field is typed and bounded, so a policy head per field
(categoricals for `kind` and for the pixels of `point`) fits it, and `sample()`
gives actions that mostly execute, where a random string almost never parses.
Points are MultiDiscrete, not a Box: pixels are integers, and RL libraries treat
integer spaces as categoricals, a Box as continuous (and Gymnasium's checker warns
that a pixel Box is not normalised). The free text that typing, key combos and
questions need stays a `Text`, the one field that language models fill. Libraries
that take no Dict or Text action (Stable-Baselines3) need a wrapper that fixes
`text` and flattens the rest (into a MultiDiscrete), as for any Dict space.
Language agents may keep sending the compact form (``{"click": [10, 20]}``,
``"done"``): `step` takes both.

An action in the space can still be invalid (`dy` 0, a `key` text that names no
key, an empty `type` text): it is a rejected step, as a malformed action always was.

Text spaces hold what a `type` action can type: every character of the Basic
Multilingual Plane but the control characters, with newline and tab. Task
messages use symbols such as "×" and "°", so a narrower set (Gymnasium's default
is letters and digits) would put real observations outside the space. A message
with a character beyond the BMP (an emoji) lies outside it, and is still returned.
"""

from __future__ import annotations

import functools
import string
from collections.abc import Mapping
from dataclasses import MISSING, asdict
from typing import Any

import numpy as np
from gymnasium import spaces

from app.core.actions import (
    BUTTONS,
    KINDS,
    MAX_TEXT_LENGTH,
    MAX_WAIT_SECONDS,
    Action,
    action_fields,
    action_kind,
    answer_from_text,
    answer_to_text,
)
from app.core.errors import ActionError
from app.core.keys import char_keysym

MAX_SCROLL = 10
"""Most wheel notches one scroll of the space takes (the compact form has no limit)."""
MAX_MESSAGE_LENGTH = 100_000
"""Longest message text in an observation: task messages and users' answers run to
a few thousand characters; the bound is for the space, nothing is cut."""
_NAME_LENGTH = 32
"""Longest role, kind or source name (`app.core.conversation`'s literals)."""

# Where each field of an action (app.core.actions) lives in the space's form:
# a space field, and for points the coordinate's index in it.
_SOURCES: dict[str, tuple[str, int | None]] = {
    "x": ("point", 0),
    "y": ("point", 1),
    "x1": ("point", 0),
    "y1": ("point", 1),
    "x2": ("end", 0),
    "y2": ("end", 1),
    "button": ("button", None),
    "count": ("count", None),
    "dy": ("dy", None),
    "text": ("text", None),
    "combo": ("text", None),
    "question": ("text", None),
    "reason": ("text", None),
    "seconds": ("seconds", None),
    # A DONE's answer travels as text; empty text is a DONE without one.
    "answer": ("text", None),
}
ACTION_FIELDS = ("kind", "point", "end", "button", "count", "dy", "text", "seconds")


@functools.cache
def typable_characters() -> str:
    """Every character of the BMP that a `type` action can type (`char_keysym`'s own
    rule, so the space and the action's validation cannot disagree)."""
    chars = []
    for code in range(0x10000):
        if 0xD800 <= code <= 0xDFFF:  # surrogates are halves of characters, not text
            continue
        try:
            char_keysym(chr(code))
        except ActionError:
            continue
        chars.append(chr(code))
    return "".join(chars)


class TypableText(spaces.Text):
    """A `Text` over `typable_characters()`. Only its repr is its own: Text's would
    print all 63,000 characters."""

    def __init__(self, max_length: int, *, min_length: int = 0) -> None:
        super().__init__(max_length, min_length=min_length, charset=typable_characters())

    def __repr__(self) -> str:
        return f"TypableText({self.min_length}, {self.max_length})"


def observation_space(width: int, height: int, max_steps: int) -> spaces.Dict:
    """The observation space of a task with a step budget of `max_steps`."""
    text = TypableText(MAX_MESSAGE_LENGTH)
    name = spaces.Text(_NAME_LENGTH, charset=string.ascii_lowercase + "_")
    # Every turn counts against the budget, so no step index goes past it.
    step = spaces.Discrete(max_steps + 1)
    message = spaces.Dict({"role": name, "kind": name, "text": text, "step": step, "source": name})
    return spaces.Dict(
        {
            "screen": spaces.Box(0, 255, (height, width, 3), np.uint8),
            "instruction": text,
            "messages": spaces.Sequence(message),
            "step": step,
        }
    )


def action_space(width: int, height: int) -> spaces.Dict:
    """The action space on a screen of `width` × `height` (see the module docstring)."""
    return spaces.Dict(
        {
            "kind": spaces.Discrete(len(KINDS)),
            "point": spaces.MultiDiscrete([width, height]),
            "end": spaces.MultiDiscrete([width, height]),
            "button": spaces.Discrete(len(BUTTONS)),
            "count": spaces.Discrete(3, start=1),
            "dy": spaces.Discrete(2 * MAX_SCROLL + 1, start=-MAX_SCROLL),
            "text": TypableText(MAX_TEXT_LENGTH),
            "seconds": spaces.Box(0.0, MAX_WAIT_SECONDS, (), np.float32),
        }
    )


def is_space_action(raw: Any) -> bool:
    """Whether `raw` is in the space's form: a mapping whose kind is a number (the
    explicit form of app.core.actions names its kind, ``{"kind": "click"}``)."""
    if not isinstance(raw, Mapping) or "kind" not in raw:
        return False
    kind = _scalar(raw["kind"])
    return isinstance(kind, int) and not isinstance(kind, bool)


def from_space(raw: Mapping[str, Any], where: str = "env action") -> dict[str, Any]:
    """The explicit form of an action given in the space's form; only the fields its
    kind reads are looked at (and `parse_action` validates them).

    Raises:
        ActionError: an unknown field or kind, or a field of the wrong shape or type.
    """
    unknown = set(raw) - set(ACTION_FIELDS)
    if unknown:
        raise ActionError(
            f"{where}: the action space has no field(s) {', '.join(sorted(map(str, unknown)))}; "
            f"fields: {', '.join(ACTION_FIELDS)}"
        )
    index = _integer(raw["kind"], "kind", where)
    if not 0 <= index < len(KINDS):
        raise ActionError(f"{where}: kind must be 0..{len(KINDS) - 1}, got {index}")
    kind = KINDS[index]
    explicit: dict[str, Any] = {"kind": kind}
    for field in action_fields(kind):
        source, coordinate = _SOURCES[field.name]
        if source not in raw:
            if field.default is MISSING:
                raise ActionError(f"{where}: {kind} needs the field {source!r}")
            continue
        value = raw[source]
        if field.name == "answer" and not _scalar(value):
            continue
        if coordinate is not None:
            explicit[field.name] = _point(value, source, where)[coordinate]
        elif source == "button":
            button = _integer(value, source, where)
            if not 0 <= button < len(BUTTONS):
                raise ActionError(f"{where}: button must be 0..{len(BUTTONS) - 1}, got {button}")
            explicit[field.name] = BUTTONS[button]
        elif field.name == "answer":
            # Text is the space's only carrier: read as the people and the text-only
            # model families' answers are ("2" the number, '"2"' the text 2).
            explicit[field.name] = answer_from_text(_text(value, where))
        elif source == "text":
            explicit[field.name] = _text(value, where)
        elif source == "seconds":
            explicit[field.name] = _number(value, source, where)
        else:
            explicit[field.name] = _integer(value, source, where)
    return explicit


def to_space(action: Action) -> dict[str, Any]:
    """`action` in the space's form, the fields its kind does not read at rest (for
    demonstrations: a reference solution's actions as a policy's targets)."""
    out: dict[str, Any] = {
        "kind": KINDS.index(action_kind(action)),
        "point": np.zeros(2, np.int64),
        "end": np.zeros(2, np.int64),
        "button": 0,
        "count": 1,
        "dy": 0,
        "text": "",
        "seconds": np.zeros((), np.float32),
    }
    for name, value in asdict(action).items():
        source, coordinate = _SOURCES[name]
        if name == "answer":
            out[source] = "" if value is None else answer_to_text(value)
            continue
        if coordinate is not None:
            out[source][coordinate] = value
        elif source == "button":
            out[source] = BUTTONS.index(value)
        elif source == "seconds":
            out[source] = np.asarray(value, np.float32)
        else:
            out[source] = value
    return out


def _scalar(value: Any) -> Any:
    """Python's own value of a numpy scalar or 0-d array (what spaces sample)."""
    if isinstance(value, np.ndarray) and value.shape == ():
        return value.item()
    if isinstance(value, np.generic):
        return value.item()
    return value


def _integer(value: Any, name: str, where: str) -> int:
    value = _scalar(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ActionError(f"{where}: {name} must be an integer, got {value!r}")
    return value


def _number(value: Any, name: str, where: str) -> float:
    value = _scalar(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ActionError(f"{where}: {name} must be a number, got {value!r}")
    return float(value)


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ActionError(f"{where}: text must be a string, got {value!r}")
    return str(value)  # np.str_ is a str; the stored action holds a plain one


def _point(value: Any, name: str, where: str) -> tuple[int, int]:
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):  # ragged lists
        array = np.zeros(0)
    if array.shape != (2,) or not np.issubdtype(array.dtype, np.integer):
        raise ActionError(f"{where}: {name} must be two integers (x, y), got {value!r}")
    return int(array[0]), int(array[1])
