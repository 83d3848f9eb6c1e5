"""The participant view's web app (Starlette): one static page and its script, the
JSON state the page polls, the actions it posts, Debian's noVNC, and the websocket
that carries the live desktop's bytes to the episode's recording proxy.

Behind `app.seat.server.LoopbackServer`'s token guard: nothing here is reachable
without the session's cookie.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket, WebSocketDisconnect

from app.seat.seat import BrowserSeat
from app.seat.view import Refused
from app.seat.viewonly import ViewOnly

STATIC = Path(__file__).parent / "static"
NO_STORE = {"cache-control": "no-store"}
BRIDGE_CHUNK = 64 * 1024


def seat_app(seat: BrowserSeat, novnc: Path) -> Starlette:
    """The web app of `seat`, serving noVNC's ES modules from the folder `novnc`."""

    async def index(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers=NO_STORE)

    async def state(request: Request) -> Response:
        return JSONResponse(await seat.view.state(), headers=NO_STORE)

    async def act(request: Request) -> Response:
        try:
            posted: Any = await request.json()
        except ValueError:
            return JSONResponse({"error": "not JSON"}, status_code=400)
        if not isinstance(posted, dict):
            return JSONResponse({"error": "expected an object"}, status_code=400)
        try:
            seat.view.act(posted.get("number"), posted)
        except Refused as refused:
            body = {"error": str(refused), "problems": refused.problems}
            return JSONResponse(body, status_code=409)
        return JSONResponse({"ok": True})

    async def desktop(websocket: WebSocket) -> None:
        trial = seat.trial
        endpoint = None if trial is None else await trial.endpoint()
        if trial is None or endpoint is None:
            await websocket.close(code=1013)  # try again later: no desktop yet
            return
        try:
            reader, writer = await asyncio.open_connection(endpoint.host, endpoint.port)
        except OSError:
            await websocket.close(code=1011)
            return
        await websocket.accept()
        await bridge(websocket, reader, writer, None if trial.may_act else ViewOnly())

    return Starlette(
        routes=[
            Route("/", index),
            Route("/api/state", state),
            Route("/api/act", act, methods=["POST"]),
            WebSocketRoute("/desktop", desktop),
            Mount("/static", StaticFiles(directory=STATIC)),
            Mount("/novnc", StaticFiles(directory=novnc)),
        ]
    )


async def bridge(
    websocket: WebSocket,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    view_only: ViewOnly | None = None,
) -> None:
    """Bytes both ways between noVNC's websocket and the proxy's TCP port, until
    either side closes; the viewer's through `view_only` where it may only look."""

    async def down() -> None:
        while data := await reader.read(BRIDGE_CHUNK):
            await websocket.send_bytes(data)

    async def up() -> None:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            data = message.get("bytes") or (message.get("text") or "").encode()
            if view_only is not None:
                try:
                    data = view_only.feed(data)
                except ValueError:
                    return  # not a viewer the proxy would take either
            if data:
                writer.write(data)
                await writer.drain()

    pipes = {asyncio.ensure_future(down()), asyncio.ensure_future(up())}
    try:
        await asyncio.wait(pipes, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for pipe in pipes:
            pipe.cancel()
        # Every outcome is collected: a peer gone mid-write is the end, not an error.
        await asyncio.gather(*pipes, return_exceptions=True)
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
        with contextlib.suppress(RuntimeError, WebSocketDisconnect):
            await websocket.close()
