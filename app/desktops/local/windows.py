"""Every window a local desktop's window manager lists, with its title and when it first
appeared, for the integrity flags' console watch.

A poll of the visible titles misses a console opened and closed between two polls.
Here `xprop -spy` prints the root window's client list (`_NET_CLIENT_LIST`, kept by
openbox) each time it changes, that is as each window is mapped or withdrawn, and each
new window's title is read at once. A window is missed only if it is gone before its
title can be read, a few milliseconds after it appeared: no person or agent opens and
uses a console that fast.

Both run through the desktop's guest channel, as the lab user in the sandbox and
untraced, like every command DeskLoop runs there.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time

from app.core.errors import GuestError
from app.core.integrity import WindowLog
from app.desktops.local.guest import LocalGuest

SPY = ["xprop", "-root", "-spy", "_NET_CLIENT_LIST"]
_WINDOW_ID = re.compile(r"0x[0-9a-fA-F]+")
_TITLE = re.compile(r'^(?:_NET_WM_NAME|WM_NAME)\([A-Z0-9_]+\) = "(.*)"$')
# A title set just after the window is mapped (some toolkits do) is read once more.
_RETRY_S = 0.05


class WindowWatch:
    """Starts once the session's window manager runs, stops with the session."""

    def __init__(self, guest: LocalGuest) -> None:
        self.guest = guest
        self.problem: str | None = None
        self._seen: list[tuple[float, str]] = []
        self._proc: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None

    async def start(self) -> None:
        try:
            self._proc = await self.guest.stream(SPY)
        except GuestError as exc:
            self.problem = str(exc)
            return
        self._reader = asyncio.create_task(self._follow(self._proc), name="window-watch")

    async def stop(self) -> None:
        if self._proc is not None and self._proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._proc.terminate()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
        if self._proc is not None:
            with contextlib.suppress(TimeoutError, ProcessLookupError):
                async with asyncio.timeout(2.0):
                    await self._proc.wait()

    def log(self) -> WindowLog:
        if self.problem is not None:
            return WindowLog((), False, f"not watched: {self.problem}")
        return WindowLog(
            tuple(self._seen),
            True,
            "every window the window manager lists, as it appears (xprop -spy)",
        )

    async def _follow(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None
        known: set[str] = set()
        async for raw in proc.stdout:
            now = time.time()
            listed = set(_WINDOW_ID.findall(raw.decode("utf-8", "replace")))
            for window in sorted(listed - known):
                title = await self._title(window)
                if not title:
                    await asyncio.sleep(_RETRY_S)
                    title = await self._title(window)
                self._seen.append((now, title))
            known = listed
        code = await proc.wait()
        if code not in (0, -15) and self.problem is None:
            self.problem = f"{SPY[0]} exited with status {code}"

    async def _title(self, window: str) -> str:
        try:
            result = await self.guest.run(["xprop", "-id", window, "_NET_WM_NAME", "WM_NAME"], 5.0)
        except GuestError:
            return ""
        for line in result.stdout_text().splitlines():
            match = _TITLE.match(line.strip())
            if match:
                # xprop writes a quote or a backslash in a title escaped.
                return re.sub(r"\\(.)", r"\1", match.group(1))
        return ""
