"""A view-only desktop, held by the server, not only by the page.

noVNC's `viewOnly` keeps an honest page from sending input, but the websocket is the
participant's own: a page changed in the browser's console could still send keys.
When the condition gives the participant no hand on the desktop, the bridge passes
the viewer's bytes through `ViewOnly`, which forwards the handshake and the messages
that only ask to see (pixel format, encodings, update requests) and drops every key,
pointer and clipboard message before it reaches the recording proxy.

The proxy (app.rfb.proxy) speaks RFB 3.7/3.8 with VNC authentication only and
refuses the encodings that would bring any other client message, so the viewer's
side is the handshake (version, security type, the challenge's response,
ClientInit) and then exactly the six message types below; any other ends the bridge.
"""

from __future__ import annotations

from app.rfb import wire

HANDSHAKE = wire.VERSION_LENGTH + 1 + wire.CHALLENGE_LENGTH + 1
"""The viewer's bytes before its first message: version, security type, the VNC
authentication's response, ClientInit."""

CLIPBOARD_LIMIT = 1 << 20
"""The most clipboard text held back (the proxy refuses more too)."""

_Message = wire.ClientMessage
_SEEING = {_Message.SET_PIXEL_FORMAT, _Message.SET_ENCODINGS, _Message.FRAMEBUFFER_UPDATE_REQUEST}


class ViewOnly:
    """Feed the viewer's bytes as they come; forward what `feed` returns."""

    def __init__(self) -> None:
        self._handshake = HANDSHAKE
        self._buffer = b""
        self.dropped = 0
        """Input messages held back (for the log, and tests)."""

    def feed(self, data: bytes) -> bytes:
        """What of the bytes so far may go on (whole messages only; the rest waits).

        Raises:
            ValueError: a message the proxy does not take (the bridge ends).
        """
        out = b""
        if self._handshake:
            taken = data[: self._handshake]
            self._handshake -= len(taken)
            out, data = taken, data[len(taken) :]
        self._buffer += data
        while self._buffer:
            length = _length(self._buffer)
            if length is None or len(self._buffer) < length:
                break
            message, self._buffer = self._buffer[:length], self._buffer[length:]
            if message[0] in _SEEING:
                out += message
            else:
                self.dropped += 1
        return out


def _length(buffer: bytes) -> int | None:
    """The length of the message `buffer` starts with; None until its header is in."""
    kind = buffer[0]
    if kind == _Message.SET_PIXEL_FORMAT:
        return wire.SET_PIXEL_FORMAT.size
    if kind == _Message.FRAMEBUFFER_UPDATE_REQUEST:
        return wire.FRAMEBUFFER_UPDATE_REQUEST.size
    if kind == _Message.KEY_EVENT:
        return wire.KEY_EVENT.size
    if kind == _Message.POINTER_EVENT:
        return wire.POINTER_EVENT.size
    if kind == _Message.SET_ENCODINGS:
        if len(buffer) < wire.SET_ENCODINGS.size:
            return None
        _, count = wire.SET_ENCODINGS.unpack_from(buffer)
        return wire.SET_ENCODINGS.size + 4 * int(count)
    if kind == _Message.CLIENT_CUT_TEXT:
        if len(buffer) < wire.CLIENT_CUT_TEXT.size:
            return None
        _, size = wire.CLIENT_CUT_TEXT.unpack_from(buffer)
        if size >= 1 << 31:  # extended clipboard: a negative length, in two's complement
            size = (1 << 32) - size
        if size > CLIPBOARD_LIMIT:
            raise ValueError(f"{size} bytes of clipboard text: refused")
        return wire.CLIENT_CUT_TEXT.size + int(size)
    raise ValueError(f"RFB client message type {kind}: not taken from a view-only page")
