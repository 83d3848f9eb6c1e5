"""The participant view's door: the token in the first address once, then the cookie;
anything without it gets 403, pages, calls and websockets alike; the desktop's
websocket carries bytes both ways to the proxy's TCP port. Over real HTTP on
127.0.0.1 (uvicorn in the test's loop)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
import websockets
from websockets.exceptions import InvalidStatus

from app.rfb import wire
from app.rfb.client import VncEndpoint
from app.seat.seat import BrowserSeat
from app.seat.server import COOKIE, LoopbackServer
from app.seat.web import seat_app

NOVNC = Path("/usr/share/novnc")


@pytest.fixture
async def served() -> AsyncIterator[tuple[LoopbackServer, BrowserSeat]]:
    seat = BrowserSeat()
    server = LoopbackServer(seat_app(seat, NOVNC))
    await server.start()
    try:
        yield server, seat
    finally:
        await server.close()


async def _cookie(server: LoopbackServer) -> str:
    async with httpx.AsyncClient() as client:
        first = await client.get(server.url)
    return first.cookies[COOKIE]


async def test_the_token_is_swapped_for_a_strict_cookie_and_a_clean_address(
    served: tuple[LoopbackServer, BrowserSeat],
) -> None:
    server, _ = served
    async with httpx.AsyncClient() as client:
        first = await client.get(server.url)
        assert first.status_code == 303
        assert first.headers["location"] == "/"  # the token leaves the address bar
        set_cookie = first.headers["set-cookie"]
        assert f"{COOKIE}={server.token}" in set_cookie
        assert "HttpOnly" in set_cookie and "SameSite=Strict" in set_cookie
        page = await client.get(f"{server.base}/")  # the client sends the cookie back
        assert page.status_code == 200 and "seat.js" in page.text
        state = await client.get(f"{server.base}/api/state")
        assert state.json()["page"] == "waiting"
        novnc = await client.get(f"{server.base}/novnc/core/rfb.js")
        assert novnc.status_code == 200 and "javascript" in novnc.headers["content-type"]


@pytest.mark.parametrize(
    "path",
    ["/", "/api/state", "/static/seat.js", "/novnc/core/rfb.js", "/?t=wrong", "/?t=%C3%A9"],
)
async def test_without_the_cookie_everything_is_403(
    served: tuple[LoopbackServer, BrowserSeat], path: str
) -> None:
    server, _ = served
    async with httpx.AsyncClient() as client:
        response = await client.get(f"{server.base}{path}")
        assert response.status_code == 403
        posted = await client.post(f"{server.base}/api/act", json={"number": 0})
        assert posted.status_code == 403
    for forged in ("x" * 32, "é"):
        cookie = f"{COOKIE}={forged}".encode()  # as bytes: httpx sends str as ASCII
        async with httpx.AsyncClient(headers={b"cookie": cookie}) as wrong:
            assert (await wrong.get(f"{server.base}/api/state")).status_code == 403


async def test_the_desktop_websocket_needs_the_cookie_and_the_pages_origin(
    served: tuple[LoopbackServer, BrowserSeat],
) -> None:
    server, _ = served
    url = f"ws://127.0.0.1:{server.port}/desktop"
    origin = f"http://127.0.0.1:{server.port}"
    cookie = f"{COOKIE}={await _cookie(server)}"
    with pytest.raises(InvalidStatus) as no_cookie:
        await websockets.connect(url, origin=origin)  # type: ignore[arg-type]
    assert no_cookie.value.response.status_code == 403
    with pytest.raises(InvalidStatus) as elsewhere:
        await websockets.connect(
            url,
            origin="http://evil.example",  # type: ignore[arg-type]
            additional_headers={"Cookie": cookie},
        )
    assert elsewhere.value.response.status_code == 403


async def test_the_desktop_websocket_carries_bytes_both_ways(
    served: tuple[LoopbackServer, BrowserSeat],
) -> None:
    server, seat = served
    heard: list[bytes] = []

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"RFB 003.008\n")  # the proxy speaks first, as an RFB server does
        data = await reader.read(100)
        heard.append(data)
        writer.write(data.upper())
        await writer.drain()
        writer.close()

    tcp = await asyncio.start_server(echo, "127.0.0.1", 0)
    port = tcp.sockets[0].getsockname()[1]

    async def endpoint() -> VncEndpoint:
        return VncEndpoint("127.0.0.1", port, "secret")

    # A trial whose desktop is the echo server, and whose participant may act.
    seat.trial = SimpleNamespace(endpoint=endpoint, may_act=True)  # type: ignore[assignment]
    try:
        async with websockets.connect(
            f"ws://127.0.0.1:{server.port}/desktop",
            origin=f"http://127.0.0.1:{server.port}",  # type: ignore[arg-type]
            additional_headers={"Cookie": f"{COOKIE}={await _cookie(server)}"},
        ) as socket:
            assert await socket.recv() == b"RFB 003.008\n"
            await socket.send(b"hello")
            assert await socket.recv() == b"HELLO"
        assert heard == [b"hello"]
    finally:
        tcp.close()
        await tcp.wait_closed()


async def test_a_view_only_trial_holds_the_viewers_input_back_on_the_server(
    served: tuple[LoopbackServer, BrowserSeat],
) -> None:
    server, seat = served
    heard = asyncio.get_running_loop().create_future()

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        heard.set_result(await reader.read())  # all the viewer sent, until it closes
        writer.close()

    tcp = await asyncio.start_server(proxy, "127.0.0.1", 0)
    port = tcp.sockets[0].getsockname()[1]

    async def endpoint() -> VncEndpoint:
        return VncEndpoint("127.0.0.1", port, "secret")

    seat.trial = SimpleNamespace(endpoint=endpoint, may_act=False)  # type: ignore[assignment]
    hello = b"RFB 003.008\n" + bytes([2]) + bytes(16) + b"\x01"
    key = wire.KEY_EVENT.pack(4, 1, 0x61)
    update = wire.FRAMEBUFFER_UPDATE_REQUEST.pack(3, 1, 0, 0, 10, 10)
    try:
        async with websockets.connect(
            f"ws://127.0.0.1:{server.port}/desktop",
            origin=f"http://127.0.0.1:{server.port}",  # type: ignore[arg-type]
            additional_headers={"Cookie": f"{COOKIE}={await _cookie(server)}"},
        ) as socket:
            await socket.send(hello + key + update)
        assert await asyncio.wait_for(heard, 30) == hello + update
    finally:
        tcp.close()
        await tcp.wait_closed()
