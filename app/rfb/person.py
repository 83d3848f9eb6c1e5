"""A person's one way into a desktop while an episode runs: the recording proxy.

Whatever a person does to an episode's desktop — a native VNC viewer, noVNC in a
browser, the TUI's take-over — is recorded by one `InputRecorder` from the RFB events
that reach the desktop, in the order they reach it: modifiers intact (alt+f stays
alt+f), typed runs merged into one `type`, quick clicks into a double click.

- Viewers connect to the `RFBRecordingProxy` (127.0.0.1, its own password), which
  records each event as it forwards it.
- The TUI's take-over hands actions to `submit`. They are sent one after the other,
  in the order given, as the RFB events `app.rfb.input` makes of them, over one
  connection of this object's; each event is given to the same recorder as it is
  sent. So a key typed in the terminal is recorded by the same code as a key typed
  in a viewer, and a burst cannot overtake itself (each action used to be sent by a
  task of its own, and a repeated letter waiting out its key-repeat gap let the next
  letters pass: `aabbcc` arrived as `abcabc`).
- `after_input(callback)` runs `callback` once everything submitted before it has
  been sent and recorded, with the typed run in progress emitted: a person's DONE
  after their typing comes after the typing.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from app.core.actions import Action, GuiAction
from app.core.errors import ActionError, VNCError
from app.rfb import wire
from app.rfb.client import VNCClient, VncEndpoint, connect
from app.rfb.input import InputSender
from app.rfb.proxy import InputRecorder, ProxyAddress, RFBRecordingProxy


class _RecordedLink:
    """A connection to the desktop whose every key and pointer event is given to the
    recorder as it is sent (an `InputLink` for `InputSender`)."""

    def __init__(self, client: VNCClient, recorder: InputRecorder) -> None:
        self._client = client
        self._recorder = recorder
        self.explicit_shift = client.explicit_shift
        self.type_delay = client.type_delay

    @property
    def where(self) -> str:
        return self._client.where

    @property
    def width(self) -> int:
        return self._client.width

    @property
    def height(self) -> int:
        return self._client.height

    def check_open(self) -> None:
        self._client.check_open()

    async def send(self, data: bytes, timeout: float) -> None:
        await self._client.send(data, timeout)
        # Recorded once sent, so an event the desktop never got is not a step.
        offset = 0
        while offset < len(data):
            kind = data[offset]
            if kind == wire.ClientMessage.KEY_EVENT:
                _, down, keysym = wire.KEY_EVENT.unpack_from(data, offset)
                self._recorder.key(bool(down), keysym)
                offset += wire.KEY_EVENT.size
            elif kind == wire.ClientMessage.POINTER_EVENT:
                _, mask, x, y = wire.POINTER_EVENT.unpack_from(data, offset)
                self._recorder.pointer(mask, x, y)
                offset += wire.POINTER_EVENT.size
            else:  # InputSender sends nothing else
                raise VNCError(f"input of RFB message type {kind} cannot be recorded")


@dataclass(frozen=True)
class _After:
    """A place in the queue: its callback runs once what came before is sent."""

    callback: Callable[[], None]


_Item = GuiAction | _After


class PersonInput:
    """The recording proxy in front of `upstream`, and an ordered, recorded sender.

    `emit` gets each recorded action (on the event loop's thread), whichever way it
    came in. `submit` types the way `upstream` wants keys (its `explicit_shift` and
    `type_delay`: QEMU's VNC server needs Shift held around capitals and paced keys,
    as a viewer's own keyboard gives them).
    """

    def __init__(self, upstream: VncEndpoint, emit: Callable[[Action], None], *, port: int = 0):
        self.upstream = upstream
        self.recorder = InputRecorder(emit)
        self.proxy = RFBRecordingProxy(upstream, self.recorder, port)
        self._queue: asyncio.Queue[_Item] = asyncio.Queue()
        self._sender: asyncio.Task[None] | None = None
        self._client: VNCClient | None = None
        self._input: InputSender | None = None
        self.errors: list[str] = []
        """Why an action from `submit` did not reach the desktop, oldest first."""
        self.on_error: Callable[[str], None] | None = None
        """Told each such error at once (the TUI shows it)."""

    @property
    def address(self) -> ProxyAddress | None:
        """Where a viewer connects (127.0.0.1, the proxy's own password); None until
        started."""
        return self.proxy.address if self.proxy.started else None

    @property
    def endpoint(self) -> VncEndpoint | None:
        """The proxy as a VNC endpoint (for noVNC's bridge); None until started."""
        address = self.address
        if address is None:
            return None
        return VncEndpoint(address.host, address.port, address.password)

    async def start(self) -> ProxyAddress:
        return await self.proxy.start()

    def submit(self, action: GuiAction) -> None:
        """Send `action` to the desktop after everything submitted before it, recorded
        as it is sent. Call on the event loop's thread."""
        self._put(action)

    def after_input(self, callback: Callable[[], None]) -> None:
        """Call `callback` once everything submitted so far is sent and recorded, the
        typed run in progress emitted first."""
        self._put(_After(callback))

    def _put(self, item: _Item) -> None:
        self._queue.put_nowait(item)
        if self._sender is None or self._sender.done():
            self._sender = asyncio.get_running_loop().create_task(
                self._send_all(), name="person-input"
            )

    async def drain(self) -> None:
        """Until every submitted action has been sent (or has failed)."""
        await self._queue.join()

    def flush(self) -> None:
        """Emit the action being merged (a typed run) now, not after the idle pause."""
        self.recorder.flush()

    async def _send_all(self) -> None:
        while True:
            item = await self._queue.get()
            try:
                if isinstance(item, _After):
                    self.recorder.flush()
                    item.callback()
                else:
                    sender = await self._sender_ready()
                    await sender.perform(item)
            except (ActionError, VNCError) as exc:
                self._failed(str(exc))
                if isinstance(exc, VNCError):
                    await self._disconnect()
            finally:
                self._queue.task_done()

    async def _sender_ready(self) -> InputSender:
        if self._client is None or self._client.closed or self._input is None:
            endpoint = self.upstream
            client = await connect(endpoint.host, endpoint.port, endpoint.password, timeout=10.0)
            client.explicit_shift = endpoint.explicit_shift
            client.type_delay = endpoint.type_delay
            self._client = client
            self._input = InputSender(_RecordedLink(client, self.recorder))
        return self._input

    async def _disconnect(self) -> None:
        if self._client is not None:
            await self._client.close()
        self._client = self._input = None

    def _failed(self, error: str) -> None:
        self.errors.append(error)
        if self.on_error is not None:
            self.on_error(error)

    async def close(self, timeout: float = 5.0) -> None:
        """Send what is still queued (for up to `timeout` seconds; the rest is
        dropped and said in `errors`), close the proxy and emit the action being
        merged."""
        if self._sender is not None and not self._sender.done():
            try:
                async with asyncio.timeout(timeout):
                    await self.drain()
            except TimeoutError:
                self.errors.append(f"{self._queue.qsize()} input(s) not sent: input closed")
        if self._sender is not None:
            self._sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sender
            self._sender = None
        await self._disconnect()
        await self.proxy.close()
