"""The agent's action space: GUI actions (delivered over VNC) and DONE / ASK / FAIL.

Actions are small frozen dataclasses. `parse_action` accepts the compact form used
by scripted agents and reference solutions (``{"click": [10, 20]}``, ``"done"``,
``{"key": "ctrl+s"}``) and the explicit stored form (``{"kind": "click", "x": 10,
"y": 20}``); `action_to_dict` always writes the explicit form, which round-trips.
"""

from __future__ import annotations

import json
from dataclasses import Field, asdict, dataclass, fields
from typing import Any, Literal

from app.core.errors import ActionError
from app.core.keys import char_keysym, parse_combo

Button = Literal["left", "middle", "right"]
BUTTONS: tuple[Button, ...] = ("left", "middle", "right")


@dataclass(frozen=True)
class Click:
    x: int
    y: int
    button: Button = "left"
    count: int = 1


@dataclass(frozen=True)
class Move:
    x: int
    y: int


@dataclass(frozen=True)
class Drag:
    x1: int
    y1: int
    x2: int
    y2: int
    button: Button = "left"


@dataclass(frozen=True)
class Scroll:
    """Scroll at (x, y); positive dy scrolls down, negative up, in wheel notches."""

    x: int
    y: int
    dy: int


@dataclass(frozen=True)
class Type:
    text: str


@dataclass(frozen=True)
class Key:
    """A key combo such as 'ctrl+shift+s' or 'enter'."""

    combo: str


@dataclass(frozen=True)
class Wait:
    seconds: float


@dataclass(frozen=True)
class Done:
    answer: Any = None
    """A returned value, text or JSON (a number, a list, an object), for tasks that ask
    for one; None when the DONE carries none."""


@dataclass(frozen=True)
class Ask:
    question: str


@dataclass(frozen=True)
class Fail:
    reason: str


GuiAction = Click | Move | Drag | Scroll | Type | Key | Wait
Action = GuiAction | Done | Ask | Fail

_KINDS: dict[str, type[Any]] = {
    "click": Click,
    "move": Move,
    "drag": Drag,
    "scroll": Scroll,
    "type": Type,
    "key": Key,
    "wait": Wait,
    "done": Done,
    "ask": Ask,
    "fail": Fail,
}
_KIND_OF: dict[type[Any], str] = {cls: kind for kind, cls in _KINDS.items()}
# The kinds in a fixed order: app.env's action space numbers them by it (a Discrete),
# so policies trained on one release keep working on the next. Append new kinds only.
KINDS: tuple[str, ...] = tuple(_KINDS)

# Longest wait one action may ask for; longer pauses are a budget question.
MAX_WAIT_SECONDS = 120.0
MAX_TEXT_LENGTH = 10_000
MAX_ANSWER_LENGTH = 10_000
"""The most characters a DONE's answer may take, as JSON."""


def action_fields(kind: str) -> tuple[Field[Any], ...]:
    """The dataclass fields of an action kind ('click' → x, y, button, count)."""
    return fields(_KINDS[kind])


def action_kind(action: Action) -> str:
    return _KIND_OF[type(action)]


def is_gui_action(action: Action) -> bool:
    return not isinstance(action, Done | Ask | Fail)


def action_to_dict(action: Action) -> dict[str, Any]:
    return {"kind": action_kind(action), **asdict(action)}


def describe_action(action: Action) -> str:
    """A short human-readable line: 'click(120, 40)', 'key(ctrl+s)', 'ask: Which size?'."""
    match action:
        case Click(x, y, button, count):
            extra = "" if button == "left" and count == 1 else f", {button}, x{count}"
            return f"click({x}, {y}{extra})"
        case Move(x, y):
            return f"move({x}, {y})"
        case Drag(x1, y1, x2, y2, _):
            return f"drag({x1}, {y1} → {x2}, {y2})"
        case Scroll(x, y, dy):
            return f"scroll({x}, {y}, dy={dy})"
        case Type(text):
            shown = text if len(text) <= 40 else text[:37] + "..."
            return f"type({shown!r})"
        case Key(combo):
            return f"key({combo})"
        case Wait(seconds):
            return f"wait({seconds:g}s)"
        case Done(answer):
            if answer is None:
                return "DONE"
            shown = answer_text(answer)
            return f"DONE: {shown if len(shown) <= 60 else shown[:57] + '...'}"
        case Ask(question):
            return f"ASK: {question}"
        case Fail(reason):
            return f"FAIL: {reason}"
    raise AssertionError(f"unhandled action {action!r}")


