"""An RFB (VNC) recording proxy: a person's viewer → the desktop, input → actions.

The proxy listens on 127.0.0.1 with its own random VNC password. A viewer that
connects is authenticated by the proxy, which then opens its own (shared) session
to the desktop's VNC server and relays bytes both ways. The server's side passes
through untouched; the viewer's side is parsed message by message so that its
pointer and key events can be recorded. Every event is forwarded at once: the
person sees and drives the desktop live.

`InputRecorder` turns the raw events into protocol actions:

- a button press and release within a few pixels → `click` (quick repeats at the
  same spot merge into a double or triple click); farther apart → `drag`;
- wheel notches → `scroll` (consecutive notches at one spot merge);
- printable keys, Enter and Tab without ctrl/alt/super → `type` (consecutive keys
  merge into one text); other keys, any key with ctrl/alt/super, and shift with a
  lowercase letter's keysym (`shift+a` as DeskLoop's own client sends it) → `key(combo)`.

Pointer motion without a button is forwarded but not recorded (it only hovers).
An action is emitted when the next, different input arrives or after a short
idle pause, so typing "hello" is one step, not five.

The viewer's encodings list is filtered to those whose client messages this
proxy can parse (no fences, continuous updates or desktop resizing requests).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import string
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from app.core.actions import Action, Button, Click, Drag, Key, Scroll, Type
from app.core.errors import VNCError
from app.core.keys import NAMED_KEYS
from app.rfb import wire
from app.rfb.client import VncEndpoint

# Pseudo-encodings that make a viewer send client messages this proxy does not parse.
_REFUSED_ENCODINGS = frozenset(
    {
        wire.ENCODING_EXTENDED_DESKTOP_SIZE,  # → SetDesktopSize (251)
        wire.ENCODING_FENCE,  # → ClientFence (248)
        wire.ENCODING_CONTINUOUS_UPDATES,  # → EnableContinuousUpdates (150)
        wire.ENCODING_QEMU_EXTENDED_KEY_EVENT,  # → QEMU extended key events (255)
        wire.ENCODING_QEMU_AUDIO,  # → QEMU audio (255)
        wire.ENCODING_XVP,  # → xvp (250)
        wire.ENCODING_EXTENDED_CLIPBOARD,  # → extended ClientCutText
    }
)
CLICK_SLOP = 3
"""Pixels a press may move before its release and still be a click."""
MULTI_CLICK_SECONDS = 0.4
IDLE_FLUSH_SECONDS = 0.8

_SHIFT = {0xFFE1, 0xFFE2}
_CTRL = {0xFFE3, 0xFFE4}
_ALT = {0xFFE9, 0xFFEA, 0xFE03}
_META = {0xFFE7, 0xFFE8}
_SUPER = {0xFFEB, 0xFFEC}
_LOCKS = {0xFFE5, 0xFFE6, 0xFF7F}  # Caps, Shift lock, Num lock: never an action
_KEYPAD_CHARS = {0xFF8D: "\n", 0xFFAA: "*", 0xFFAB: "+", 0xFFAD: "-", 0xFFAE: ".", 0xFFAF: "/"}
_KEYPAD_CHARS.update({0xFFB0 + n: str(n) for n in range(10)})
# keysym → its first name in app.core.keys, for key(combo) actions.
_KEY_NAMES: dict[int, str] = {}
for _name, _sym in NAMED_KEYS.items():
    _KEY_NAMES.setdefault(_sym, _name)
_BUTTONS: dict[int, Button] = {mask: button for button, mask in wire.BUTTON_MASKS.items()}


def _char(keysym: int) -> str | None:
    """The character a keysym types, if it types one."""
    if keysym == 0xFF0D:
        return "\n"
    if keysym == 0xFF09:
        return "\t"
    if keysym in _KEYPAD_CHARS:
        return _KEYPAD_CHARS[keysym]
    if 0x20 <= keysym <= 0x7E or 0xA0 <= keysym <= 0xFF:
        return chr(keysym)
    if 0x01000100 <= keysym <= 0x0110FFFF:
        return chr(keysym - 0x01000000)
    return None


def _unshifted(char: str) -> bool:
    """Whether `char` is what a key gives without shift (a lowercase ASCII letter),
    so that shift held with it is part of a key combination, not of the text."""
    return "a" <= char <= "z"


def _key_name(keysym: int) -> str | None:
    if keysym in _KEY_NAMES:
        return _KEY_NAMES[keysym]
    char = _char(keysym)
    if char is not None and char not in "\n\t+":
        return char.lower() if char.isalpha() else char
    if char == "+":
        return "plus"
    return None


@dataclass
class _Press:
    x: int
    y: int
    at: float


class InputRecorder:
    """Turns RFB pointer and key events into protocol actions (see the module doc).

    `emit` is called with each finished action, on the event loop's thread; while it
    runs, `last_started` is when that action's first event arrived.

    Live (the default), events are timed by the monotonic clock and a pending action
    is flushed by a timer after `IDLE_FLUSH_SECONDS`. Offline (`live=False`, compiling
    a recording), each event brings its own time `at` and the idle flush happens when
    the next event comes that much later (or at `flush()`), so the same events give
    the same actions however fast they are fed.
    """

    def __init__(self, emit: Callable[[Action], None], live: bool = True) -> None:
        self._emit = emit
        self._live = live
        self._mask = 0
        self._presses: dict[int, _Press] = {}
        self._held: set[int] = set()
        self._pending: Action | None = None
        self._pending_at = 0.0
        self._pending_since = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._now = 0.0
        self.last_started = 0.0
        """When the action being emitted began (its first event's time)."""
        self.ignored = 0
        """Events that map to no action (unknown keysyms, side wheel)."""

    def _arrive(self, at: float | None) -> None:
        self._now = time.monotonic() if at is None else at
        idle = self._now - self._pending_at > IDLE_FLUSH_SECONDS
        if not self._live and self._pending is not None and idle:
            self.flush()

    # -- events ---------------------------------------------------------------------

    def pointer(self, mask: int, x: int, y: int, at: float | None = None) -> None:
        self._arrive(at)
        changed = mask ^ self._mask
        self._mask = mask
        for bit, button in _BUTTONS.items():
            if not changed & bit:
                continue
            if mask & bit:
                self._presses[bit] = _Press(x, y, self._now)
            elif bit in self._presses:
                press = self._presses.pop(bit)
                if abs(press.x - x) <= CLICK_SLOP and abs(press.y - y) <= CLICK_SLOP:
                    self._click(Click(press.x, press.y, button), press.at)
                else:
                    self._push(Drag(press.x, press.y, x, y, button), press.at)
        for bit, dy in ((wire.WHEEL_UP_MASK, -1), (wire.WHEEL_DOWN_MASK, 1)):
            if changed & bit and mask & bit:
                self._scroll(x, y, dy)
        if changed & wire.WHEEL_SIDEWAYS_MASK and mask & wire.WHEEL_SIDEWAYS_MASK:
            self.ignored += 1  # horizontal wheel: no protocol action for it

    def key(self, down: bool, keysym: int, at: float | None = None) -> None:
        self._arrive(at)
        modifier = keysym in _SHIFT | _CTRL | _ALT | _META | _SUPER
        if not down:
            self._held.discard(keysym)
            return
        if modifier:
            self._held.add(keysym)
            return
        if keysym in _LOCKS:
            return
        mods = [
            name
            for name, group in (("ctrl", _CTRL), ("alt", _ALT), ("meta", _META), ("super", _SUPER))
            if self._held & group
        ]
        char = _char(keysym)
        if self._held & _SHIFT and char is not None and (char in "\n\t" or _unshifted(char)):
            # shift+tab is a key, not text; so is shift with a lowercase letter (the
            # unshifted keysym, as DeskLoop's own client sends `key: shift+a`): typed
            # as the letter alone it would lose the shift (Blender's shift+a is Add, a
            # alone selects all).
            mods.append("shift")
            char = None
        if not mods and char is not None:
            self._type(char)
            return
        name = _key_name(keysym)
        if name is None:
            self.ignored += 1
            return
        if self._held & _SHIFT and "shift" not in mods and (mods or char is None):
            mods.append("shift")
        self._push(Key("+".join([*mods, name])))

    def command(self, action: Action) -> None:
        """An action from outside the viewer (DONE/ASK/FAIL): after any pending input."""
        self.flush()
        self._emit(action)

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        pending, self._pending = self._pending, None
        if pending is not None:
            self.last_started = self._pending_since
            self._emit(pending)

    # -- merging --------------------------------------------------------------------

    def _type(self, char: str) -> None:
        if isinstance(self._pending, Type):
            self._hold(Type(self._pending.text + char), merged=True)
        else:
            self.flush()
            self._hold(Type(char))

    def _scroll(self, x: int, y: int, dy: int) -> None:
        last = self._pending
        if (
            isinstance(last, Scroll)
            and (last.dy > 0) == (dy > 0)
            and abs(last.x - x) <= CLICK_SLOP
            and abs(last.y - y) <= CLICK_SLOP
        ):
            self._hold(Scroll(last.x, last.y, last.dy + dy), merged=True)
        else:
            self.flush()
            self._hold(Scroll(x, y, dy))

    def _click(self, click: Click, started: float) -> None:
        last = self._pending
        now = self._now
        if (
            isinstance(last, Click)
            and last.button == click.button
            and last.count < 3
            and abs(last.x - click.x) <= CLICK_SLOP
            and abs(last.y - click.y) <= CLICK_SLOP
            and now - self._pending_at <= MULTI_CLICK_SECONDS
        ):
            self._hold(Click(last.x, last.y, last.button, last.count + 1), merged=True)
        else:
            self.flush()
            self._hold(click, started=started)

    def _push(self, action: Action, started: float | None = None) -> None:
        self.flush()
        self.last_started = self._now if started is None else started
        self._emit(action)

    def _hold(self, action: Action, merged: bool = False, started: float | None = None) -> None:
        if not merged:
            self._pending_since = self._now if started is None else started
        self._pending = action
        self._pending_at = self._now
        if not self._live:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer = asyncio.get_running_loop().call_later(IDLE_FLUSH_SECONDS, self.flush)


# -- the proxy ------------------------------------------------------------------------

_PASSWORD_ALPHABET = string.ascii_letters + string.digits


@dataclass(frozen=True)
class ProxyAddress:
    host: str
    port: int
    password: str


class InputTap(Protocol):
    """Sees each raw input event before it is recorded and forwarded (authoring keeps
    them raw, with their times; see app/authoring/recording.py). The event waits for
    the tap, so the tap can note what the screen showed before the event took effect;
    a tap keeps that short (the person's input waits with it)."""

    async def pointer(self, mask: int, x: int, y: int) -> None: ...

    async def key(self, down: bool, keysym: int) -> bool:
        """False swallows the event: neither the recorder nor the desktop sees it (a
        key combination meant for DeskLoop, such as the author's boundary mark)."""
        ...


class RFBRecordingProxy:
    """Serves viewers on 127.0.0.1:`port` (0: any free port) for `upstream`."""

    def __init__(
        self,
        upstream: VncEndpoint,
        recorder: InputRecorder,
        port: int = 0,
        tap: InputTap | None = None,
    ) -> None:
        self.upstream = upstream
        self.recorder = recorder
        self.tap = tap
        self._port = port
        # VNC passwords are at most 8 characters (the DES key).
        self.password = "".join(secrets.choice(_PASSWORD_ALPHABET) for _ in range(8))
        self._server: asyncio.Server | None = None
        self._sessions: set[asyncio.Task[None]] = set()
        self.viewers = 0
        self.errors: list[str] = []

    @property
    def started(self) -> bool:
        return self._server is not None

    @property
    def address(self) -> ProxyAddress:
        if self._server is None:
            raise VNCError("the recording proxy is not started")
        port = self._server.sockets[0].getsockname()[1]
        return ProxyAddress("127.0.0.1", int(port), self.password)

    async def start(self) -> ProxyAddress:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self._port)
        return self.address

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
        for session in list(self._sessions):
            session.cancel()
        await asyncio.gather(*self._sessions, return_exceptions=True)
        self.recorder.flush()

    async def __aenter__(self) -> RFBRecordingProxy:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        current = asyncio.current_task()
        assert current is not None
        self._sessions.add(current)
        upstream_writer: asyncio.StreamWriter | None = None
        try:
            if not await self._authenticate(reader, writer):
                return
            shared = await reader.readexactly(1)  # ClientInit; we always share upstream
            del shared
            up_reader, upstream_writer = await self._connect_upstream()
            self.viewers += 1
            pipes = {
                asyncio.create_task(self._pipe_down(up_reader, writer)),
                asyncio.create_task(self._pipe_up(reader, upstream_writer)),
            }
            try:
                await asyncio.wait(pipes, return_when=asyncio.FIRST_COMPLETED)
            finally:
                # Both pipes end together, and every outcome is collected, also when
                # this session is cancelled (an unretrieved task error would be
                # logged from a finalizer later).
                for task in pipes:
                    task.cancel()
                outcomes = await asyncio.gather(*pipes, return_exceptions=True)
            for error in outcomes:
                if isinstance(error, Exception) and not isinstance(
                    error, asyncio.IncompleteReadError | ConnectionError | asyncio.CancelledError
                ):
                    self.errors.append(f"{type(error).__name__}: {error}")
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the viewer went away
        except asyncio.CancelledError:
            # Only close() cancels a session. Ending normally instead of re-raising
            # keeps asyncio's server callback (which calls task.exception()) quiet.
            pass
        except VNCError as exc:
            self.errors.append(str(exc))
        finally:
            self.recorder.flush()
            for w in (writer, upstream_writer):
                if w is not None:
                    with contextlib.suppress(Exception):
                        w.close()
            self._sessions.discard(current)

    async def _authenticate(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        writer.write(wire.PROTOCOL_VERSION)
        version = await reader.readexactly(wire.VERSION_LENGTH)
        if not version.startswith(b"RFB 003.00") or version[10:11] not in (b"7", b"8"):
            return False  # 3.3 viewers get no security-type list; not supported
        writer.write(wire.security_types([wire.SECURITY_VNC_AUTH]))
        if (await reader.readexactly(1))[0] != wire.SECURITY_VNC_AUTH:
            return False
        challenge = os.urandom(wire.CHALLENGE_LENGTH)
        writer.write(challenge)
        response = await reader.readexactly(wire.CHALLENGE_LENGTH)
        if not secrets.compare_digest(response, wire.vnc_auth_response(self.password, challenge)):
            writer.write(wire.security_failed(b"wrong password"))
            await writer.drain()
            return False
        writer.write(wire.SECURITY_OK)
        await writer.drain()
        return True

    async def _connect_upstream(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A shared session to the desktop, up to (not including) ServerInit."""
        where = f"{self.upstream.host}:{self.upstream.port}"
        try:
            async with asyncio.timeout(10):
                reader, writer = await asyncio.open_connection(
                    self.upstream.host, self.upstream.port
                )
                version = await reader.readexactly(wire.VERSION_LENGTH)
                if not version.startswith(b"RFB "):
                    raise VNCError(f"{where} is not a VNC server")
                writer.write(wire.PROTOCOL_VERSION)
                offered = await wire.read_security_types(reader)
                if wire.SECURITY_VNC_AUTH not in offered:
                    raise VNCError(f"{where} offers security types {offered}, not VNC auth")
                await wire.vnc_authenticate(reader, writer, self.upstream.password)
                if await wire.read_security_result(reader) != 0:
                    raise VNCError(f"the desktop's VNC server {where} refused the proxy")
                writer.write(wire.CLIENT_INIT_SHARED)
                await writer.drain()
                return reader, writer
        except (TimeoutError, OSError, asyncio.IncompleteReadError) as exc:
            raise VNCError(f"the proxy cannot reach the desktop at {where}: {exc!r}") from None

    async def _pipe_down(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            data = await reader.read(1 << 16)
            if not data:
                return
            writer.write(data)
            await writer.drain()

    async def _pipe_up(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Parse each client message, record input, forward (encodings filtered)."""
        recorder = self.recorder
        tap = self.tap
        message = wire.ClientMessage
        while True:
            kind = (await reader.readexactly(1))[0]
            if kind == message.SET_PIXEL_FORMAT:
                data, _ = await wire.read_rest(reader, kind, wire.SET_PIXEL_FORMAT)
            elif kind == message.SET_ENCODINGS:
                _, (_, count) = await wire.read_rest(reader, kind, wire.SET_ENCODINGS)
                encodings = await wire.read_encodings(reader, count)
                data = wire.set_encodings([e for e in encodings if e not in _REFUSED_ENCODINGS])
            elif kind == message.FRAMEBUFFER_UPDATE_REQUEST:
                data, _ = await wire.read_rest(reader, kind, wire.FRAMEBUFFER_UPDATE_REQUEST)
            elif kind == message.KEY_EVENT:
                data, (_, down, keysym) = await wire.read_rest(reader, kind, wire.KEY_EVENT)
                if tap is not None and not await tap.key(bool(down), keysym):
                    continue
                recorder.key(bool(down), keysym)
            elif kind == message.POINTER_EVENT:
                data, (_, mask, x, y) = await wire.read_rest(reader, kind, wire.POINTER_EVENT)
                if tap is not None:
                    await tap.pointer(mask, x, y)
                recorder.pointer(mask, x, y)
            elif kind == message.CLIENT_CUT_TEXT:
                data, (_, length) = await wire.read_rest(reader, kind, wire.CLIENT_CUT_TEXT)
                if length > 1 << 20:
                    raise VNCError(f"viewer sent {length} bytes of clipboard text; refused")
                data += await reader.readexactly(length)
            else:
                raise VNCError(
                    f"viewer sent RFB client message type {kind}, which the recording "
                    "proxy does not understand; use a plain VNC viewer"
                )
            writer.write(data)
            await writer.drain()
