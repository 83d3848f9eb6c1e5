"""A view-only page's bytes: the handshake and the messages that ask to see go on,
every key, pointer and clipboard message is held back, however the bytes are cut
into websocket frames; a message the proxy does not take ends the bridge."""

from __future__ import annotations

import pytest

from app.rfb import wire
from app.seat.viewonly import HANDSHAKE, ViewOnly

HELLO = b"RFB 003.008\n" + bytes([2]) + bytes(range(16)) + b"\x01"
PIXELS = wire.SET_PIXEL_FORMAT.pack(0, bytes(16))
ENCODINGS = (
    wire.SET_ENCODINGS.pack(2, 2) + (7).to_bytes(4, "big") + (-223 % 2**32).to_bytes(4, "big")
)
UPDATE = wire.FRAMEBUFFER_UPDATE_REQUEST.pack(3, 1, 0, 0, 1280, 800)
KEY = wire.KEY_EVENT.pack(4, 1, 0x61)
POINTER = wire.POINTER_EVENT.pack(5, 1, 120, 80)
CUT = wire.CLIENT_CUT_TEXT.pack(6, 5) + b"hello"


@pytest.mark.parametrize("chunk", [1, 3, 7, 1000])
def test_only_seeing_goes_on_however_the_bytes_are_cut(chunk: int) -> None:
    assert len(HELLO) == HANDSHAKE
    stream = HELLO + PIXELS + KEY + ENCODINGS + POINTER + UPDATE + CUT + KEY + UPDATE
    view_only = ViewOnly()
    out = b"".join(view_only.feed(stream[i : i + chunk]) for i in range(0, len(stream), chunk))
    assert out == HELLO + PIXELS + ENCODINGS + UPDATE + UPDATE
    assert view_only.dropped == 4


def test_a_message_the_proxy_does_not_take_ends_it() -> None:
    view_only = ViewOnly()
    view_only.feed(HELLO)
    with pytest.raises(ValueError, match="type 251"):
        view_only.feed(bytes([251]) + bytes(7))
