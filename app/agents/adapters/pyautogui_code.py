"""pyautogui code (OSWorld and its descendants: OpenCUA, Agent-S, Jedi) read with
Python's `ast`, never run.

The model answers with a code block (or bare code) of `pyautogui` calls and
`time.sleep`, or one of the words `DONE`, `FAIL`, `WAIT`; DeskLoop adds `ASK("...")`
(OSWorld has no way to ask). Each call becomes DeskLoop actions:

| code | actions |
|---|---|
| `pyautogui.click(x, y, clicks=1, button='left')`, `doubleClick`, `tripleClick`, ... | `click` |
| `pyautogui.moveTo(x, y)` | `move` |
| `pyautogui.dragTo(x, y, button='left')` | `drag` from where the pointer is |
| `mouseDown(x, y)`, `moveTo`..., `mouseUp(x, y)` | one `drag` (or a `click` in place) |
| `pyautogui.scroll(n, x, y)` (`vscroll`) | `scroll`, dy = -n (pyautogui's positive is up) |
| `pyautogui.write(text)`, `typewrite(text)` | `type`; `typewrite([...])` presses the keys |
| `pyautogui.press(key or [keys], presses=n)` | `key` per press |
| `pyautogui.hotkey(*keys)` | one `key` combo |
| `pyautogui.keyDown(k)` ... `keyUp(k)` | the held modifiers join the keys pressed between |
| `time.sleep(s)` | `wait`; beside other calls, one of 2 s or less is dropped (pacing) |
| `DONE`, `FAIL`, `WAIT`, `ASK("q")`, `FAIL("why")` | DONE, FAIL, wait 1 s, ASK |
| `DONE(answer)`, `agent.done(return_value)` | DONE with an answer |
| `computer.terminate(status='success', answer=...)` | DONE with an answer |

A scroll without a point scrolls where the pointer is (the screen's middle before any
action has put it somewhere). Setting `pyautogui.PAUSE` or `FAILSAFE` is ignored.
Anything else (an assignment, a loop, `os.system`, a call with a computed argument)
refuses the whole answer before any of it acts, with the reason. `computer.terminate(
status='success'|'failure')` (OpenCUA) and `agent.done()` / `agent.fail()` (Agent-S)
are read as DONE and FAIL. A DONE may carry an answer: Agent-S's
`agent.done(return_value=...)`, the `answer=` that OpenCUA-style parsers read from
`computer.terminate(status='success', answer='42')`, and DeskLoop's own `DONE(answer)`
(OSWorld's DONE has none). A string answer that reads as JSON is that value.
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
    Button,
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
from app.core.keys import combo_of, normalize_key

_FENCE = re.compile(r"```(?:python|py)?[ \t]*\n?(.*?)```", re.DOTALL)
_WORDS = {"DONE", "FAIL", "WAIT"}
# Seconds a bare WAIT waits (OSWorld's agent sleeps between looks; the runner settles).
WAIT_SECONDS = 1.0
PACING = 2.0
"""A `time.sleep` this short beside other calls is pacing, left to the runner's settle."""


def code_of(text: str) -> str:
    """The code of an answer: its fenced blocks joined, else the whole text."""
    blocks = _FENCE.findall(text)
    return "\n".join(blocks) if blocks else text


def fenced(text: str) -> bool:
    """Whether the answer holds a code block (else its whole text is read as code)."""
    return bool(_FENCE.search(text))


class _Reader:
    def __init__(self, contract: CoordinateContract, pointer: Pointer) -> None:
        self.contract = contract
        self.pointer = pointer
        self.actions: list[Action] = []
        self.held: list[str] = []
        """Keys held by keyDown, in order, until their keyUp."""
        self.held_since: dict[str, int] = {}
        """How many actions there were when each held key went down."""
        self.ended = False
        self.down: tuple[tuple[int, int], Button] | None = None
        """Where mouseDown pressed, and the button, until its mouseUp: a drag."""

    def add(self, action: Action) -> None:
        if self.down is not None:
            raise ActionError(
                f"{_describe(action)} while the mouse button is held down (mouseDown): "
                "only moveTo and mouseUp may come before its mouseUp"
            )
        if self.ended:
            raise ActionError(f"{_describe(action)} comes after the episode's end word")
        validate_action(action, "pyautogui")
        self.pointer.follow(action)
        self.actions.append(action)
        if isinstance(action, Done | Fail | Ask):
            self.ended = True

    def point(self, x: Any, y: Any, what: str) -> tuple[int, int]:
        if x is None and y is None:
            return self.pointer.need(what)
        return self.contract.to_screen(x, y, what)

    def no_held(self, what: str) -> None:
        if self.held:
            raise ActionError(
                f"{what} while {'+'.join(self.held)} is held down: DeskLoop's pointer "
                "actions hold no keys"
            )

    def press(self, combo_keys: list[str]) -> None:
        keys = [*self.held, *combo_keys]
        self.add(Key(combo_of(keys)))

    def key_down(self, key: str) -> None:
        if key not in self.held:
            self.held.append(key)
            self.held_since[key] = len(self.actions)

    def key_up(self, key: str) -> None:
        """A key let go: when nothing was pressed while it was down, it was a press of
        its own (keyDown('esc') keyUp('esc'); keyDown('shift') keyUp('shift'))."""
        if key not in self.held:
            return
        since = self.held_since.pop(key)
        pressed = any(isinstance(a, Key) for a in self.actions[since:])
        if not pressed:
            self.add(Key(combo_of(list(self.held))))
        self.held.remove(key)


