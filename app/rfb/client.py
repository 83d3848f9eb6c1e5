"""An asyncio RFB 3.8 (VNC) client: frames as numpy arrays, input from GUI actions.

Why our own client: vncdotool runs Twisted in a thread, deadlocks when used from a
running asyncio loop and can hand out stale frames (FIELD_NOTES). This client is
one socket owned by one loop:

- a background reader task owns the read side and applies each FramebufferUpdate
  to the framebuffer *atomically* (rects are buffered and applied when the whole
  update has arrived), so a frame is never torn between two updates;
- `frame()` sends a non-incremental request and returns only after an update whose
  header arrived after that request and which covered the whole screen;
- `settle()` keeps incremental requests outstanding and watches how many pixels
  really changed in each update, so blinking text cursors do not count.

Only Raw and CopyRect are requested (plus the DesktopSize pseudo-encodings): on
loopback Raw is the fastest (ZRLE decoding in Python is ~75x slower).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import numpy.typing as npt
from Crypto.Cipher import DES

from app.core.actions import Button, Click, Drag, GuiAction, Key, Move, Scroll, Type, Wait
from app.core.errors import ActionError, VNCError
from app.core.frames import Frame, SettleResult
from app.core.keys import MODIFIERS, char_keysym, needs_shift, parse_combo


@dataclass(frozen=True)
class VncEndpoint:
    """Where a person's VNC viewer can reach the desktop (always loopback)."""

    host: str
    port: int
    password: str


T = TypeVar("T")

ENCODING_RAW = 0
ENCODING_COPYRECT = 1
ENCODING_DESKTOP_SIZE = -223
ENCODING_EXTENDED_DESKTOP_SIZE = -308

SECURITY_NONE = 1
SECURITY_VNC_AUTH = 2

BUTTON_MASKS: dict[Button, int] = {"left": 1, "middle": 2, "right": 4}
WHEEL_UP_MASK = 8  # X button 4
WHEEL_DOWN_MASK = 16  # X button 5

# Pixels per update kept in the history `settle` reads; more than any settle needs.
_HISTORY = 512
# Pause between the intermediate pointer moves of a drag: toolkits (GIMP, Qt) need
# separate motion events to start a drag, not one jump.
DRAG_STEP_DELAY = 0.01
DRAG_MAX_STEPS = 20


def vnc_auth_response(password: str, challenge: bytes) -> bytes:
    """The VNC authentication response: DES-ECB of the challenge under the password.

    The key is the first 8 bytes of the password (zero padded) with the bits of
    each byte reversed — a quirk of the original VNC implementation.
    """
    raw = password.encode("latin-1", "replace")[:8].ljust(8, b"\0")
    key = bytes(int(f"{byte:08b}"[::-1], 2) for byte in raw)
    return bytes(DES.new(key, DES.MODE_ECB).encrypt(challenge))


@dataclass(frozen=True)
class _UpdateRecord:
    """One applied FramebufferUpdate, as `frame` and `settle` need to know it."""

    seq: int
    monotonic: float
    changed_area: int  # pixels in the boxes that really changed, summed over rects
    full: bool  # the update's rects covered the whole framebuffer


@dataclass
class _PendingRect:
    x: int
    y: int
    w: int
    h: int
    encoding: int
    data: bytes = b""
    src_x: int = 0
    src_y: int = 0


