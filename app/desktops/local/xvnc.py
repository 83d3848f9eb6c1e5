"""Xvnc's side files and start-up: the X authority file, a free loopback port and the
display number Xvnc names through -displayfd (its password file's bytes are
`app.rfb.wire.vnc_password_file_bytes`, beside the response a client derives from the
same password).

Shared by the local desktop session (session.py) and the bare Xvnc of the live RFB tests
(bare_xvnc.py).
"""

from __future__ import annotations

import asyncio
import os
import socket
import struct
from pathlib import Path

XVNC = "Xvnc"


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
