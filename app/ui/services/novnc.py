"""A browser viewer with nothing to install: noVNC behind websockify on 127.0.0.1.

When no native VNC viewer (TigerVNC's) is on PATH, `o` serves Debian's noVNC
(`/usr/share/novnc`) and a WebSocket-to-VNC bridge (`websockify`) for one desktop and
gives the person a URL any browser opens. The page still asks the desktop's VNC
server for its password: websockify only forwards bytes, so serving noVNC never opens
a desktop that had none, and a desktop without a password is refused here. The
password travels in the URL's fragment (`#password=`), which browsers never send to
the server, so it is not in websockify's log; noVNC's `vnc_lite.html` reads it from
there and connects at once.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import quote

from app.core.errors import DesktopError
from app.core.settings import read_settings

if TYPE_CHECKING:
    # The TUI makes its NoVncServers at start; the local desktop module (with its
    # VNC password cipher) and the VNC client are imported when a viewer is served.
    from app.rfb.client import VncEndpoint

# How long websockify may take to listen (a Python start-up; seconds on a busy host).
START_TIMEOUT = 15.0


@dataclass
class NoVncServer:
    """One websockify process serving noVNC for one desktop."""

    endpoint: VncEndpoint
    port: int
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        """The page that connects at once, the password in the fragment (never sent)."""
        return (
            f"http://127.0.0.1:{self.port}/vnc_lite.html"
            f"#autoconnect=true&password={quote(self.endpoint.password, safe='')}"
        )

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)


def novnc_available() -> str | None:
    """Why noVNC cannot be served here, or None when it can."""
    if shutil.which("websockify") is None:
        return "websockify is not installed (Debian: apt-get install websockify)"
    folder = read_settings().novnc_dir
    if not (folder / "vnc_lite.html").is_file():
        return f"noVNC is not installed in {folder} (Debian: apt-get install novnc)"
    return None


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def start_novnc(endpoint: VncEndpoint, *, timeout: float = START_TIMEOUT) -> NoVncServer:
    """Serve noVNC for `endpoint` on a free 127.0.0.1 port; returns once it listens.

    Blocking (a process start and a wait): call it off the UI loop.

    Raises:
        DesktopError: no password, noVNC or websockify missing, or it did not start.
    """
    if not endpoint.password:
        raise DesktopError(
            f"{endpoint.host}:{endpoint.port} has no VNC password; noVNC is served only "
            "for desktops that have one"
        )
    if endpoint.host not in ("127.0.0.1", "localhost", "::1"):
        # websockify would bridge a remote server onto this host's loopback: fine, but
        # the endpoint the TUI is given is always loopback, so anything else is a bug.
        raise DesktopError(f"noVNC: {endpoint.host} is not a loopback address")
    missing = novnc_available()
    if missing is not None:
        raise DesktopError(missing)
    from app.desktops.local.xvnc import free_port

    port = free_port()
    try:
        process = subprocess.Popen(
            [
                "websockify",
                "--web",
                str(read_settings().novnc_dir),
                f"127.0.0.1:{port}",
                f"{endpoint.host}:{endpoint.port}",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        raise DesktopError(f"cannot start websockify: {exc}") from exc
    server = NoVncServer(endpoint, port, process)
    deadline = time.monotonic() + timeout
    while not _listening(port):
        if process.poll() is not None:
            err = process.stderr.read().decode(errors="replace") if process.stderr else ""
            raise DesktopError(f"websockify exited ({process.returncode}): {err.strip()[-300:]}")
        if time.monotonic() > deadline:
            server.stop()
            raise DesktopError(f"websockify did not listen on 127.0.0.1:{port} in {timeout:.0f} s")
        time.sleep(0.05)
    # Its log would fill the pipe and block it: nothing reads stderr from here on.
    if process.stderr is not None:
        process.stderr.close()
        process.stderr = None
    return server


@dataclass
class NoVncServers:
    """The session's noVNC servers, one per desktop name, stopped when the TUI ends."""

    servers: dict[str, NoVncServer] = field(default_factory=dict)

    def serve(self, name: str, endpoint: VncEndpoint) -> NoVncServer:
        """The running server for `name` at `endpoint`, started if needed (blocking)."""
        current = self.servers.get(name)
        if current is not None and current.alive() and current.endpoint == endpoint:
            return current
        if current is not None:
            current.stop()
        server = start_novnc(endpoint)
        self.servers[name] = server
        return server

    def serving(self, name: str) -> NoVncServer | None:
        """The live server for `name`, if one runs."""
        server = self.servers.get(name)
        return server if server is not None and server.alive() else None

    def stop(self, name: str) -> None:
        server = self.servers.pop(name, None)
        if server is not None:
            server.stop()

    def keep_only(self, wanted: dict[str, VncEndpoint | None]) -> list[str]:
        """Stop each server of a name in `wanted` whose endpoint is no longer the one
        wanted (the desktop stopped or was reset onto another port, or an episode's
        recording proxy came or went); returns the names stopped. Names not in
        `wanted` are left alone."""
        stopped = []
        for name, endpoint in wanted.items():
            server = self.servers.get(name)
            if server is not None and (server.endpoint != endpoint or not server.alive()):
                self.stop(name)
                stopped.append(name)
        return stopped

    def stop_all(self) -> None:
        for server in self.servers.values():
            server.stop()
        self.servers.clear()
