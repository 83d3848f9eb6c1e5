"""The RFB 3.8 wire protocol, as DeskLoop's client and its recording proxy speak it.

Only what travels on the socket, with no connection state: the handshake (version,
security types, VNC authentication, ServerInit), the client messages, and the
server messages the client reads (FramebufferUpdate in Raw, CopyRect and the
DesktopSize pseudo-encodings; SetColourMapEntries, Bell and ServerCutText).

Each client message is one `struct.Struct` that includes its type byte: the client
packs it, and the proxy, which reads the type byte first, reads the rest of the
struct's size and unpacks the whole message before forwarding the same bytes. One
format thus serves both sides and they cannot drift apart. Server messages are
read only by the client, after their type byte, so their structs start after it.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from Crypto.Cipher import DES

from app.core.actions import Button
from app.core.errors import VNCError

PROTOCOL_VERSION = b"RFB 003.008\n"
"""The version both sides announce; a version message is always 12 bytes."""
VERSION_LENGTH = len(PROTOCOL_VERSION)

SECURITY_NONE = 1
SECURITY_VNC_AUTH = 2
CHALLENGE_LENGTH = 16

CLIENT_INIT_SHARED = b"\x01"
"""ClientInit asking for a shared session, so that a person's viewer can watch too."""

ENCODING_RAW = 0
ENCODING_COPYRECT = 1
ENCODING_DESKTOP_SIZE = -223
ENCODING_EXTENDED_DESKTOP_SIZE = -308
# Pseudo-encodings the client never asks for; the proxy names them to refuse them
# on a viewer's behalf (each makes the viewer send a message the proxy cannot parse).
ENCODING_QEMU_EXTENDED_KEY_EVENT = -258
ENCODING_QEMU_AUDIO = -261
ENCODING_XVP = -309
ENCODING_FENCE = -312
ENCODING_CONTINUOUS_UPDATES = -313
ENCODING_EXTENDED_CLIPBOARD = 0xC0A1E5CE - (1 << 32)  # as the signed 32 bits it is sent as

# PointerEvent button-mask bits (X buttons 1-7).
BUTTON_MASKS: dict[Button, int] = {"left": 1, "middle": 2, "right": 4}
WHEEL_UP_MASK = 8  # X button 4
WHEEL_DOWN_MASK = 16  # X button 5
WHEEL_SIDEWAYS_MASK = 32 | 64  # X buttons 6 and 7: horizontal wheel


class ClientMessage(IntEnum):
    SET_PIXEL_FORMAT = 0
    SET_ENCODINGS = 2
    FRAMEBUFFER_UPDATE_REQUEST = 3
    KEY_EVENT = 4
    POINTER_EVENT = 5
    CLIENT_CUT_TEXT = 6


class ServerMessage(IntEnum):
    FRAMEBUFFER_UPDATE = 0
    SET_COLOUR_MAP_ENTRIES = 1
    BELL = 2
    SERVER_CUT_TEXT = 3


# Client messages, type byte first (see the module docstring).
SET_PIXEL_FORMAT = struct.Struct("!B3x16s")  # type, pixel format
SET_ENCODINGS = struct.Struct("!BxH")  # type, count; count signed 32-bit encodings follow
FRAMEBUFFER_UPDATE_REQUEST = struct.Struct("!BBHHHH")  # type, incremental, x, y, w, h
KEY_EVENT = struct.Struct("!BBxxI")  # type, down, keysym
POINTER_EVENT = struct.Struct("!BBHH")  # type, button mask, x, y
CLIENT_CUT_TEXT = struct.Struct("!B3xI")  # type, length; the text follows

# Server messages, after their type byte.
FRAMEBUFFER_UPDATE = struct.Struct("!xH")  # rect count
RECT_HEADER = struct.Struct("!HHHHi")  # x, y, w, h, encoding
COPYRECT_SOURCE = struct.Struct("!HH")  # src x, src y
SET_COLOUR_MAP_ENTRIES = struct.Struct("!xHH")  # first colour, count; 6 bytes a colour
SERVER_CUT_TEXT = struct.Struct("!3xi")  # length; negative: the extended-clipboard format

# The handshake's numbers.
U32 = struct.Struct("!I")  # SecurityResult, and the length before a reason or a name
SERVER_INIT = struct.Struct("!HH16s")  # width, height, the server's pixel format

PIXEL_FORMAT = struct.Struct("!BBBBHHHBBB3x")
# bpp, depth, big endian, true colour, red/green/blue max, red/green/blue shift.
BGRX_PIXEL_FORMAT = PIXEL_FORMAT.pack(32, 24, 0, 1, 255, 255, 255, 16, 8, 0)
"""The format the client asks for: 32 bpp, depth 24, little endian, true colour,
8 bits a channel, so each pixel is the bytes B, G, R, X."""
BYTES_PER_PIXEL = 4

