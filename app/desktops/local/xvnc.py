"""Xvnc's side files and start-up: the VNC password file, the X authority file, a free
loopback port and the display number Xvnc names through -displayfd.

Shared by the local desktop session (session.py) and the bare Xvnc of the live RFB tests
(bare_xvnc.py); the TUI and `vm view` write viewer password files with
`vnc_password_file_bytes` too.
"""

from __future__ import annotations

import asyncio
import os
import socket
import struct
from pathlib import Path

from Crypto.Cipher import DES

XVNC = "Xvnc"

# The fixed key VNC uses to obfuscate stored passwords, as written in VNC's
# sources (d3des). d3des takes key bits in the reverse order of standard DES,
# so for a standard DES implementation each key byte is bit-reversed.
_VNC_FILE_KEY = bytes([0x17, 0x52, 0x6B, 0x06, 0x23, 0x4E, 0x58, 0x07])
_STD_DES_KEY = bytes(int(f"{b:08b}"[::-1], 2) for b in _VNC_FILE_KEY)


def vnc_password_file_bytes(password: str) -> bytes:
    """The contents of a VNC password file (what `vncpasswd -f` writes) for `password`.

    VNC keeps only the first 8 bytes of a password.
    """
    raw = password.encode("latin-1")[:8].ljust(8, b"\0")
    return bytes(DES.new(_STD_DES_KEY, DES.MODE_ECB).encrypt(raw))


def xauthority_bytes(cookie: bytes) -> bytes:
    """An Xauthority file with one MIT-MAGIC-COOKIE-1 entry for any host and display.

    The wildcard entry serves both sides: Xvnc reads it with `-auth` before its
    display number is known, and clients match it whatever the number turns out to be.
    """

    def counted(data: bytes) -> bytes:
        return struct.pack(">H", len(data)) + data

    family_wild = 0xFFFF
    return (
        struct.pack(">H", family_wild)
        + counted(b"")
        + counted(b"")
        + counted(b"MIT-MAGIC-COOKIE-1")
        + counted(cookie)
    )


def free_port() -> int:
    # Racy by nature (another process may take it before Xvnc binds): the caller
    # retries on a bind failure.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def read_display_number(fd: int) -> str:
    """Read Xvnc's `-displayfd` answer: the display number and a newline, or '' on EOF."""
    os.set_blocking(fd, False)
    loop = asyncio.get_running_loop()
    data = b""
    while not data.endswith(b"\n"):
        readable: asyncio.Future[None] = loop.create_future()
        loop.add_reader(fd, _wake, readable)
        try:
            await readable
        finally:
            loop.remove_reader(fd)
        chunk = os.read(fd, 64)
        if not chunk:
            return ""
        data += chunk
    return data.decode().strip()


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def log_tail(path: Path, start: int = 0, limit: int = 1500) -> str:
    try:
        with open(path, "rb") as log:
            log.seek(start)
            text = log.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return text[-limit:].strip()
