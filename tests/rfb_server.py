"""A small RFB 3.8 server for tests: a real peer that speaks the server side byte by byte.

It keeps its own RGB framebuffer (the truth a client's frames are compared with),
answers FramebufferUpdateRequests like a real server (non-incremental: the whole
screen in Raw stripes; incremental: whatever changed since, or nothing until
something does), and records every client message it parses. The VNC password
check uses vncdotool's DES code, an implementation independent of the client's.
"""

from __future__ import annotations

import asyncio
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from vncdotool.rfb import _vnc_des, des_encrypt

RGBArray = npt.NDArray[np.uint8]

# What the client must ask for: 32 bpp, depth 24, little endian, true colour, BGRX.
EXPECTED_PIXEL_FORMAT = struct.pack("!BBBBHHHBBB3x", 32, 24, 0, 1, 255, 255, 255, 16, 8, 0)


@dataclass(frozen=True)
class KeyEvent:
    down: bool
    keysym: int


@dataclass(frozen=True)
class PointerEvent:
    mask: int
    x: int
    y: int


@dataclass(frozen=True)
class UpdateRequest:
    incremental: bool
    x: int
    y: int
    w: int
    h: int


ClientEvent = KeyEvent | PointerEvent | UpdateRequest


def to_bgrx(pixels: RGBArray) -> bytes:
    """RGB pixels as the client's pixel format puts them on the wire (B, G, R, X)."""
    h, w, _ = pixels.shape
    out = np.zeros((h, w, 4), dtype=np.uint8)
    out[:, :, 0] = pixels[:, :, 2]
    out[:, :, 1] = pixels[:, :, 1]
    out[:, :, 2] = pixels[:, :, 0]
    # Garbage in the padding byte: the client must ignore it.
    out[:, :, 3] = 0xA5
    return out.tobytes()