def answer_text(answer: Any) -> str:
    """A DONE's answer as one line: text as it is, anything else as JSON."""
    if isinstance(answer, str):
        return answer
    return json.dumps(answer, ensure_ascii=False, sort_keys=True)


def answer_to_text(answer: Any) -> str:
    """The text that `answer_from_text` reads back as `answer`, exactly: text that
    would read as another JSON value ("2", "true") is written as a JSON string
    ('"2"'), anything else that is not text as JSON. For channels that carry only text
    (app.env's action space)."""
    if isinstance(answer, str) and answer_from_text(answer) == answer:
        return answer
    return json.dumps(answer, ensure_ascii=False, sort_keys=True)


def answer_from_text(text: str) -> Any:
    """A DONE's answer given as text only (UI-TARS's `finished(content=...)`, Qwen's
    `answer`, a string in pyautogui code, what a person types): text that is a JSON
    value other than null is that value (`2` the number, `["a", "b"]` a list, `"2"`
    the text 2), so a family that can only write text can still return a number;
    anything else is the text itself, spaces around it dropped. Empty text is no
    answer (None)."""
    stripped = text.strip()
    if not stripped:
        return None
    try:
        value = json.loads(stripped, parse_constant=_no_constant)
    except ValueError:
        return stripped
    return stripped if value is None else value


def _no_constant(name: str) -> Any:
    # NaN and Infinity are not JSON: such text stays text.
    raise ValueError(name)


