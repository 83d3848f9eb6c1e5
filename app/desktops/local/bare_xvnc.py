"""A bare Xvnc: one X display behind a VNC password, with no window manager or session.

It exists to drive the RFB client (app/rfb/client.py) against a real server with nothing
else in the way: the live tests in tests/rfb/test_vnc.py and bench/bench_vnc.py share
it. Episodes use `LocalDesktop` (desktop.py), which builds a whole session around its
Xvnc.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from app.core.errors import DesktopError
from app.desktops.local.xvnc import XVNC, free_port
from app.rfb.wire import vnc_password_file_bytes


@dataclass(frozen=True)
class BareXvnc:
    display: str
    """The X display, as in DISPLAY (":N")."""
    port: int
    """The RFB port on 127.0.0.1."""
    env: dict[str, str]
    """This process's environment with DISPLAY set and HOME in the server's folder,
    for starting X clients on the display."""


@contextmanager
def bare_xvnc(folder: Path, password: str, *, retro: bool = False) -> Iterator[BareXvnc]:
    """Run a 1280x800, depth 24 Xvnc on 127.0.0.1 at a free port until the block ends.

    Args:
        folder: holds the password file and Xvnc's log (xvnc.log), and is HOME.
        password: the VNC password.
        retro: the classic root window, whose cursor is drawn into frames.

    Raises:
        DesktopError: Xvnc exited before it named its display (the log's tail says why).
    """
    password_file = folder / "passwd"
    password_file.write_bytes(vnc_password_file_bytes(password))
    log = folder / "xvnc.log"
    port = free_port()
    read_fd, write_fd = os.pipe()
    try:
        with log.open("wb") as log_file:
            proc = subprocess.Popen(
                [XVNC, *(["-retro"] if retro else []),
                 "-geometry", "1280x800", "-depth", "24", "-rfbport", str(port),
                 "-localhost", "-interface", "127.0.0.1", "-UseIPv6=0", "-nolisten", "tcp",
                 "-SecurityTypes", "VncAuth", "-PasswordFile", str(password_file),
                 "-AlwaysShared", "-displayfd", str(write_fd)],
                pass_fds=(write_fd,), stdout=subprocess.DEVNULL, stderr=log_file,
            )  # fmt: skip
    except OSError:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    try:
        with os.fdopen(read_fd, "rb") as pipe:
            number = pipe.readline().strip().decode()
        if not number:
            raise DesktopError(f"Xvnc did not start: {log.read_text()[-2000:]}")
        env = {**os.environ, "DISPLAY": f":{number}", "HOME": str(folder)}
        yield BareXvnc(f":{number}", port, env)
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
