"""The live view's frames, from its own VNC connection to the desktop (Xvnc and QEMU
accept shared connections), so watching never disturbs the runner's connection."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable

import numpy as np
import numpy.typing as npt

from app.core.errors import VNCError
from app.rfb.client import VNCClient, VncEndpoint, connect

Pixels = npt.NDArray[np.uint8]


async def frame_feed(
    endpoint: Callable[[], VncEndpoint | None],
    *,
    fps: float = 12.0,
    idle_poll: float = 0.5,
) -> AsyncIterator[tuple[float, Pixels]]:
    """Frames of a desktop from our own (shared) VNC connection, at most `fps` a second.

    Yields (monotonic time, RGB pixels) when the screen changed. `endpoint` is asked
    again whenever the connection drops, since a reset moves a local desktop to a new
    port. Updates are requested incrementally, so an unchanged screen costs nothing.
    """
    period = 1.0 / fps
    client: VNCClient | None = None
    where: VncEndpoint | None = None
    try:
        while True:
            current = endpoint()
            if client is None or client.closed or current != where:
                if client is not None:
                    await client.close()
                    client = None
                where = current
                if where is None:
                    await asyncio.sleep(idle_poll)
                    continue
                try:
                    client = await connect(where.host, where.port, where.password)
                    frame = await client.frame()
                except VNCError:
                    client = None
                    await asyncio.sleep(idle_poll)
                    continue
                yield time.monotonic(), frame.pixels
            started = time.monotonic()
            try:
                result = await client.settle(
                    timeout=max(period, idle_poll), quiet=0.0, change_wait=idle_poll, min_area=0
                )
            except VNCError:
                continue
            if result.changed:
                yield time.monotonic(), client.current_frame().pixels
            rest = period - (time.monotonic() - started)
            if rest > 0:
                await asyncio.sleep(rest)
    finally:
        if client is not None:
            await client.close()