# The longest reason or desktop name read; a longer one is cut there.
_MAX_STRING = 65536


def _password_bytes(password: str) -> bytes:
    """The 8 bytes VNC keeps of a password (the rest is dropped, short ones padded):
    the server's password file and the client's response must derive the same."""
    return password.encode("latin-1", "replace")[:8].ljust(8, b"\0")


def _des_key(key: bytes) -> bytes:
    """`key` as a standard DES key: VNC's DES (d3des) takes each byte's bits in reverse."""
    return bytes(int(f"{byte:08b}"[::-1], 2) for byte in key)


# The fixed key VNC obfuscates stored passwords with, as written in VNC's sources.
_VNC_FILE_KEY = bytes([0x17, 0x52, 0x6B, 0x06, 0x23, 0x4E, 0x58, 0x07])


def vnc_auth_response(password: str, challenge: bytes) -> bytes:
    """The VNC authentication response: DES-ECB of the challenge under the password."""
    cipher = DES.new(_des_key(_password_bytes(password)), DES.MODE_ECB)
    return bytes(cipher.encrypt(challenge))


def vnc_password_file_bytes(password: str) -> bytes:
    """The contents of a VNC password file (what `vncpasswd -f` writes) for `password`:
    its 8 bytes under VNC's fixed key."""
    cipher = DES.new(_des_key(_VNC_FILE_KEY), DES.MODE_ECB)
    return bytes(cipher.encrypt(_password_bytes(password)))


# -------------------------------------------------------------------- client messages


def set_pixel_format(pixel_format: bytes = BGRX_PIXEL_FORMAT) -> bytes:
    return SET_PIXEL_FORMAT.pack(ClientMessage.SET_PIXEL_FORMAT, pixel_format)


def set_encodings(encodings: Sequence[int]) -> bytes:
    count = len(encodings)
    return SET_ENCODINGS.pack(ClientMessage.SET_ENCODINGS, count) + struct.pack(
        f"!{count}i", *encodings
    )


def framebuffer_update_request(incremental: bool, width: int, height: int) -> bytes:
    """A request for the whole screen (x = y = 0)."""
    return FRAMEBUFFER_UPDATE_REQUEST.pack(
        ClientMessage.FRAMEBUFFER_UPDATE_REQUEST, int(incremental), 0, 0, width, height
    )


def key_event(down: bool, keysym: int) -> bytes:
    return KEY_EVENT.pack(ClientMessage.KEY_EVENT, int(down), keysym)


def pointer_event(buttons_mask: int, x: int, y: int) -> bytes:
    return POINTER_EVENT.pack(ClientMessage.POINTER_EVENT, buttons_mask, x, y)


async def read_rest(
    reader: asyncio.StreamReader, kind: int, message: struct.Struct
) -> tuple[bytes, tuple[Any, ...]]:
    """The rest of a message whose type byte `kind` was read: its bytes as they came
    (type byte included) and its fields."""
    data = bytes([kind]) + await reader.readexactly(message.size - 1)
    return data, message.unpack(data)


async def read_encodings(reader: asyncio.StreamReader, count: int) -> tuple[int, ...]:
    """The encodings that follow a SetEncodings header."""
    return struct.unpack(f"!{count}i", await reader.readexactly(4 * count))


# -------------------------------------------------------------------- handshake


async def read_string(reader: asyncio.StreamReader) -> str:
    """A length-prefixed string: a refusal's reason or the desktop's name."""
    (length,) = U32.unpack(await reader.readexactly(U32.size))
    return (await reader.readexactly(min(length, _MAX_STRING))).decode("utf-8", "replace")


def security_types(offered: Sequence[int]) -> bytes:
    return bytes([len(offered), *offered])


async def read_security_types(reader: asyncio.StreamReader) -> list[int]:
    """The security types a server offers; none means it refused us (a reason follows)."""
    count = (await reader.readexactly(1))[0]
    return list(await reader.readexactly(count))


async def vnc_authenticate(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, password: str
) -> None:
    """Choose VNC authentication and answer the server's challenge."""
    writer.write(bytes([SECURITY_VNC_AUTH]))
    challenge = await reader.readexactly(CHALLENGE_LENGTH)
    writer.write(vnc_auth_response(password, challenge))


async def read_security_result(reader: asyncio.StreamReader) -> int:
    """0 when the server accepted the security handshake."""
    (result,) = U32.unpack(await reader.readexactly(U32.size))
    return int(result)


