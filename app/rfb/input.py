"""Input delivery: GUI actions as RFB key and pointer events.

Two servers, two keyboards. Xvnc adds Shift itself for a keysym that needs it on its
keymap, and takes keys as fast as they come. QEMU's VNC server does neither: it maps
a keysym to its key's scancode without the Shift (`~` arrives as a backtick), and it
queues key events, handing them to the guest 10 ms apart and dropping what overflows
its queue (about 170 characters at once were kept). So a connection to QEMU holds
Shift explicitly around shifted characters (`explicit_shift`) and paces typing
(`type_delay`); one to Xvnc does neither.

A drag moves the pointer through intermediate points: toolkits (GIMP, Qt) need
separate motion events to start a drag, not one jump.

A key released and pressed again (the `ll` of "Hello") waits `REPEAT_GAP` between
the two. Sent back to back, both reach Xvnc in one read and get the same X server
timestamp, and a release followed by a press of the same key at the same time is
what X toolkits take for auto-repeat (Qt's xcb plugin, Blender's GHOST): Blender's
text fields dropped the second letter ("Hello" arrived as "Helo").
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol

from app.core.actions import Click, Drag, GuiAction, Key, Move, Scroll, Type, Wait, action_kind
from app.core.errors import ActionError, VNCError
from app.core.keys import MODIFIERS, char_keysym, needs_shift, parse_combo
from app.rfb import wire

# Pause between the intermediate pointer moves of a drag.
DRAG_STEP_DELAY = 0.01
DRAG_MAX_STEPS = 20
# Between a key's release and its next press: long enough that Xvnc reads them apart
# and stamps them at different milliseconds (see the module docstring).
REPEAT_GAP = 0.03


class InputLink(Protocol):
    """What input delivery needs from the connection."""

    @property
    def where(self) -> str: ...

    @property
    def width(self) -> int: ...

    @property
    def height(self) -> int: ...

    # How this connection's server wants keys (see the module docstring).
    explicit_shift: bool
    type_delay: float

    def check_open(self) -> None:
        """Raise the connection's error (VNCError) if it has failed or was closed."""
        ...

    async def send(self, data: bytes, timeout: float) -> None: ...