class RFBTestServer:
    def __init__(
        self,
        width: int = 64,
        height: int = 48,
        *,
        password: str = "s3cret",
        challenge: bytes = bytes(range(16)),
        security_types: tuple[int, ...] = (2,),
        refuse_reason: str | None = None,
        name: str = "test-desktop",
        stripe_height: int = 16,
    ) -> None:
        self.fb: RGBArray = np.zeros((height, width, 3), dtype=np.uint8)
        self.password = password
        self.challenge = challenge
        self.security_types = security_types
        self.refuse_reason = refuse_reason
        self.name = name
        self.stripe_height = stripe_height
        self.events: list[ClientEvent] = []
        self.pixel_format: bytes | None = None
        self.encodings: list[int] = []
        self.shared: bool | None = None
        self.auth_response: bytes | None = None
        self.connections = 0
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._pending_incremental = False
        self._queued: list[bytes] = []  # encoded rects waiting for an incremental request
        self._changed = asyncio.Event()

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def stop(self) -> None:
        self.drop()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def drop(self) -> None:
        """Close the client connection abruptly, as a crashing server would."""
        if self._writer is not None:
            self._writer.transport.abort()
            self._writer = None

    # ------------------------------------------------------------ screen changes

    def paint(self, x: int, y: int, pixels: RGBArray) -> None:
        """Change a rectangle and send it as Raw once the client asks."""
        h, w, _ = pixels.shape
        self.fb[y : y + h, x : x + w] = pixels
        self._queue(struct.pack("!HHHHi", x, y, w, h, 0) + to_bgrx(pixels))

    def copy(self, src_x: int, src_y: int, w: int, h: int, x: int, y: int) -> None:
        """Copy a rectangle on screen and send it as CopyRect once the client asks."""
        self.fb[y : y + h, x : x + w] = self.fb[src_y : src_y + h, src_x : src_x + w].copy()
        self._queue(struct.pack("!HHHHiHH", x, y, w, h, 1, src_x, src_y))

    def resize(self, width: int, height: int, fill: tuple[int, int, int]) -> None:
        """Change the screen size: DesktopSize, then the whole new screen in Raw."""
        self.fb = np.zeros((height, width, 3), dtype=np.uint8)
        self.fb[:, :] = fill
        rects = [struct.pack("!HHHHi", 0, 0, width, height, -223), *self._full_rects()]
        self._queued.clear()
        self._queue(*rects)

    def bell(self) -> None:
        self._write(b"\x02")

    def cut_text(self, text: str) -> None:
        data = text.encode("latin-1")
        self._write(struct.pack("!B3xI", 3, len(data)) + data)

    def send_raw_message(self, data: bytes) -> None:
        """Write bytes as they are (to send a protocol error to the client)."""
        self._write(data)

    # ------------------------------------------------------------ waiting

    async def wait_for(
        self, predicate: Callable[[list[ClientEvent]], bool], timeout: float = 5.0
    ) -> list[ClientEvent]:
        """Wait until the recorded events satisfy `predicate`; the events then."""
        deadline = time.monotonic() + timeout
        while not predicate(self.events):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"server never saw the expected events: {self.events}")
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except TimeoutError:
                continue
        return list(self.events)

    def input_events(self) -> list[KeyEvent | PointerEvent]:
        return [e for e in self.events if isinstance(e, KeyEvent | PointerEvent)]

    # ------------------------------------------------------------ protocol

    def _full_rects(self) -> list[bytes]:
        h, w, _ = self.fb.shape
        rects = []
        for top in range(0, h, self.stripe_height):
            stripe = self.fb[top : top + self.stripe_height]
            rects.append(struct.pack("!HHHHi", 0, top, w, stripe.shape[0], 0) + to_bgrx(stripe))
        return rects

    def _queue(self, *rects: bytes) -> None:
        self._queued.extend(rects)
        if self._pending_incremental:
            self._flush()

    def _flush(self) -> None:
        rects, self._queued = self._queued, []
        self._pending_incremental = False
        self._send_update(rects)

    def _send_update(self, rects: list[bytes]) -> None:
        self._write(struct.pack("!BxH", 0, len(rects)) + b"".join(rects))

    def _write(self, data: bytes) -> None:
        if self._writer is not None:
            self._writer.write(data)

    def _record(self, event: ClientEvent) -> None:
        self.events.append(event)
        self._changed.set()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writer = writer
        self._pending_incremental = False
        try:
            if await self._handshake(reader, writer):
                await self._messages(reader)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            if self._writer is writer:
                self._writer = None

    async def _handshake(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"RFB 003.008\n")
        version = await reader.readexactly(12)
        assert version == b"RFB 003.008\n", version
        if self.refuse_reason is not None:
            reason = self.refuse_reason.encode()
            writer.write(b"\x00" + struct.pack("!I", len(reason)) + reason)
            return False
        writer.write(bytes([len(self.security_types), *self.security_types]))
        chosen = (await reader.readexactly(1))[0]
        assert chosen in self.security_types, chosen
        if chosen == 2:
            writer.write(self.challenge)
            self.auth_response = await reader.readexactly(16)
            expected = des_encrypt(_vnc_des(self.password), self.challenge)
            if self.auth_response != expected:
                reason = b"Authentication failure: wrong password"
                writer.write(struct.pack("!II", 1, len(reason)) + reason)
                return False
        writer.write(struct.pack("!I", 0))
        self.shared = (await reader.readexactly(1))[0] == 1
        h, w, _ = self.fb.shape
        # Advertise a different native format (16 bpp) so a client that skips
        # SetPixelFormat decodes garbage and the tests notice.
        native = struct.pack("!BBBBHHHBBB3x", 16, 16, 0, 1, 31, 63, 31, 11, 5, 0)
        name = self.name.encode()
        writer.write(struct.pack("!HH", w, h) + native + struct.pack("!I", len(name)) + name)
        return True

    async def _messages(self, reader: asyncio.StreamReader) -> None:
        while True:
            kind = (await reader.readexactly(1))[0]
            if kind == 0:
                self.pixel_format = (await reader.readexactly(19))[3:]
            elif kind == 2:
                (count,) = struct.unpack("!xH", await reader.readexactly(3))
                data = await reader.readexactly(4 * count)
                self.encodings = list(struct.unpack(f"!{count}i", data))
            elif kind == 3:
                inc, x, y, w, h = struct.unpack("!BHHHH", await reader.readexactly(9))
                self._record(UpdateRequest(bool(inc), x, y, w, h))
                if not inc:
                    # A full answer makes whatever was queued redundant.
                    self._queued.clear()
                    self._pending_incremental = False
                    self._send_update(self._full_rects())
                elif self._queued:
                    self._flush()
                else:
                    self._pending_incremental = True
            elif kind == 4:
                down, keysym = struct.unpack("!BxxI", await reader.readexactly(7))
                self._record(KeyEvent(bool(down), keysym))
            elif kind == 5:
                mask, x, y = struct.unpack("!BHH", await reader.readexactly(5))
                self._record(PointerEvent(mask, x, y))
            elif kind == 6:
                (length,) = struct.unpack("!3xI", await reader.readexactly(7))
                await reader.readexactly(length)
            else:
                raise AssertionError(f"unknown client message type {kind}")
