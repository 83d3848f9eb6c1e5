"""Serving an ASGI app on 127.0.0.1 to one browser, in the caller's event loop.

The first address carries a per-session random token once (`/?t=TOKEN`); the
server answers it with an HttpOnly, SameSite=Strict cookie and a redirect to the
clean address, so the token leaves the address bar and the history. From then on
every page, call and websocket needs the cookie; a missing or wrong one gets 403.
A websocket must also come from the page's own origin (a page elsewhere cannot
borrow the browser's cookie for one; SameSite covers the rest).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import socket
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs

import uvicorn

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

COOKIE = "deskloop_seat"


class TokenGuard:
    """ASGI middleware: the token once in the address, the cookie after it."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token

    def _cookie_ok(self, scope: Scope) -> bool:
        cookies = SimpleCookie()
        for name, value in scope.get("headers", []):
            if name == b"cookie":
                with contextlib.suppress(Exception):
                    cookies.load(value.decode("latin-1"))
        morsel = cookies.get(COOKIE)
        return morsel is not None and _same_secret(morsel.value, self.token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self.app(scope, receive, send)
            return
        if kind == "http" and scope["path"] == "/" and scope.get("query_string"):
            given = parse_qs(scope["query_string"].decode("latin-1")).get("t", [""])[0]
            if _same_secret(given, self.token):
                await _redirect_with_cookie(send, self.token)
            else:
                await _forbidden(send)
            return
        allowed = self._cookie_ok(scope)
        if kind == "websocket" and allowed:
            allowed = _same_origin(scope)
        if allowed:
            await self.app(scope, receive, send)
        elif kind == "websocket":
            # Refused before the handshake: the browser sees an HTTP 403.
            await send({"type": "websocket.close", "code": 1008})
        else:
            await _forbidden(send)


def _same_secret(given: str, token: str) -> bool:
    # As bytes: compare_digest refuses str with non-ASCII characters, which a forged
    # address or cookie may carry (a TypeError would be a 500, not a 403).
    return secrets.compare_digest(given.encode("utf-8", "replace"), token.encode())


def _same_origin(scope: Scope) -> bool:
    headers: dict[bytes, bytes] = dict(scope.get("headers", []))
    origin = headers.get(b"origin", b"").decode("latin-1")
    host = headers.get(b"host", b"").decode("latin-1")
    return bool(host) and origin == f"http://{host}"


async def _redirect_with_cookie(send: Send, token: str) -> None:
    cookie = f"{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict"
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [
                (b"location", b"/"),
                (b"set-cookie", cookie.encode("latin-1")),
                (b"cache-control", b"no-store"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": b""})


async def _forbidden(send: Send) -> None:
    body = b"403: open the address DeskLoop printed for this session\n"
    await send(
        {
            "type": "http.response.start",
            "status": 403,
            "headers": [(b"content-type", b"text/plain; charset=utf-8")],
        }
    )
    await send({"type": "http.response.body", "body": body})


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # The caller's loop owns Ctrl-C (the CLI cancels the session on it), so the
        # server must not take SIGINT over while it runs.
        yield


class LoopbackServer:
    """`app` behind a `TokenGuard`, served on 127.0.0.1 (a free port) from `start`
    to `close`, in the running event loop."""

    def __init__(self, app: ASGIApp, *, token: str | None = None) -> None:
        self.token = token or secrets.token_urlsafe(24)
        config = uvicorn.Config(
            TokenGuard(app, self.token),
            log_level="warning",
            lifespan="off",
            ws="websockets-sansio",
            access_log=False,
        )
        self._server = _Server(config)
        self._socket: socket.socket | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def port(self) -> int:
        if self._socket is None:
            raise RuntimeError("the server is not started")
        return int(self._socket.getsockname()[1])

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The address to open first: it carries the token, once."""
        return f"{self.base}/?t={self.token}"

    async def start(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self._socket = sock
        self._task = asyncio.get_running_loop().create_task(
            self._server.serve(sockets=[sock]), name="seat-server"
        )
        while not self._server.started:
            if self._task.done():
                await self._task  # raises why it could not start
                raise RuntimeError("the participant view's server stopped at once")
            await asyncio.sleep(0.02)

    async def close(self) -> None:
        if self._task is None:
            return
        self._server.should_exit = True
        try:
            async with asyncio.timeout(5):
                await asyncio.shield(self._task)
        except TimeoutError:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._task = None
        if self._socket is not None:
            self._socket.close()
