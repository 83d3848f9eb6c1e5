"""noVNC, the viewer with nothing to install, opened in a real headless Chromium.

A real Xvnc shows a red xterm on a black root; websockify serves Debian's noVNC for it
on 127.0.0.1; headless Chromium (driven over a private DevTools pipe) opens the page
the TUI would give the person, and the page's screenshot must be the VNC frame of the
same desktop. A wrong password must show nothing of it.
"""

from __future__ import annotations

import asyncio
import base64
import io
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from app.desktops.local.bare_xvnc import BareXvnc, bare_xvnc
from app.desktops.web.kiosk import Browser
from app.rfb.client import VncEndpoint, connect
from app.ui.services.novnc import NoVncServer, NoVncServers, novnc_available, start_novnc
from tests.novnc_browser import headless_chromium

# No skip: scripts/setup.sh installs noVNC, websockify and Chromium, so a missing one
# is a failure of the set-up, and this says which.
assert novnc_available() is None, novnc_available()
assert shutil.which("chromium") is not None, "chromium is not installed (scripts/setup.sh)"

PASSWORD = "novnc-pw"
RED = (0xC0, 0x30, 0x30)


@pytest.fixture
def desktop(tmp_path: Path) -> Iterator[BareXvnc]:
    folder = tmp_path / "x"
    folder.mkdir()
    with bare_xvnc(folder, PASSWORD) as x:
        term = subprocess.Popen(
            ["xterm", "-bg", "#c03030", "-geometry", "40x10+300+200"],
            env=x.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            yield x
        finally:
            term.terminate()
            term.wait(5)


async def _vnc_frame(x: BareXvnc) -> np.ndarray:
    client = await connect("127.0.0.1", x.port, PASSWORD, timeout=10)
    try:
        # The xterm maps a little after it starts: wait for its red, not a fixed pause.
        async with asyncio.timeout(20):
            while True:
                pixels = (await client.frame()).pixels
                if (np.abs(pixels.astype(int) - RED).sum(axis=2) < 30).sum() > 1000:
                    return pixels
                await asyncio.sleep(0.1)
    finally:
        await client.close()


@pytest.fixture
async def browser(tmp_path: Path) -> AsyncIterator[Browser]:
    async with headless_chromium(tmp_path) as opened:
        yield opened


async def _screenshot_of_canvas(browser: Browser) -> np.ndarray:
    page = browser.page
    rect = await page.evaluate(
        "(() => { const c = document.querySelector('#screen canvas');"
        " const r = c.getBoundingClientRect();"
        " return {x: r.x, y: r.y, w: c.width, h: c.height}; })()"
    )
    shot = await browser.pipe.call(
        "Page.captureScreenshot",
        {
            "format": "png",
            "clip": {"x": rect["x"], "y": rect["y"], "width": rect["w"], "height": rect["h"],
                     "scale": 1},
            "captureBeyondViewport": True,
        },
        session_id=page.session_id,
        timeout=20,
    )  # fmt: skip
    image = Image.open(io.BytesIO(base64.b64decode(shot["data"]))).convert("RGB")
    return np.asarray(image)


def test_a_desktop_without_a_password_is_refused() -> None:
    from app.core.errors import DesktopError

    with pytest.raises(DesktopError, match="no VNC password"):
        start_novnc(VncEndpoint("127.0.0.1", 5999, ""))


def test_the_sessions_servers_are_reused_and_stopped(desktop: BareXvnc) -> None:
    servers = NoVncServers()
    endpoint = VncEndpoint("127.0.0.1", desktop.port, PASSWORD)
    first: NoVncServer = servers.serve("d1", endpoint)
    assert servers.serve("d1", endpoint) is first
    servers.stop_all()
    assert not first.alive()
