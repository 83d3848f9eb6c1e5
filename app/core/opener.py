"""Opening a page in the person's graphical browser (`open_in_browser`), for the TUI's
noVNC viewers and the participant view alike."""

from __future__ import annotations

import os
import shutil
import subprocess


def open_in_browser(url: str) -> bool:
    """Open `url` in the person's graphical browser, if there is a display to open it on.

    Python's `webbrowser` would fall back to a console browser (w3m, lynx) in the
    terminal the TUI is drawing on, so only `xdg-open` under a display is tried.
    """
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return False
    opener = shutil.which("xdg-open")
    if opener is None:
        return False
    try:
        subprocess.Popen(
            [opener, url],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError:
        return False
    return True
