"""An asyncio RFB 3.8 (VNC) client: frames as numpy arrays, input from GUI actions.

This module is the package's interface for a connection: `connect()` gives a
`VNCClient`, `VNCSession` reconnects one when it drops, `VncEndpoint` says where a
person's viewer can reach a desktop. The client is assembled from its parts:

- `wire`: the bytes (handshake, VNC authentication, client and server messages);
- `framebuffer`: the screen the updates are applied to, `frame()` and `settle()`;
- `input`: GUI actions as key and pointer events (QEMU's Shift and pacing).

Why our own client: vncdotool runs Twisted in a thread, deadlocks when used from a
running asyncio loop and can hand out stale frames (FIELD_NOTES). This client is
one socket owned by one loop: a background reader task owns the read side and
hands each FramebufferUpdate, read whole, to the framebuffer; frame(), settle() and
input only write, and wait on the reader.

Only Raw and CopyRect are requested (plus the DesktopSize pseudo-encodings): on
loopback Raw is the fastest (ZRLE decoding in Python is ~75x slower).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from app.core.actions import GuiAction
from app.core.errors import VNCError
from app.core.frames import Frame, SettleResult
from app.rfb import wire
from app.rfb.framebuffer import Framebuffer
from app.rfb.input import InputSender
from app.rfb.pace import Pace


@dataclass(frozen=True)
class VncEndpoint:
    """Where a person's VNC viewer can reach the desktop (always loopback)."""

    host: str
    port: int
    password: str
    explicit_shift: bool = False
    """How the server wants typed capitals (QEMU's: with Shift held; `VNCClient`)."""
    type_delay: float = 0.0
    """Seconds between typed keys the server needs (QEMU's input queue; `VNCClient`)."""