def _as_int(value: Any, name: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ActionError(f"{where}: {name} must be an integer, got {value!r}")
    return value


def _coords(value: Any, names: tuple[str, ...], kind: str, where: str) -> dict[str, Any]:
    """Accept [x, y] / [x, y, extra] lists for the compact form."""
    if isinstance(value, list | tuple):
        if len(value) != len(names):
            raise ActionError(
                f"{where}: {kind} takes {len(names)} values ({', '.join(names)}), got {len(value)}"
            )
        return dict(zip(names, value, strict=True))
    if isinstance(value, dict):
        return dict(value)
    raise ActionError(f"{where}: {kind} expects a list {list(names)} or a mapping, got {value!r}")


def _build(kind: str, params: dict[str, Any], where: str) -> Action:
    cls = _KINDS[kind]
    allowed = {f.name for f in fields(cls)}
    unknown = set(params) - allowed
    if unknown:
        raise ActionError(
            f"{where}: {kind} has no field(s) {', '.join(sorted(unknown))}; "
            f"fields: {', '.join(sorted(allowed)) or 'none'}"
        )
    try:
        action = cls(**params)
    except TypeError as exc:
        raise ActionError(f"{where}: {kind}: {exc}") from None
    validate_action(action, where)
    return action  # type: ignore[no-any-return]


def validate_action(action: Action, where: str = "action") -> None:
    """Raise ActionError naming the problem if the action cannot be executed."""
    match action:
        case Click(x, y, button, count):
            _as_int(x, "x", where)
            _as_int(y, "y", where)
            if button not in BUTTONS:
                raise ActionError(f"{where}: button must be one of {BUTTONS}, got {button!r}")
            if _as_int(count, "count", where) not in (1, 2, 3):
                raise ActionError(f"{where}: count must be 1, 2 or 3, got {count}")
        case Move(x, y):
            _as_int(x, "x", where)
            _as_int(y, "y", where)
        case Drag(x1, y1, x2, y2, button):
            for name, val in (("x1", x1), ("y1", y1), ("x2", x2), ("y2", y2)):
                _as_int(val, name, where)
            if button not in BUTTONS:
                raise ActionError(f"{where}: button must be one of {BUTTONS}, got {button!r}")
        case Scroll(x, y, dy):
            _as_int(x, "x", where)
            _as_int(y, "y", where)
            if _as_int(dy, "dy", where) == 0:
                raise ActionError(f"{where}: scroll dy must not be 0")
        case Type(text):
            if not isinstance(text, str) or not text:
                raise ActionError(f"{where}: type needs non-empty text, got {text!r}")
            if len(text) > MAX_TEXT_LENGTH:
                raise ActionError(f"{where}: text longer than {MAX_TEXT_LENGTH} characters")
            for char in text:
                try:
                    char_keysym(char)
                except ActionError as exc:
                    raise ActionError(f"{where}: {exc}") from None
        case Key(combo):
            if not isinstance(combo, str):
                raise ActionError(f"{where}: key combo must be a string, got {combo!r}")
            try:
                parse_combo(combo)
            except ActionError as exc:
                raise ActionError(f"{where}: {exc}") from None
        case Wait(seconds):
            if isinstance(seconds, bool) or not isinstance(seconds, int | float):
                raise ActionError(f"{where}: wait seconds must be a number, got {seconds!r}")
            if not 0 <= seconds <= MAX_WAIT_SECONDS:
                raise ActionError(f"{where}: wait must be 0..{MAX_WAIT_SECONDS:g} s, got {seconds}")
        case Ask(question):
            if not isinstance(question, str) or not question.strip():
                raise ActionError(f"{where}: ask needs a question")
        case Fail(reason):
            if not isinstance(reason, str):
                raise ActionError(f"{where}: fail reason must be text, got {reason!r}")
        case Done(answer):
            if answer is None:
                return
            try:
                size = len(json.dumps(answer, allow_nan=False))
            except (TypeError, ValueError):
                raise ActionError(
                    f"{where}: done's answer must be text or JSON (numbers, lists, "
                    f"objects with text keys), got {type(answer).__name__}"
                ) from None
            if size > MAX_ANSWER_LENGTH:
                raise ActionError(
                    f"{where}: done's answer is {size} characters as JSON, more than "
                    f"{MAX_ANSWER_LENGTH}"
                )


_POSITIONAL: dict[str, tuple[str, ...]] = {
    "click": ("x", "y"),
    "move": ("x", "y"),
    "drag": ("x1", "y1", "x2", "y2"),
    "scroll": ("x", "y", "dy"),
}
_SCALAR: dict[str, str] = {
    "type": "text",
    "key": "combo",
    "wait": "seconds",
    "ask": "question",
    "fail": "reason",
}


def parse_action(raw: Any, where: str = "action") -> Action:
    """Parse the compact or explicit form of one action; errors name `where`."""
    if isinstance(raw, str):
        if raw.lower() in ("done", "fail", "ask"):
            kind = raw.lower()
            if kind == "done":
                return Done()
            raise ActionError(f"{where}: {kind} needs a value ({kind}: ...)")
        raise ActionError(f"{where}: unknown action {raw!r}; known: {', '.join(_KINDS)}")
    if not isinstance(raw, dict) or not raw:
        raise ActionError(f"{where}: an action is a mapping like {{click: [x, y]}}, got {raw!r}")
    if "kind" in raw:
        kind = raw["kind"]
        if kind not in _KINDS:
            raise ActionError(f"{where}: unknown action kind {kind!r}; known: {', '.join(_KINDS)}")
        params = {k: v for k, v in raw.items() if k != "kind"}
        return _build(kind, params, where)
    if len(raw) != 1:
        raise ActionError(f"{where}: one action per entry, got keys {', '.join(map(str, raw))}")
    kind, value = next(iter(raw.items()))
    if kind not in _KINDS:
        raise ActionError(f"{where}: unknown action {kind!r}; known: {', '.join(_KINDS)}")
    if kind == "done":
        if value in (None, {}, True):
            return Done()
        if isinstance(value, dict) and set(value) == {"answer"}:
            return _build("done", dict(value), where)
        raise ActionError(
            f"{where}: done takes nothing or {{answer: VALUE}} (text or JSON), got {value!r}"
        )
    if kind in _POSITIONAL:
        return _build(kind, _coords(value, _POSITIONAL[kind], kind, where), where)
    if isinstance(value, dict):
        return _build(kind, dict(value), where)
    return _build(kind, {_SCALAR[kind]: value}, where)


def compact_action(action: Action) -> Any:
    """The compact form `parse_action` reads back as the same action: what a compiled
    reference script is written in (``{click: [120, 40]}``, ``{key: ctrl+s}``, ``done``)."""
    kind = action_kind(action)
    if isinstance(action, Done):
        return "done" if action.answer is None else {"done": {"answer": action.answer}}
    values = asdict(action)
    if kind in _POSITIONAL:
        names = _POSITIONAL[kind]
        defaults = {f.name: f.default for f in fields(action) if f.name not in names}
        if all(values[name] == default for name, default in defaults.items()):
            return {kind: [values[name] for name in names]}
        return {kind: values}
    return {kind: values[_SCALAR[kind]]}
