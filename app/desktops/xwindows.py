"""Window questions answered with xdotool and xprop through any desktop's guest channel.

They only use the `Guest` protocol, so they serve every backend whose guest has
xdotool and an X session (local Xvnc, libvirt VMs).
"""

from __future__ import annotations

import asyncio
import re
import time

from app.core.errors import DesktopError, GuestError
from app.core.windows import Window, WindowList
from app.desktops.base import Guest

# Between polls: GIMP/Kdenlive windows take seconds to map, so 0.1 s costs nothing
# in latency and keeps xdotool from hogging a 2-core machine.
POLL_INTERVAL = 0.1
_XDOTOOL_TIMEOUT = 10.0


async def wait_window(
    guest: Guest,
    *,
    wm_class: str | None = None,
    name: str | None = None,
    timeout: float = 60.0,
) -> str:
    """Wait until a visible window matches and return its X window id (decimal string).

    `wm_class` and `name` are xdotool regular expressions; with both, a window must
    match both.

    Raises:
        DesktopError: no matching window within `timeout` seconds.
    """
    if wm_class is None and name is None:
        raise DesktopError("wait_window needs a window class or a name to search for")
    # xdotool takes one pattern per search: with both, intersect two searches.
    searches = [
        ["xdotool", "search", "--onlyvisible", f"--{kind}", value]
        for kind, value in (("class", wm_class), ("name", name))
        if value is not None
    ]
    what = " and ".join(
        f"{kind} {value!r}" for kind, value in (("class", wm_class), ("name", name)) if value
    )
    deadline = time.monotonic() + timeout
    last_error = ""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        found: set[str] | None = None
        order: list[str] = []
        for argv in searches:
            # Each poll gets the full xdotool timeout, even near the deadline: under
            # software emulation one exec over SSH can take seconds, and a poll cut
            # short must read as "not yet", not as the wait's failure.
            try:
                result = await guest.run(argv, timeout=_XDOTOOL_TIMEOUT)
            except GuestError as exc:
                last_error = str(exc)
                found = set()
                break
            ids = result.stdout_text().split() if result.ok else []
            # xdotool exits 1 with no output when nothing matches; anything on
            # stderr (no display, bad regex) is worth showing if we time out.
            last_error = result.stderr.decode("utf-8", "replace").strip() or last_error
            order = order or ids
            found = set(ids) if found is None else found & set(ids)
            if not found:
                break
        if found:
            return next(i for i in order if i in found)
        await asyncio.sleep(min(POLL_INTERVAL, max(deadline - time.monotonic(), 0)))
    detail = f" (xdotool said: {last_error})" if last_error else ""
    raise DesktopError(f"no visible window with {what} appeared within {timeout:g} s{detail}")


async def active_window_title(guest: Guest) -> str:
    """The title of the focused window; '' when no window is active."""
    result = await guest.run(["xdotool", "getactivewindow", "getwindowname"], _XDOTOOL_TIMEOUT)
    if not result.ok:
        return ""
    return result.stdout_text().rstrip("\n")


# Text properties as hex bytes: xprop prints strings quoted but unescaped, so a
# title holding a quote could not be read back.
_HEX_PROPERTIES = ("WM_CLASS", "_NET_WM_NAME", "WM_NAME")
_PROPERTY_LINE = re.compile(r"^(\w+) = (.*)$")


async def list_windows(guest: Guest, timeout: float = _XDOTOOL_TIMEOUT) -> WindowList:
    """The windows the window manager manages (_NET_CLIENT_LIST), in its order,
    with title, class and pid: one xprop for the list, one per window.

    Raises:
        GuestError: xprop could not ask the display (no display, no xprop).
    """
    seen_at = time.time()
    result = await guest.run(["xprop", "-root", "-notype", "_NET_CLIENT_LIST"], timeout)
    if not result.ok:
        why = result.stderr.decode("utf-8", "replace").strip() or f"status {result.returncode}"
        raise GuestError(f"cannot list the desktop's windows (xprop): {why}")
    _, _, ids = result.stdout_text().partition("#")
    windows = []
    for window_id in (i.strip() for i in ids.split(",") if i.strip()):
        formats = [arg for name in _HEX_PROPERTIES for arg in ("-f", name, "8x")]
        argv = ["xprop", "-id", window_id, "-notype", *formats, *_HEX_PROPERTIES, "_NET_WM_PID"]
        reply = await guest.run(argv, timeout)
        if reply.ok:  # not ok: the window closed since the list was read
            windows.append(_window(window_id, reply.stdout_text()))
    return WindowList(tuple(windows), seen_at)


def _window(window_id: str, xprop_output: str) -> Window:
    values: dict[str, str] = {}
    for line in xprop_output.splitlines():
        match = _PROPERTY_LINE.match(line.strip())
        if match:
            values[match[1]] = match[2]
    title = _hex_text(values.get("_NET_WM_NAME"), "utf-8") or _hex_text(
        values.get("WM_NAME"), "latin-1"
    )
    # WM_CLASS is two NUL-terminated strings, the instance and the class.
    parts = _hex_text(values.get("WM_CLASS"), "latin-1").split("\0")
    pid = values.get("_NET_WM_PID", "")
    return Window(
        window_id,
        title,
        parts[1] if len(parts) > 1 else parts[0],
        int(pid) if pid.isdigit() else None,
    )


def _hex_text(value: str | None, fallback: str) -> str:
    """xprop's `0x68, 0x65` bytes as text (UTF-8 when they are, else `fallback`)."""
    if not value:
        return ""
    try:
        data = bytes(int(b, 16) for b in value.split(","))
    except ValueError:
        return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode(fallback, "replace")