class InputSender:
    """Sends one connection's key and pointer events."""

    def __init__(self, link: InputLink) -> None:
        self._link = link
        self.last_input = time.monotonic()
        """When input was last sent: `settle()` counts screen changes since then."""
        self.last_kind: str | None = None
        """The kind of the last action `perform` sent (a settle learns its pace)."""
        self._last_released: tuple[int, float] | None = None
        """The keysym a combo released last, and when (for `REPEAT_GAP`)."""

    def _check_point(self, x: int, y: int, what: str) -> None:
        width, height = self._link.width, self._link.height
        if not (0 <= x < width and 0 <= y < height):
            raise ActionError(f"{what} at ({x}, {y}) is outside the {width}x{height} screen")

    async def _send(self, data: bytes, timeout: float) -> None:
        self.last_input = time.monotonic()
        await self._link.send(data, timeout)

    async def pointer(self, x: int, y: int, buttons_mask: int = 0, timeout: float = 5.0) -> None:
        """Send one PointerEvent (button mask bits: 1 left, 2 middle, 4 right, 8/16 wheel)."""
        self._check_point(x, y, "pointer")
        if not 0 <= buttons_mask <= 0xFF:
            raise ActionError(f"pointer button mask must be 0..255, got {buttons_mask}")
        await self._send(wire.pointer_event(buttons_mask, x, y), timeout)

    async def key(self, keysym: int, down: bool, timeout: float = 5.0) -> None:
        if down:
            await self._gap_before_press(keysym)
        await self._send(wire.key_event(down, keysym), timeout)
        if not down:
            self._last_released = (keysym, time.monotonic())

    async def key_combo(self, keysyms: list[int], timeout: float = 5.0) -> None:
        """Press the keys in order and release them in reverse (ctrl, shift, s)."""
        if not keysyms:
            raise ActionError("empty key combo")
        await self._gap_before_press(keysyms[0])
        data = b"".join(wire.key_event(True, k) for k in keysyms)
        data += b"".join(wire.key_event(False, k) for k in reversed(keysyms))
        await self._send(data, timeout)
        self._last_released = (keysyms[0], time.monotonic())

    async def _gap_before_press(self, keysym: int) -> None:
        """Wait out `REPEAT_GAP` when `keysym` was the key released last."""
        if self._last_released is None or self._last_released[0] != keysym:
            return
        wait = self._last_released[1] + REPEAT_GAP - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)

    async def type_text(self, text: str, delay: float = 0.0, timeout: float = 30.0) -> None:
        """Type text, one press/release per character, `delay` seconds after each.

        An uppercase letter is sent as its own keysym (XK_A), with Shift held around
        it only when the connection's `explicit_shift` is set (see the module docstring).
        """
        keysyms = [(char, char_keysym(char)) for char in text]
        deadline = time.monotonic() + timeout
        for char, keysym in keysyms:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise VNCError(
                    f"typing {len(text)} characters to {self._link.where} ran past {timeout:g} s"
                )
            shifted = self._link.explicit_shift and needs_shift(char)
            combo = [MODIFIERS["shift"], keysym] if shifted else [keysym]
            await self.key_combo(combo, timeout=remaining)
            if delay > 0:
                await asyncio.sleep(delay)

    async def perform(self, action: GuiAction, timeout: float = 30.0) -> None:
        """Deliver one GUI action; returns once its input was sent (Wait sleeps).

        Raises:
            ActionError: coordinates outside the screen, or a malformed key combo.
            VNCError: the input could not be sent.
        """
        self.last_kind = action_kind(action)
        match action:
            case Click(x, y, button, count):
                self._check_point(x, y, "click")
                mask = wire.BUTTON_MASKS[button]
                await self.pointer(x, y, 0, timeout)
                for _ in range(count):
                    await self.pointer(x, y, mask, timeout)
                    await self.pointer(x, y, 0, timeout)
            case Move(x, y):
                await self.pointer(x, y, 0, timeout)
            case Drag(x1, y1, x2, y2, button):
                self._check_point(x1, y1, "drag start")
                self._check_point(x2, y2, "drag end")
                mask = wire.BUTTON_MASKS[button]
                await self.pointer(x1, y1, 0, timeout)
                await self.pointer(x1, y1, mask, timeout)
                steps = max(2, min(DRAG_MAX_STEPS, max(abs(x2 - x1), abs(y2 - y1)) // 20))
                for i in range(1, steps + 1):
                    await asyncio.sleep(DRAG_STEP_DELAY)
                    px = x1 + (x2 - x1) * i // steps
                    py = y1 + (y2 - y1) * i // steps
                    await self.pointer(px, py, mask, timeout)
                await self.pointer(x2, y2, 0, timeout)
            case Scroll(x, y, dy):
                self._check_point(x, y, "scroll")
                wheel = wire.WHEEL_DOWN_MASK if dy > 0 else wire.WHEEL_UP_MASK
                await self.pointer(x, y, 0, timeout)
                for _ in range(abs(dy)):
                    await self.pointer(x, y, wheel, timeout)
                    await self.pointer(x, y, 0, timeout)
            case Type(text):
                # Paced typing takes longer than the action's usual bound.
                delay = self._link.type_delay
                budget = timeout + len(text) * delay
                await self.type_text(text, delay=delay, timeout=budget)
            case Key(combo):
                await self.key_combo(parse_combo(combo), timeout)
            case Wait(seconds):
                self._link.check_open()
                await asyncio.sleep(seconds)
            case _:
                raise ActionError(f"not a GUI action: {action!r}")
