"""A real headless Chromium, driven over its private DevTools pipe, for the tests that
open noVNC pages as a person's browser would: open a URL, wait for the page to say it
is connected, type into and click on the noVNC canvas."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from app.desktops.web.cdp import CdpError
from app.desktops.web.kiosk import Browser, start_browser


@contextlib.asynccontextmanager
async def headless_chromium(tmp_path: Path) -> AsyncIterator[Browser]:
    argv = [
        "chromium",
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--remote-debugging-pipe",
        "--window-size=1400,1000",
        "--force-device-scale-factor=1",
        "about:blank",
    ]
    opened = await start_browser(None, {}, tmp_path / "chromium.log", argv, 60)
    try:
        yield opened
    finally:
        opened.close()
        try:
            async with asyncio.timeout(10):
                await opened.process.wait()
        except TimeoutError:
            opened.process.kill()
            await opened.process.wait()


# A navigation Chromium loses (its network service restarting on a starved machine:
# docs/backends.md) leaves the page blank for good; it is sent again after this long.
NAVIGATION_STALL = 30.0


async def open_url(browser: Browser, url: str, timeout: float = 120) -> None:
    """Navigate to `url` and return once a page other than about:blank has loaded,
    navigating again if one attempt stalls."""
    page = browser.page
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        await browser.pipe.call("Page.navigate", {"url": url}, session_id=page.session_id)
        stall = asyncio.get_running_loop().time() + NAVIGATION_STALL
        while asyncio.get_running_loop().time() < min(stall, deadline):
            try:
                loaded = await page.evaluate(
                    "document.readyState === 'complete' && location.href !== 'about:blank'"
                )
            except CdpError:  # the old document went mid-call: not loaded yet
                loaded = False
            if loaded is True:
                return
            await asyncio.sleep(0.1)
        if asyncio.get_running_loop().time() >= deadline:
            raise AssertionError(f"Chromium did not load {url} within {timeout:g} s")


async def status(browser: Browser) -> str:
    """noVNC's status line (vnc_lite.html's `#status`)."""
    text = await browser.page.evaluate(
        "document.getElementById('status') ? document.getElementById('status').textContent : ''"
    )
    return str(text)


async def wait_connected(browser: Browser, timeout: float = 30) -> str:
    """Until noVNC says it connected, or that it could not; returns what it said."""
    async with asyncio.timeout(timeout):
        while True:
            said = await status(browser)
            lowered = said.lower()
            if said.startswith("Connected") or "disconnected" in lowered or "closed" in lowered:
                return said
            await asyncio.sleep(0.1)


async def type_into_canvas(browser: Browser, text: str) -> None:
    """Type `text` as key presses on the focused page (noVNC's canvas has the focus
    once clicked): each character a keyDown with its text and a keyUp; a newline is
    the Enter key."""
    call, session = browser.pipe.call, browser.page.session_id
    for char in text:
        if char == "\n":
            down = {"type": "rawKeyDown", "key": "Enter", "code": "Enter",
                    "windowsVirtualKeyCode": 13, "text": "\r"}  # fmt: skip
            up = {"type": "keyUp", "key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13}
        else:
            code = f"Key{char.upper()}" if char.isalpha() else ""
            vk = ord(char.upper()) if char.isalnum() else (32 if char == " " else 0)
            down = {"type": "keyDown", "key": char, "code": code, "text": char,
                    "windowsVirtualKeyCode": vk}  # fmt: skip
            up = {"type": "keyUp", "key": char, "code": code, "windowsVirtualKeyCode": vk}
        await call("Input.dispatchKeyEvent", down, session_id=session)
        await call("Input.dispatchKeyEvent", up, session_id=session)


async def click_canvas(browser: Browser, x: int, y: int) -> None:
    """A left click at desktop pixel (x, y) of noVNC's canvas (shown at scale 1)."""
    rect = await browser.page.evaluate(
        "(() => { const r = document.querySelector('#screen canvas').getBoundingClientRect();"
        " return {x: r.x, y: r.y}; })()"
    )
    at = {"x": rect["x"] + x, "y": rect["y"] + y, "button": "left", "clickCount": 1}
    for kind in ("mousePressed", "mouseReleased"):
        await browser.pipe.call(
            "Input.dispatchMouseEvent", {"type": kind, **at}, session_id=browser.page.session_id
        )