def _describe(action: Action) -> str:
    return type(action).__name__.lower()


def _value(node: ast.expr, what: str) -> Any:
    """A literal argument (a number, a string, a list of them); nothing computed."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise ActionError(
            f"{what}: arguments must be literal values, not {ast.unparse(node)!r}"
        ) from None


def _args(call: ast.Call, names: tuple[str, ...], what: str) -> dict[str, Any]:
    """The call's arguments by name (positional ones named in order)."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        raise ActionError(f"{what}: *args and **kwargs are not read")
    if len(call.args) > len(names):
        raise ActionError(f"{what} takes at most {len(names)} positional arguments")
    values = {name: _value(arg, what) for name, arg in zip(names, call.args, strict=False)}
    for keyword in call.keywords:
        assert keyword.arg is not None
        if keyword.arg in values:
            raise ActionError(f"{what}: {keyword.arg} given twice")
        values[keyword.arg] = _value(keyword.value, what)
    return values


_IGNORED = {"duration", "interval", "tween", "logScreenshot", "_pause", "pause"}


def _only(values: dict[str, Any], allowed: set[str], what: str) -> None:
    unknown = set(values) - allowed - _IGNORED
    if unknown:
        raise ActionError(f"{what}: no argument(s) {', '.join(sorted(unknown))}")


def _button(value: Any, what: str) -> Button:
    names = {
        "left": "left",
        "right": "right",
        "middle": "middle",
        "primary": "left",
        "secondary": "right",
    }
    if value not in names:
        raise ActionError(f"{what}: button must be left, middle or right, not {value!r}")
    return names[value]  # type: ignore[return-value]


