"""The input recorder fed a recording's timed events (offline) coalesces them by those
times, as it does live by the clock, and says when each action began."""

from __future__ import annotations

from app.core.actions import Action, Click, Drag, Key, Scroll, Type
from app.rfb import wire
from app.rfb.proxy import IDLE_FLUSH_SECONDS, InputRecorder

LEFT = wire.BUTTON_MASKS["left"]


def feed(events: list[tuple[str, float, tuple[int, ...]]]) -> list[tuple[Action, float]]:
    actions: list[tuple[Action, float]] = []
    recorder = InputRecorder(lambda a: actions.append((a, recorder.last_started)), live=False)
    for kind, at, args in events:
        if kind == "key":
            recorder.key(bool(args[0]), args[1], at=at)
        else:
            recorder.pointer(args[0], args[1], args[2], at=at)
    recorder.flush()
    return actions


def keys(text: str, start: float, gap: float = 0.1) -> list[tuple[str, float, tuple[int, ...]]]:
    out: list[tuple[str, float, tuple[int, ...]]] = []
    for i, char in enumerate(text):
        at = start + i * gap
        out += [("key", at, (1, ord(char))), ("key", at + 0.01, (0, ord(char)))]
    return out


def test_typing_merges_until_a_pause_longer_than_the_idle_flush() -> None:
    pause = IDLE_FLUSH_SECONDS + 0.5
    actions = feed([*keys("hello", 1.0), *keys("world", 1.4 + pause)])
    assert actions == [(Type("hello"), 1.0), (Type("world"), 1.4 + pause)]


def test_clicks_double_clicks_drags_and_scrolls_carry_their_start() -> None:
    actions = feed(
        [
            ("pointer", 1.0, (LEFT, 10, 10)),
            ("pointer", 1.05, (0, 10, 10)),
            ("pointer", 1.2, (LEFT, 11, 10)),
            ("pointer", 1.25, (0, 11, 10)),  # within 0.4 s and 3 px: a double click
            ("pointer", 3.0, (LEFT, 50, 50)),
            ("pointer", 3.3, (LEFT, 90, 60)),
            ("pointer", 3.5, (0, 200, 70)),  # moved far: a drag from the press
            ("pointer", 5.0, (wire.WHEEL_DOWN_MASK, 30, 30)),
            ("pointer", 5.01, (0, 30, 30)),
            ("pointer", 5.1, (wire.WHEEL_DOWN_MASK, 30, 30)),
            ("pointer", 5.11, (0, 30, 30)),
            ("key", 7.0, (1, 0xFFE3)),  # ctrl
            ("key", 7.1, (1, ord("s"))),
            ("key", 7.2, (0, ord("s"))),
            ("key", 7.3, (0, 0xFFE3)),
        ]
    )
    assert actions == [
        (Click(10, 10, "left", 2), 1.0),
        (Drag(50, 50, 200, 70, "left"), 3.0),
        (Scroll(30, 30, 2), 5.0),
        (Key("ctrl+s"), 7.1),
    ]


def test_slow_repeats_are_separate_clicks() -> None:
    actions = feed(
        [
            ("pointer", 1.0, (LEFT, 10, 10)),
            ("pointer", 1.05, (0, 10, 10)),
            ("pointer", 2.0, (LEFT, 10, 10)),
            ("pointer", 2.05, (0, 10, 10)),
        ]
    )
    assert actions == [(Click(10, 10), 1.0), (Click(10, 10), 2.0)]


def test_shift_with_a_lowercase_letter_is_a_key_combination() -> None:
    """DeskLoop's own client sends `key: shift+a` as shift and the keysym 'a': typed
    as 'a' the replay would lose the shift (Blender's Add menu; 'a' selects all)."""
    shift = 0xFFE1
    actions = feed(
        [
            ("key", 1.0, (1, shift)),
            ("key", 1.05, (1, ord("a"))),
            ("key", 1.1, (0, ord("a"))),
            ("key", 1.15, (0, shift)),
            *keys("mu", 1.2),
            ("key", 3.0, (1, shift)),
            ("key", 3.05, (1, ord("A"))),  # a viewer's shifted keysym stays text
            ("key", 3.1, (0, ord("A"))),
            ("key", 3.15, (0, shift)),
        ]
    )
    assert actions == [(Key("shift+a"), 1.05), (Type("mu"), 1.2), (Type("A"), 3.05)]