class VNCClient:
    """One connected RFB session. Build it with `connect()`."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        host: str,
        port: int,
        width: int,
        height: int,
        name: str,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self.host = host
        self.port = port
        self.name = name
        # BGRX little-endian pixels as uint32 (X masked off): compares and CopyRects are
        # one machine word per pixel; RGB is produced only when a frame is read.
        self._fb: npt.NDArray[np.uint32] = np.zeros((height, width), dtype=np.uint32)
        self._updates_started = 0  # FramebufferUpdate headers received
        self._updates_done = 0  # FramebufferUpdates fully applied
        self._history: deque[_UpdateRecord] = deque(maxlen=_HISTORY)
        self._continuous = 0  # settle() calls that want incremental requests kept outstanding
        self._last_input = time.monotonic()
        self._last_settle_end = 0.0
        # The first full picture after connecting is not a screen change for settle().
        self._filled = False
        self._error: VNCError | None = None
        self._closed = False
        self.bells = 0
        self.cut_text = ""
        self.explicit_shift = False
        self.type_delay = 0.0
        """Seconds between typed characters. QEMU's VNC server queues key events and
        hands them to the guest 10 ms apart, dropping what overflows its input queue
        (about 170 characters at once were kept, the rest lost): pace typing there."""
        """Hold Shift around characters typed with it (`keys.needs_shift`). Xvnc adds
        the Shift itself for a keysym that needs it; QEMU's VNC server maps a keysym to
        the scancode of its key and does not, so `~` arrives as a backtick there."""
        loop = asyncio.get_running_loop()
        self._update_signal: asyncio.Future[None] = loop.create_future()
        self._reader_task = loop.create_task(self._read_loop(), name=f"vnc-reader-{host}:{port}")

    # ---------------------------------------------------------------- state

    @property
    def width(self) -> int:
        return int(self._fb.shape[1])

    @property
    def height(self) -> int:
        return int(self._fb.shape[0])

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def where(self) -> str:
        return f"{self.host}:{self.port}"

    def _check_open(self) -> None:
        if self._error is not None:
            raise self._error
        if self._closed:
            raise VNCError(f"VNC connection to {self.where} is closed")

    # ---------------------------------------------------------------- reader

    async def _read_loop(self) -> None:
        try:
            while True:
                kind = (await self._reader.readexactly(1))[0]
                if kind == 0:
                    await self._read_update()
                elif kind == 1:  # SetColourMapEntries: we asked for true colour; skip
                    _, _first, count = struct.unpack("!BHH", await self._reader.readexactly(5))
                    await self._reader.readexactly(6 * count)
                elif kind == 2:
                    self.bells += 1
                elif kind == 3:
                    _, length = struct.unpack("!3si", await self._reader.readexactly(7))
                    # A negative length is the extended-clipboard format; skip its bytes.
                    data = await self._reader.readexactly(abs(length))
                    if length >= 0:
                        self.cut_text = data.decode("latin-1")
                else:
                    raise VNCError(
                        f"VNC protocol error from {self.where}: unknown server message type {kind}"
                    )
        except asyncio.CancelledError:
            self._fail(VNCError(f"VNC connection to {self.where} was closed"))
            raise
        except asyncio.IncompleteReadError:
            self._fail(VNCError(f"VNC server {self.where} closed the connection"))
        except VNCError as exc:
            self._fail(exc)
        except OSError as exc:
            self._fail(VNCError(f"VNC connection to {self.where} failed: {exc}"))

    async def _read_update(self) -> None:
        _, count = struct.unpack("!BH", await self._reader.readexactly(3))
        self._updates_started += 1
        seq = self._updates_started
        rects: list[_PendingRect] = []
        width, height = self.width, self.height
        for _ in range(count):
            x, y, w, h, enc = struct.unpack("!HHHHi", await self._reader.readexactly(12))
            rect = _PendingRect(x, y, w, h, enc)
            if enc == ENCODING_RAW:
                rect.data = await self._reader.readexactly(w * h * 4)
            elif enc == ENCODING_COPYRECT:
                rect.src_x, rect.src_y = struct.unpack("!HH", await self._reader.readexactly(4))
            elif enc == ENCODING_DESKTOP_SIZE:
                width, height = w, h
            elif enc == ENCODING_EXTENDED_DESKTOP_SIZE:
                screens = (await self._reader.readexactly(4))[0]
                await self._reader.readexactly(16 * screens)
                # y carries the status; non-zero answers a resize request we never make.
                if y == 0:
                    width, height = w, h
                else:
                    continue
            else:
                raise VNCError(
                    f"VNC protocol error from {self.where}: unrequested encoding {enc} "
                    f"in a framebuffer update"
                )
            if enc in (ENCODING_RAW, ENCODING_COPYRECT) and (x + w > width or y + h > height):
                raise VNCError(
                    f"VNC protocol error from {self.where}: rectangle {w}x{h}+{x}+{y} "
                    f"outside the {width}x{height} screen"
                )
            rects.append(rect)
        self._apply(seq, rects)

    def _apply(self, seq: int, rects: list[_PendingRect]) -> None:
        changed = 0
        # A coverage mask only when the rects could cover the screen: small updates
        # (the common case while settling) skip the allocation.
        pixel_area = sum(
            r.w * r.h for r in rects if r.encoding in (ENCODING_RAW, ENCODING_COPYRECT)
        )
        covered: npt.NDArray[np.bool_] | None = None
        if pixel_area >= self._fb.size:
            covered = np.zeros(self._fb.shape, dtype=np.bool_)
        for rect in rects:
            x, y, w, h = rect.x, rect.y, rect.w, rect.h
            if rect.encoding in (ENCODING_DESKTOP_SIZE, ENCODING_EXTENDED_DESKTOP_SIZE):
                if (h, w) != self._fb.shape:
                    self._fb = np.zeros((h, w), dtype=np.uint32)
                    if covered is not None:
                        covered = np.zeros((h, w), dtype=np.bool_)
                    changed += w * h
                continue
            if w == 0 or h == 0:
                continue
            if rect.encoding == ENCODING_RAW:
                new = np.frombuffer(rect.data, dtype="<u4").reshape(h, w) & np.uint32(0xFFFFFF)
            else:
                sx, sy = rect.src_x, rect.src_y
                if sx + w > self.width or sy + h > self.height:
                    raise VNCError(
                        f"VNC protocol error from {self.where}: CopyRect source "
                        f"{w}x{h}+{sx}+{sy} outside the {self.width}x{self.height} screen"
                    )
                new = self._fb[sy : sy + h, sx : sx + w].copy()
            target = self._fb[y : y + h, x : x + w]
            changed += _changed_box_area(target, new)
            target[...] = new
            if covered is not None:
                covered[y : y + h, x : x + w] = True
        self._updates_done = seq
        full = covered is not None and bool(covered.all())
        if not self._filled:
            changed = 0
            self._filled = full
        self._history.append(_UpdateRecord(seq, time.monotonic(), changed, full))
        if self._continuous > 0:
            self._send_nowait(self._update_request(incremental=True))
        signal = self._update_signal
        self._update_signal = asyncio.get_running_loop().create_future()
        signal.set_result(None)

    def _fail(self, error: VNCError) -> None:
        if self._error is None and not self._closed:
            self._error = error
        self._closed = True
        if not self._update_signal.done():
            self._update_signal.set_result(None)
        with contextlib.suppress(Exception):
            self._writer.close()

    async def _wait_update(self, deadline: float) -> bool:
        """Wait for the next applied update; False when `deadline` passes first."""
        self._check_open()
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        try:
            await asyncio.wait_for(asyncio.shield(self._update_signal), remaining)
        except TimeoutError:
            return False
        self._check_open()
        return True

    # ---------------------------------------------------------------- writing

    def _update_request(self, *, incremental: bool) -> bytes:
        return struct.pack("!BBHHHH", 3, int(incremental), 0, 0, self.width, self.height)

    def _send_nowait(self, data: bytes) -> None:
        if self._closed:
            return
        try:
            self._writer.write(data)
        except (OSError, RuntimeError) as exc:
            self._fail(VNCError(f"VNC connection to {self.where} failed while sending: {exc}"))

    async def _send(self, data: bytes, timeout: float) -> None:
        self._check_open()
        try:
            self._writer.write(data)
            await asyncio.wait_for(self._writer.drain(), timeout)
        except TimeoutError:
            raise VNCError(
                f"VNC server {self.where} did not accept input within {timeout:g} s"
            ) from None
        except (OSError, RuntimeError) as exc:
            self._fail(VNCError(f"VNC connection to {self.where} failed while sending: {exc}"))
            self._check_open()

    # ---------------------------------------------------------------- frames

    async def frame(self, timeout: float = 5.0) -> Frame:
        """The whole screen as RGB, from an update the server sent after this call.

        Raises:
            VNCError: no complete update within `timeout`, or the connection dropped.
        """
        deadline = time.monotonic() + timeout
        while True:
            # Updates whose header already arrived may predate the request: skip them.
            after = self._updates_started
            await self._send(self._update_request(incremental=False), timeout)
            while self._updates_done <= after:
                if not await self._wait_update(deadline):
                    raise VNCError(
                        f"VNC server {self.where} sent no full frame within {timeout:g} s"
                    )
            if any(r.full for r in self._history if r.seq > after):
                return self._snapshot()
            # Only a partial update arrived (an answer to an older incremental request,
            # or a resize): ask again rather than guess whether ours is still pending.

    def current_frame(self) -> Frame:
        """The framebuffer as the last applied update left it, without asking the
        server (for viewers that keep updates flowing with `settle`); may be old."""
        return self._snapshot()

    def _snapshot(self) -> Frame:
        bgrx = self._fb.view(np.uint8).reshape(self.height, self.width, 4)
        # One channel at a time: 3x faster than copying a reversed-channel view.
        rgb = np.empty((self.height, self.width, 3), dtype=np.uint8)
        rgb[:, :, 0] = bgrx[:, :, 2]
        rgb[:, :, 1] = bgrx[:, :, 1]
        rgb[:, :, 2] = bgrx[:, :, 0]
        return Frame(pixels=rgb, monotonic=time.monotonic(), wall=time.time())

    async def settle(
        self,
        timeout: float = 3.0,
        quiet: float = 0.1,
        change_wait: float = 0.3,
        min_area: int = 64,
    ) -> SettleResult:
        """Wait for a visible change, then for `quiet` seconds without one.

        A change is an update whose really-changed boxes total more than `min_area`
        pixels; changes since the last input sent count, so an update that arrived
        between `perform()` and this call is not missed. Without a change within
        `change_wait` the screen is reported as unchanged and settled.
        """
        start = time.monotonic()
        deadline = start + timeout
        # Changes an earlier settle already reported do not count again.
        since = max(min(start, self._last_input), self._last_settle_end)
        self._continuous += 1
        try:
            await self._send(self._update_request(incremental=True), timeout)
            last_change = self._last_change(since, min_area)
            while last_change is None:
                first_deadline = min(start + change_wait, deadline)
                if not await self._wait_update(first_deadline):
                    return SettleResult(False, True, time.monotonic() - start)
                last_change = self._last_change(since, min_area)
            while True:
                # Measure quiet from the start at least: the server may still hold
                # changes it could not send before our request was outstanding.
                quiet_until = max(last_change, start) + quiet
                if time.monotonic() >= deadline:
                    return SettleResult(True, False, time.monotonic() - start)
                if not await self._wait_update(min(quiet_until, deadline)):
                    settled = time.monotonic() >= quiet_until
                    return SettleResult(True, settled, time.monotonic() - start)
                last_change = self._last_change(since, min_area) or last_change

        finally:
            self._continuous -= 1
            self._last_settle_end = time.monotonic()

    def _last_change(self, since: float, min_area: int) -> float | None:
        for record in reversed(self._history):
            if record.monotonic < since:
                return None
            if record.changed_area > min_area:
                return record.monotonic
        return None

    # ---------------------------------------------------------------- input

    def _check_point(self, x: int, y: int, what: str) -> None:
        if not (0 <= x < self.width and 0 <= y < self.height):
            raise ActionError(
                f"{what} at ({x}, {y}) is outside the {self.width}x{self.height} screen"
            )

    async def pointer(self, x: int, y: int, buttons_mask: int = 0, timeout: float = 5.0) -> None:
        """Send one PointerEvent (button mask bits: 1 left, 2 middle, 4 right, 8/16 wheel)."""
        self._check_point(x, y, "pointer")
        if not 0 <= buttons_mask <= 0xFF:
            raise ActionError(f"pointer button mask must be 0..255, got {buttons_mask}")
        self._last_input = time.monotonic()
        await self._send(struct.pack("!BBHH", 5, buttons_mask, x, y), timeout)

    async def key(self, keysym: int, down: bool, timeout: float = 5.0) -> None:
        self._last_input = time.monotonic()
        await self._send(struct.pack("!BBxxI", 4, int(down), keysym), timeout)

    async def key_combo(self, keysyms: list[int], timeout: float = 5.0) -> None:
        """Press the keys in order and release them in reverse (ctrl, shift, s)."""
        if not keysyms:
            raise ActionError("empty key combo")
        data = b"".join(struct.pack("!BBxxI", 4, 1, k) for k in keysyms)
        data += b"".join(struct.pack("!BBxxI", 4, 0, k) for k in reversed(keysyms))
        self._last_input = time.monotonic()
        await self._send(data, timeout)

    async def type_text(self, text: str, delay: float = 0.0, timeout: float = 30.0) -> None:
        """Type text, one press/release per character.

        An uppercase letter is sent as its own keysym (XK_A): Xvnc adds the shift
        itself, as it does for any keysym that needs a modifier on its keymap.
        """
        keysyms = [(char, char_keysym(char)) for char in text]
        deadline = time.monotonic() + timeout
        for char, keysym in keysyms:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise VNCError(
                    f"typing {len(text)} characters to {self.where} ran past {timeout:g} s"
                )
            shifted = self.explicit_shift and needs_shift(char)
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
        match action:
            case Click(x, y, button, count):
                self._check_point(x, y, "click")
                mask = BUTTON_MASKS[button]
                await self.pointer(x, y, 0, timeout)
                for _ in range(count):
                    await self.pointer(x, y, mask, timeout)
                    await self.pointer(x, y, 0, timeout)
            case Move(x, y):
                await self.pointer(x, y, 0, timeout)
            case Drag(x1, y1, x2, y2, button):
                self._check_point(x1, y1, "drag start")
                self._check_point(x2, y2, "drag end")
                mask = BUTTON_MASKS[button]
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
                wheel = WHEEL_DOWN_MASK if dy > 0 else WHEEL_UP_MASK
                await self.pointer(x, y, 0, timeout)
                for _ in range(abs(dy)):
                    await self.pointer(x, y, wheel, timeout)
                    await self.pointer(x, y, 0, timeout)
            case Type(text):
                # Paced typing takes longer than the action's usual bound.
                budget = timeout + len(text) * self.type_delay
                await self.type_text(text, delay=self.type_delay, timeout=budget)
            case Key(combo):
                await self.key_combo(parse_combo(combo), timeout)
            case Wait(seconds):
                self._check_open()
                await asyncio.sleep(seconds)
            case _:
                raise ActionError(f"not a GUI action: {action!r}")

    # ---------------------------------------------------------------- closing

    async def close(self) -> None:
        """Close the connection; safe to call twice."""
        if not self._closed:
            self._fail(VNCError(f"VNC connection to {self.where} was closed"))
        self._reader_task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._reader_task
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._writer.wait_closed(), 1.0)


def _changed_box_area(old: npt.NDArray[np.uint32], new: npt.NDArray[np.uint32]) -> int:
    """Area of the bounding box of the pixels that differ (0 when none do)."""
    diff = old != new
    rows = np.flatnonzero(diff.any(axis=1))
    if rows.size == 0:
        return 0
    cols = np.flatnonzero(diff.any(axis=0))
    return int((rows[-1] - rows[0] + 1) * (cols[-1] - cols[0] + 1))


# -------------------------------------------------------------------- handshake


async def _read_reason(reader: asyncio.StreamReader) -> str:
    (length,) = struct.unpack("!I", await reader.readexactly(4))
    return (await reader.readexactly(min(length, 65536))).decode("utf-8", "replace")


async def _handshake(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, where: str, password: str
) -> tuple[int, int, str]:
    version = await reader.readexactly(12)
    if not version.startswith(b"RFB ") or not version.endswith(b"\n"):
        raise VNCError(f"{where} is not a VNC server (greeting {version!r})")
    try:
        major, minor = int(version[4:7]), int(version[8:11])
    except ValueError:
        raise VNCError(f"{where} sent a malformed RFB version {version!r}") from None
    if (major, minor) < (3, 8):
        raise VNCError(f"VNC server {where} speaks RFB {major}.{minor}; 3.8 is required")
    writer.write(b"RFB 003.008\n")

    count = (await reader.readexactly(1))[0]
    if count == 0:
        reason = await _read_reason(reader)
        raise VNCError(f"VNC server {where} refused the connection: {reason}")
    offered = list(await reader.readexactly(count))
    if SECURITY_VNC_AUTH in offered:
        writer.write(bytes([SECURITY_VNC_AUTH]))
        challenge = await reader.readexactly(16)
        writer.write(vnc_auth_response(password, challenge))
    elif SECURITY_NONE in offered:
        writer.write(bytes([SECURITY_NONE]))
    else:
        raise VNCError(
            f"VNC server {where} offers security types {offered}; "
            f"only 1 (None) and 2 (VNC password) are supported"
        )
    (result,) = struct.unpack("!I", await reader.readexactly(4))
    if result != 0:
        reason = await _read_reason(reader)
        raise VNCError(f"VNC authentication failed at {where}: {reason or 'no reason given'}")

    writer.write(b"\x01")  # ClientInit: shared, so a person's viewer can watch too
    width, height = struct.unpack("!HH", await reader.readexactly(4))
    await reader.readexactly(16)  # the server's pixel format; we set our own below
    name = await _read_reason(reader)

    # 32 bpp, depth 24, little endian, true colour, 8 bits per channel: B, G, R, X bytes.
    writer.write(struct.pack("!B3xBBBBHHHBBB3x", 0, 32, 24, 0, 1, 255, 255, 255, 16, 8, 0))
    encodings = [
        ENCODING_RAW,
        ENCODING_COPYRECT,
        ENCODING_DESKTOP_SIZE,
    ]
    writer.write(struct.pack(f"!BxH{len(encodings)}i", 2, len(encodings), *encodings))
    await writer.drain()
    return width, height, name


async def connect(host: str, port: int, password: str, *, timeout: float = 5.0) -> VNCClient:
    """Connect and authenticate (VNC password, or None when that is all offered).

    Raises:
        VNCError: refused, timed out, wrong password or not speaking RFB 3.8.
    """
    where = f"{host}:{port}"
    writer: asyncio.StreamWriter | None = None
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(host, port)
            sock = writer.get_extra_info("socket")
            if sock is not None:
                # Input events are tiny; do not let Nagle hold them back.
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            width, height, name = await _handshake(reader, writer, where, password)
    except TimeoutError:
        _close_quietly(writer)
        raise VNCError(f"VNC connection to {where} timed out after {timeout:g} s") from None
    except asyncio.IncompleteReadError:
        _close_quietly(writer)
        raise VNCError(f"VNC server {where} closed the connection during the handshake") from None
    except ConnectionRefusedError:
        raise VNCError(f"VNC connection to {where} refused (is the server running?)") from None
    except OSError as exc:
        _close_quietly(writer)
        raise VNCError(f"cannot connect to VNC server {where}: {exc}") from None
    except VNCError:
        _close_quietly(writer)
        raise
    return VNCClient(reader, writer, host=host, port=port, width=width, height=height, name=name)


def _close_quietly(writer: asyncio.StreamWriter | None) -> None:
    if writer is not None:
        with contextlib.suppress(Exception):
            writer.close()


# -------------------------------------------------------------------- session


class VNCSession:
    """A VNC endpoint that reconnects once when the connection has dropped.

    Desktop backends hold one of these: a server restart or a VM snapshot revert
    breaks every open connection, and the next call should just work.
    """

    def __init__(
        self,
        host: str,
        port: int,
        password: str,
        *,
        timeout: float = 5.0,
        explicit_shift: bool = False,
        type_delay: float = 0.0,
    ) -> None:
        self.host = host
        self.port = port
        self.password = password
        self.timeout = timeout
        self.explicit_shift = explicit_shift
        self.type_delay = type_delay
        self._client: VNCClient | None = None
        self._lock = asyncio.Lock()

    @property
    def client(self) -> VNCClient | None:
        return self._client

    async def connected(self) -> VNCClient:
        """The open client, connecting (again) if there is none or it has dropped."""
        async with self._lock:
            if self._client is None or self._client.closed:
                if self._client is not None:
                    await self._client.close()
                    self._client = None
                self._client = await connect(
                    self.host, self.port, self.password, timeout=self.timeout
                )
                self._client.explicit_shift = self.explicit_shift
                self._client.type_delay = self.type_delay
            return self._client

    async def reconnect(self) -> VNCClient:
        """Drop the current connection (if any) and open a new one."""
        async with self._lock:
            if self._client is not None:
                await self._client.close()
                self._client = None
        return await self.connected()

    async def _retrying(self, call: Callable[[VNCClient], Awaitable[T]]) -> T:
        client = await self.connected()
        try:
            return await call(client)
        except VNCError:
            if not client.closed:
                raise  # a timeout on a live connection: reconnecting would not help
        client = await self.connected()
        return await call(client)

    async def frame(self, timeout: float = 5.0) -> Frame:
        return await self._retrying(lambda c: c.frame(timeout))

    async def settle(
        self,
        timeout: float = 3.0,
        quiet: float = 0.1,
        change_wait: float = 0.3,
        min_area: int = 64,
    ) -> SettleResult:
        return await self._retrying(lambda c: c.settle(timeout, quiet, change_wait, min_area))

    async def perform(self, action: GuiAction, timeout: float = 30.0) -> None:
        """Deliver one action. It is not retried after a drop in the middle of it
        (part of the input may have arrived); a connection that had already dropped
        is reopened first."""
        client = await self.connected()
        await client.perform(action, timeout)

    async def size(self) -> tuple[int, int]:
        client = await self.connected()
        return client.width, client.height

    async def close(self) -> None:
        async with self._lock:
            if self._client is not None:
                await self._client.close()
                self._client = None