SECURITY_OK = U32.pack(0)


def security_failed(reason: bytes) -> bytes:
    return U32.pack(1) + U32.pack(len(reason)) + reason


@dataclass(frozen=True)
class ServerInit:
    width: int
    height: int
    name: str


async def client_handshake(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, where: str, password: str
) -> ServerInit:
    """The client's side, from the server's greeting to our pixel format and encodings.

    VNC authentication is chosen when offered, else None.

    Raises:
        VNCError: not RFB 3.8 or later, refused, no usable security type, or a
            wrong password; `where` names the server in the message.
    """
    version = await reader.readexactly(VERSION_LENGTH)
    if not version.startswith(b"RFB ") or not version.endswith(b"\n"):
        raise VNCError(f"{where} is not a VNC server (greeting {version!r})")
    try:
        major, minor = int(version[4:7]), int(version[8:11])
    except ValueError:
        raise VNCError(f"{where} sent a malformed RFB version {version!r}") from None
    if (major, minor) < (3, 8):
        raise VNCError(f"VNC server {where} speaks RFB {major}.{minor}; 3.8 is required")
    writer.write(PROTOCOL_VERSION)

    offered = await read_security_types(reader)
    if not offered:
        reason = await read_string(reader)
        raise VNCError(f"VNC server {where} refused the connection: {reason}")
    if SECURITY_VNC_AUTH in offered:
        await vnc_authenticate(reader, writer, password)
    elif SECURITY_NONE in offered:
        writer.write(bytes([SECURITY_NONE]))
    else:
        raise VNCError(
            f"VNC server {where} offers security types {offered}; "
            f"only 1 (None) and 2 (VNC password) are supported"
        )
    if await read_security_result(reader) != 0:
        reason = await read_string(reader)
        raise VNCError(f"VNC authentication failed at {where}: {reason or 'no reason given'}")

    writer.write(CLIENT_INIT_SHARED)
    # The server's own pixel format is ignored: we set ours just below.
    width, height, _ = SERVER_INIT.unpack(await reader.readexactly(SERVER_INIT.size))
    name = await read_string(reader)

    writer.write(set_pixel_format())
    writer.write(set_encodings([ENCODING_RAW, ENCODING_COPYRECT, ENCODING_DESKTOP_SIZE]))
    await writer.drain()
    return ServerInit(width, height, name)


# -------------------------------------------------------------------- framebuffer updates


@dataclass
class Rect:
    """One rectangle of a FramebufferUpdate, read but not yet applied."""

    x: int
    y: int
    w: int
    h: int
    encoding: int
    data: bytes = b""  # Raw: the pixels, BGRX
    src_x: int = 0  # CopyRect: where the pixels come from
    src_y: int = 0

    @property
    def carries_pixels(self) -> bool:
        """Raw or CopyRect; the others (DesktopSize) resize the screen."""
        return self.encoding in (ENCODING_RAW, ENCODING_COPYRECT)


async def read_rects(
    reader: asyncio.StreamReader, count: int, width: int, height: int, where: str
) -> list[Rect]:
    """The `count` rects of a FramebufferUpdate on a `width` x `height` screen.

    A DesktopSize rect changes the size the rects after it are checked against.

    Raises:
        VNCError: an encoding we did not ask for, or a rect outside the screen.
    """
    rects: list[Rect] = []
    for _ in range(count):
        x, y, w, h, enc = RECT_HEADER.unpack(await reader.readexactly(RECT_HEADER.size))
        rect = Rect(x, y, w, h, enc)
        if enc == ENCODING_RAW:
            rect.data = await reader.readexactly(w * h * BYTES_PER_PIXEL)
        elif enc == ENCODING_COPYRECT:
            src = await reader.readexactly(COPYRECT_SOURCE.size)
            rect.src_x, rect.src_y = COPYRECT_SOURCE.unpack(src)
        elif enc == ENCODING_DESKTOP_SIZE:
            width, height = w, h
        elif enc == ENCODING_EXTENDED_DESKTOP_SIZE:
            screens = (await reader.readexactly(4))[0]
            await reader.readexactly(16 * screens)
            # y carries the status; non-zero answers a resize request we never make.
            if y == 0:
                width, height = w, h
            else:
                continue
        else:
            raise VNCError(
                f"VNC protocol error from {where}: unrequested encoding {enc} "
                f"in a framebuffer update"
            )
        if rect.carries_pixels and (x + w > width or y + h > height):
            raise VNCError(
                f"VNC protocol error from {where}: rectangle {w}x{h}+{x}+{y} "
                f"outside the {width}x{height} screen"
            )
        rects.append(rect)
    return rects
