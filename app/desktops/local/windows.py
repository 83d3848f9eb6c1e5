"""Every window a local desktop's window manager lists, with its title and when it first
appeared, for the integrity flags' console watch.

A poll of the visible titles misses a console opened and closed between two polls.
Here `xprop -spy` prints the root window's client list (`_NET_CLIENT_LIST`, kept by
openbox) each time it changes, that is as each window is mapped or withdrawn, and each
new window's title is read at once. A window is missed only if it is gone before its
title can be read, a few milliseconds after it appeared: no person or agent opens and
uses a console that fast.

The watcher runs on the host as DeskLoop's own program (not traced, not in the
sandbox), with the session's environment, so the desktop's watchdog stops it with
the rest of the session.
"""

from __future__ import annotations

import re
import subprocess
import threading
import time
from collections.abc import Mapping

from app.core.integrity import WindowLog

SPY = ["xprop", "-root", "-spy", "_NET_CLIENT_LIST"]
_WINDOW_ID = re.compile(r"0x[0-9a-fA-F]+")
_TITLE = re.compile(r'^(?:_NET_WM_NAME|WM_NAME)\([A-Z0-9_]+\) = "(.*)"$')
# A title set just after the window is mapped (some toolkits do) is read once more.
_RETRY_S = 0.05


class WindowWatch:
    """Starts with the session's window manager, stops with the session."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = dict(env)
        self.problem: str | None = None
        self._seen: list[tuple[float, str, str]] = []
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[str] | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        try:
            self._proc = subprocess.Popen(
                SPY,
                env=self.env,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                stdin=subprocess.DEVNULL,
                text=True,
            )
        except OSError as exc:
            self.problem = f"{SPY[0]} could not start: {exc.strerror or exc}"
            return
        self._thread = threading.Thread(target=self._follow, name="window-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def log(self) -> WindowLog:
        if self.problem is not None:
            return WindowLog((), False, f"not watched: {self.problem}")
        with self._lock:
            seen = tuple((when, title) for when, _wid, title in self._seen)
        return WindowLog(
            seen, True, "every window the window manager lists, as it appears (xprop -spy)"
        )

    def _follow(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        known: set[str] = set()
        for line in self._proc.stdout:
            now = time.time()
            listed = set(_WINDOW_ID.findall(line))
            for window in sorted(listed - known):
                title = self._title(window)
                if not title:
                    time.sleep(_RETRY_S)
                    title = self._title(window)
                with self._lock:
                    self._seen.append((now, window, title))
            known = listed
        if self._proc.wait() not in (0, -15) and self.problem is None:
            self.problem = f"{SPY[0]} exited with status {self._proc.returncode}"

    def _title(self, window: str) -> str:
        try:
            done = subprocess.run(
                ["xprop", "-id", window, "_NET_WM_NAME", "WM_NAME"],
                env=self.env,
                capture_output=True,
                text=True,
                timeout=5,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return ""
        for line in done.stdout.splitlines():
            match = _TITLE.match(line.strip())
            if match:
                # xprop writes a quote or a backslash in a title escaped.
                return re.sub(r"\\(.)", r"\1", match.group(1))
        return ""