T = TypeVar("T")


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
        self.explicit_shift = False
        """Hold Shift around characters typed with it (`keys.needs_shift`): QEMU's VNC
        server does not add it (see `app.rfb.input`)."""
        self.type_delay = 0.0
        """Seconds between typed characters, for QEMU's VNC server's input queue."""
        self._screen = Framebuffer(width, height, self.where)
        self._input = InputSender(self)
        self._error: VNCError | None = None
        self._closed = False
        self.bells = 0
        self.cut_text = ""
        loop = asyncio.get_running_loop()
        self._update_signal: asyncio.Future[None] = loop.create_future()
        self._reader_task = loop.create_task(self._read_loop(), name=f"vnc-reader-{host}:{port}")

    # ---------------------------------------------------------------- state

    @property
    def width(self) -> int:
        return self._screen.width

    @property
    def height(self) -> int:
        return self._screen.height

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def where(self) -> str:
        return f"{self.host}:{self.port}"

    def check_open(self) -> None:
        """Raise the error the connection failed with, or that it is closed."""
        if self._error is not None:
            raise self._error
        if self._closed:
            raise VNCError(f"VNC connection to {self.where} is closed")

    async def until_closed(self) -> VNCError:
        """Wait until the connection has ended (the server closed it, it failed, or
        `close()` was called) and return the error it ended with. Cancelling the
        wait leaves the connection alone."""
        # asyncio.wait, not await: it neither raises the reader's end nor cancels
        # the reader when this wait is cancelled.
        await asyncio.wait({self._reader_task})
        return self._error or VNCError(f"VNC connection to {self.where} was closed")

    # ---------------------------------------------------------------- reader

    async def _read_loop(self) -> None:
        reader = self._reader
        try:
            while True:
                kind = (await reader.readexactly(1))[0]
                if kind == wire.ServerMessage.FRAMEBUFFER_UPDATE:
                    await self._read_update()
                elif kind == wire.ServerMessage.SET_COLOUR_MAP_ENTRIES:
                    # We asked for true colour: skip the colours.
                    head = await reader.readexactly(wire.SET_COLOUR_MAP_ENTRIES.size)
                    _first, count = wire.SET_COLOUR_MAP_ENTRIES.unpack(head)
                    await reader.readexactly(6 * count)
                elif kind == wire.ServerMessage.BELL:
                    self.bells += 1
                elif kind == wire.ServerMessage.SERVER_CUT_TEXT:
                    head = await reader.readexactly(wire.SERVER_CUT_TEXT.size)
                    (length,) = wire.SERVER_CUT_TEXT.unpack(head)
                    # A negative length is the extended-clipboard format; skip its bytes.
                    data = await reader.readexactly(abs(length))
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
        head = await self._reader.readexactly(wire.FRAMEBUFFER_UPDATE.size)
        (count,) = wire.FRAMEBUFFER_UPDATE.unpack(head)
        screen = self._screen
        seq = screen.begin_update()
        rects = await wire.read_rects(self._reader, count, screen.width, screen.height, self.where)
        screen.apply(seq, rects)
        if screen.wants_updates:
            self._send_nowait(screen.update_request(incremental=True))
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

    async def wait_update(self, deadline: float) -> bool:
        """Wait for the next applied update; False when `deadline` passes first."""
        self.check_open()
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        try:
            async with asyncio.timeout(remaining):
                await asyncio.shield(self._update_signal)
        except TimeoutError:
            return False
        self.check_open()
        return True

    # ---------------------------------------------------------------- writing

    def _send_nowait(self, data: bytes) -> None:
        if self._closed:
            return
        try:
            self._writer.write(data)
        except (OSError, RuntimeError) as exc:
            self._fail(VNCError(f"VNC connection to {self.where} failed while sending: {exc}"))

    async def send(self, data: bytes, timeout: float) -> None:
        """Write client messages and wait until the socket took them."""
        self.check_open()
        try:
            self._writer.write(data)
            async with asyncio.timeout(timeout):
                await self._writer.drain()
        except TimeoutError:
            raise VNCError(
                f"VNC server {self.where} did not accept input within {timeout:g} s"
            ) from None
        except (OSError, RuntimeError) as exc:
            self._fail(VNCError(f"VNC connection to {self.where} failed while sending: {exc}"))
            self.check_open()

    # ---------------------------------------------------------------- frames

    async def frame(self, timeout: float = 5.0) -> Frame:
        """The whole screen as RGB, from an update the server sent after this call.

        Raises:
            VNCError: no complete update within `timeout`, or the connection dropped.
        """
        return await self._screen.frame(self, timeout)

    @property
    def pace(self) -> Pace:
        """What this connection learned of the screen's pace (`settle(adaptive=True)`)."""
        return self._screen.pace

    def current_frame(self) -> Frame:
        """The framebuffer as the last applied update left it, without asking the
        server (for viewers that keep updates flowing with `settle`); may be old."""
        return self._screen.snapshot()

    async def settle(
        self,
        timeout: float = 3.0,
        quiet: float = 0.1,
        change_wait: float = 0.3,
        min_area: int = 64,
        *,
        adaptive: bool = False,
    ) -> SettleResult:
        """Wait for a visible change, then for `quiet` seconds without one.

        A change is an update whose really-changed boxes total more than `min_area`
        pixels; changes since the last input sent count, so an update that arrived
        between `perform()` and this call is not missed. Without a change within
        `change_wait` the screen is reported as unchanged and settled. `adaptive`:
        `quiet` is the most it waits, the screen's own pace after the last action's
        kind decides (`app.rfb.pace`).
        """
        return await self._screen.settle(
            self,
            last_input=self._input.last_input,
            timeout=timeout,
            quiet=quiet,
            change_wait=change_wait,
            min_area=min_area,
            kind=self._input.last_kind if adaptive else None,
        )

    # ---------------------------------------------------------------- input

    async def pointer(self, x: int, y: int, buttons_mask: int = 0, timeout: float = 5.0) -> None:
        """Send one PointerEvent (button mask bits: 1 left, 2 middle, 4 right, 8/16 wheel)."""
        await self._input.pointer(x, y, buttons_mask, timeout)

    async def key(self, keysym: int, down: bool, timeout: float = 5.0) -> None:
        await self._input.key(keysym, down, timeout)

    async def key_combo(self, keysyms: list[int], timeout: float = 5.0) -> None:
        """Press the keys in order and release them in reverse (ctrl, shift, s)."""
        await self._input.key_combo(keysyms, timeout)

    async def type_text(self, text: str, delay: float = 0.0, timeout: float = 30.0) -> None:
        """Type text, one press/release per character (see `InputSender.type_text`)."""
        await self._input.type_text(text, delay, timeout)

    async def perform(self, action: GuiAction, timeout: float = 30.0) -> None:
        """Deliver one GUI action; returns once its input was sent (Wait sleeps).
        Raises ActionError or VNCError (see `InputSender.perform`)."""
        await self._input.perform(action, timeout)

    # ---------------------------------------------------------------- closing

    async def close(self) -> None:
        """Close the connection; safe to call twice."""
        if not self._closed:
            self._fail(VNCError(f"VNC connection to {self.where} was closed"))
        self._reader_task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._reader_task
        with contextlib.suppress(Exception):
            async with asyncio.timeout(1.0):
                await self._writer.wait_closed()


# -------------------------------------------------------------------- connecting


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
            init = await wire.client_handshake(reader, writer, where, password)
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
    return VNCClient(
        reader, writer, host=host, port=port, width=init.width, height=init.height, name=init.name
    )


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
        *,
        adaptive: bool = False,
    ) -> SettleResult:
        return await self._retrying(
            lambda c: c.settle(timeout, quiet, change_wait, min_area, adaptive=adaptive)
        )

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