def _keys(value: Any, what: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return list(value)
    raise ActionError(f"{what}: keys must be a string or a list of strings, not {value!r}")


def _click(reader: _Reader, call: ast.Call, what: str, count: int, button: Button) -> None:
    values = _args(call, ("x", "y", "clicks", "interval", "button"), what)
    _only(values, {"x", "y", "clicks", "button"}, what)
    reader.no_held(what)
    x, y = reader.point(values.get("x"), values.get("y"), what)
    clicks = values.get("clicks", count)
    if "button" in values:
        button = _button(values["button"], what)
    reader.add(Click(x, y, button, clicks))


def _pyautogui(reader: _Reader, name: str, call: ast.Call) -> None:
    what = f"pyautogui.{name}"
    clicks = {
        "click": (1, "left"),
        "doubleClick": (2, "left"),
        "tripleClick": (3, "left"),
        "rightClick": (1, "right"),
        "middleClick": (1, "middle"),
    }
    if name in clicks:
        count, button = clicks[name]
        _click(reader, call, what, count, button)  # type: ignore[arg-type]
    elif name == "moveTo":
        values = _args(call, ("x", "y", "duration"), what)
        _only(values, {"x", "y"}, what)
        reader.no_held(what)
        where = reader.point(values.get("x"), values.get("y"), what)
        if reader.down is not None:
            reader.pointer.at = where  # the drag goes on: its end is where mouseUp lets go
        else:
            reader.add(Move(*where))
    elif name in ("mouseDown", "mouseUp"):
        values = _args(call, ("x", "y", "button", "duration"), what)
        _only(values, {"x", "y", "button"}, what)
        reader.no_held(what)
        where = reader.point(values.get("x"), values.get("y"), what)
        button = _button(values.get("button", "left"), what)
        if name == "mouseDown":
            if reader.down is not None:
                raise ActionError(f"{what}: the button is already down")
            reader.down = (where, button)
            reader.pointer.at = where
        else:
            if reader.down is None:
                raise ActionError(f"{what} without a mouseDown before it")
            start, pressed = reader.down
            reader.down = None
            # Pressed and let go at one spot is a click; elsewhere, a drag.
            reader.add(Click(*start, pressed) if start == where else Drag(*start, *where, pressed))
    elif name == "dragTo":
        values = _args(call, ("x", "y", "duration", "tween", "button"), what)
        _only(values, {"x", "y", "button"}, what)
        reader.no_held(what)
        start = reader.pointer.need(what)
        end = reader.point(values.get("x"), values.get("y"), what)
        reader.add(Drag(*start, *end, _button(values.get("button", "left"), what)))
    elif name in ("scroll", "vscroll"):
        values = _args(call, ("clicks", "x", "y"), what)
        _only(values, {"clicks", "x", "y"}, what)
        reader.no_held(what)
        amount = values.get("clicks")
        if isinstance(amount, bool) or not isinstance(amount, int | float) or amount == 0:
            raise ActionError(f"{what}: clicks must be a non-zero number, not {amount!r}")
        if values.get("x") is None and values.get("y") is None and reader.pointer.at is None:
            # pyautogui scrolls wherever the pointer is; before any action put it
            # somewhere, the middle of the screen stands in (a scroll clicks nothing).
            x, y = reader.contract.screen[0] // 2, reader.contract.screen[1] // 2
        else:
            x, y = reader.point(values.get("x"), values.get("y"), what)
        reader.add(Scroll(x, y, -round(amount) or (-1 if amount > 0 else 1)))
    elif name in ("write", "typewrite"):
        values = _args(call, ("message", "interval"), what)
        _only(values, {"message"}, what)
        message = values.get("message")
        if isinstance(message, list | tuple):
            for key in _keys(message, what):
                reader.press([key])
        elif isinstance(message, str):
            if reader.held:
                for char in message:
                    reader.press([char])
            else:
                reader.add(Type(message))
        else:
            raise ActionError(f"{what}: message must be text, not {message!r}")
    elif name == "press":
        values = _args(call, ("keys", "presses", "interval"), what)
        _only(values, {"keys", "presses"}, what)
        presses = values.get("presses", 1)
        if isinstance(presses, bool) or not isinstance(presses, int) or not 1 <= presses <= 50:
            raise ActionError(f"{what}: presses must be 1..50, not {presses!r}")
        for _ in range(presses):
            for key in _keys(values.get("keys"), what):
                reader.press([key])
    elif name == "hotkey":
        keys = [_value(arg, what) for arg in call.args]
        if len(keys) == 1 and isinstance(keys[0], list | tuple):
            keys = list(keys[0])
        reader.press(_keys(keys, what))
    elif name in ("keyDown", "keyUp"):
        values = _args(call, ("key",), what)
        _only(values, {"key"}, what)
        named = values.get("key")
        if not isinstance(named, str):
            raise ActionError(f"{what}: key must be a string, not {named!r}")
        normal = normalize_key(named)
        if name == "keyDown":
            reader.key_down(normal)
        else:
            reader.key_up(normal)
    else:
        raise ActionError(f"{what} is not one of the calls DeskLoop reads")


def _end_call(reader: _Reader, target: str, name: str, call: ast.Call) -> bool:
    """The protocol's words written as calls; False when `call` is none of them."""
    what = f"{target}.{name}" if target else name
    if (target, name) == ("", "ASK"):
        (question,) = [_value(a, what) for a in call.args] or [None]
        if not isinstance(question, str) or not question.strip():
            raise ActionError("ASK needs the question as a string")
        reader.add(Ask(question))
    elif (target, name) in (("", "FAIL"), ("agent", "fail")):
        reasons = [_value(a, what) for a in call.args]
        reader.add(Fail(str(reasons[0]) if reasons else "the model gave up"))
    elif (target, name) in (("", "DONE"), ("agent", "done")):
        # Agent-S's `agent.done(return_value=...)`; `DONE(answer)` is DeskLoop's
        # extension of OSWorld's bare DONE word.
        keyword = "return_value" if target == "agent" else "answer"
        values = _args(call, (keyword,), what)
        _only(values, {keyword}, what)
        reader.add(Done(_answer(values.get(keyword))))
    elif (target, name) in (("", "WAIT"), ("computer", "wait"), ("agent", "wait")):
        reader.add(Wait(WAIT_SECONDS))
    elif (target, name) == ("computer", "terminate"):
        # OpenCUA-style: terminate(status='success', answer='42') for a question's answer.
        values = _args(call, ("status", "answer"), what)
        status = values.get("status", "success")
        if status == "success":
            reader.add(Done(_answer(values.get("answer"))))
        else:
            reader.add(Fail(f"terminate(status={status!r})"))
    else:
        return False
    return True


def _answer(value: Any) -> Any:
    """A DONE's answer written as a Python literal: a string is read as text that may
    be JSON (`answer='42'` is the number 42, see `answer_from_text`), a tuple as a
    list; None (no answer given) stays None."""
    if isinstance(value, str):
        return answer_from_text(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def _statement(reader: _Reader, node: ast.stmt) -> None:
    if isinstance(node, ast.Import | ast.ImportFrom):
        names = [alias.name for alias in node.names]
        module = getattr(node, "module", None)
        if all(n in ("pyautogui", "time") for n in names) or module in ("pyautogui", "time"):
            return
        raise ActionError(f"import of {', '.join(names)}: only pyautogui and time are read")
    if isinstance(node, ast.Pass):
        return
    if (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(assigned := node.targets[0], ast.Attribute)
        and isinstance(assigned.value, ast.Name)
        and assigned.value.id == "pyautogui"
        and assigned.attr in ("PAUSE", "FAILSAFE")
        and isinstance(node.value, ast.Constant)
    ):
        return  # pyautogui's own pacing and fail-safe: nothing to do over VNC
    if not isinstance(node, ast.Expr):
        raise ActionError(
            f"line {node.lineno}: {type(node).__name__.lower()} statements are not read "
            "(only calls of pyautogui and time.sleep)"
        )
    value = node.value
    if isinstance(value, ast.Name) and value.id in _WORDS | {"ASK"}:
        if value.id == "ASK":
            raise ActionError('ASK needs the question: ASK("...")')
        _end_call(reader, "", value.id, ast.Call(value, [], []))
        return
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return  # a docstring or a comment written as a string
    if not isinstance(value, ast.Call):
        raise ActionError(f"line {node.lineno}: {ast.unparse(value)!r} is not a call")
    func = value.func
    if isinstance(func, ast.Name):
        if _end_call(reader, "", func.id, value):
            return
        raise ActionError(f"line {node.lineno}: {func.id}() is not one of the calls DeskLoop reads")
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
        raise ActionError(f"line {node.lineno}: {ast.unparse(func)!r} is not a call DeskLoop reads")
    target, name = func.value.id, func.attr
    if target == "pyautogui":
        _pyautogui(reader, name, value)
    elif (target, name) == ("time", "sleep"):
        values = _args(value, ("secs",), "time.sleep")
        reader.add(Wait(values.get("secs", 0)))
    elif not _end_call(reader, target, name, value):
        raise ActionError(
            f"line {node.lineno}: {target}.{name}() is not one of the calls DeskLoop reads"
        )


def read_pyautogui(text: str, contract: CoordinateContract, pointer: Pointer) -> Reading:
    """The actions of one answer (see the module doc), in screen pixels.

    Raises:
        MalformedAction: no code block and no code, a block that does not parse, or a
            statement or call DeskLoop does not read; nothing of the answer acts then.
    """
    code = code_of(text).strip()
    if code.upper().rstrip(".") in _WORDS:
        code = code.upper().rstrip(".")
    if not code:
        raise MalformedAction("no code: expected pyautogui calls or DONE, FAIL, WAIT", text)
    try:
        tree = ast.parse(code, mode="exec")
    except SyntaxError as exc:
        if not fenced(text):
            # Prose without code: say what is missing, not that prose is bad Python.
            raise MalformedAction(
                "no code block: expected a ```python block of pyautogui calls (or DONE, "
                f"FAIL, WAIT); the text is not Python either: {exc.msg} (line {exc.lineno})",
                text,
            ) from None
        raise MalformedAction(
            f"the code does not parse: {exc.msg} (line {exc.lineno})", text
        ) from None
    start = pointer.at
    reader = _Reader(contract, pointer)
    try:
        for node in tree.body:
            _statement(reader, node)
        for key in list(reader.held):
            reader.key_up(key)  # a key the code never let go is let go at its end
        if reader.down is not None:
            raise ActionError("mouseDown without a mouseUp: DeskLoop's drags end in the answer")
    except ActionError as exc:
        pointer.at = start  # nothing of a refused answer acts
        raise MalformedAction(str(exc), text) from None
    if not reader.actions:
        raise MalformedAction("no action: the code calls nothing DeskLoop reads", text)
    actions = reader.actions
    if any(not isinstance(a, Wait) for a in actions):
        # Short sleeps between calls pace pyautogui; the runner already waits for the
        # screen to settle after every action, and each wait would spend a step.
        actions = [a for a in actions if not (isinstance(a, Wait) and a.seconds <= PACING)]
    return Reading(actions)
