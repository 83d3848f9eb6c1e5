"""Window questions answered with xdotool through any desktop's guest channel.

They only use the `Guest` protocol, so they serve every backend whose guest has
xdotool and an X session (local Xvnc, libvirt VMs).
"""

from __future__ import annotations

import asyncio
import time

from app.core.errors import DesktopError, GuestError
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
