"""Web desktops: Chromium in kiosk mode on a backend-free page, with a private DevTools pipe.

A web task's page is a folder of static files (HTML, JS, CSS, mock data) copied into
the desktop's home and opened as a `file://` URL, so nothing serves it: there is no
port for anyone to reach. The page speaks the *page contract* (ScaleWoB's):
`window.getTasks()`, `window.evaluateTask(id, returned)` and `window.reset()`, and
optionally `window.getState()` (named values for other checks). DeskLoop calls them
over the Chrome DevTools Protocol on `--remote-debugging-pipe` (app/desktops/web/cdp.py):
the pipe's other ends stay in this process, so neither the agent (which only has VNC)
nor another local user can reach the page's DevTools.

`chromium_argv` is the browser's command line; `start_browser` starts it through a
`Spawner` (a local desktop's sandbox) and returns the attached page.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from app.desktops.base import PageScript
from app.desktops.web.cdp import CdpError, CdpPipe, WebPage

CHROMIUM = "chromium"

# What the page must define before DeskLoop calls it.
CONTRACT_READY = (
    "document.readyState === 'complete' && typeof window.getTasks === 'function'"
    " && typeof window.evaluateTask === 'function' && typeof window.reset === 'function'"
)

# Chromium's flags, and why each:
CHROMIUM_FLAGS = (
    "--remote-debugging-pipe",  # CDP on fds 3/4: no port anyone else could reach
    "--kiosk",  # the page fills the screen: no address bar, tabs or menus for the agent
    "--no-first-run",
    "--no-default-browser-check",
    # Nothing leaves the machine, and nothing changes under a task (updates, sync).
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--disable-features=Translate,MediaRouter,OptimizationHints",
    "--disable-default-apps",
    "--disable-extensions",
    # No GPU in Xvnc: software compositing directly, instead of a GPU process failing first.
    "--disable-gpu",
    "--password-store=basic",  # no keyring prompt on a bare desktop
    "--no-pings",
)


def chromium_argv(url: str, profile: str, width: int, height: int) -> list[str]:
    """Chromium's command line for `url`, with a fresh profile folder `profile`."""
    return [
        CHROMIUM,
        *CHROMIUM_FLAGS,
        f"--user-data-dir={profile}",
        "--window-position=0,0",
        f"--window-size={width},{height}",
        url,
    ]


def with_pipe_fds(argv: list[str], commands_fd: int, messages_fd: int) -> list[str]:
    """`argv` behind a fixed bash line that moves the pipe ends to fds 3 and 4.

    Chromium reads CDP from fd 3 and writes to fd 4, and Python's subprocess keeps
    passed fds at their own numbers; dup2 in a preexec function would race with
    subprocess's own error pipe. bash (dash takes single-digit fds only) does the
    moves; the line is a constant, the numbers ints, the program's argv stays a list.
    """
    script = (
        f"exec 3<&{int(commands_fd)} 4>&{int(messages_fd)} "
        f'{int(commands_fd)}<&- {int(messages_fd)}>&-; exec "$@"'
    )
    return ["bash", "-c", script, "bash", *argv]


class Spawner(Protocol):
    """What starts the browser where the desktop's programs run: the local backend's
    sandbox (app/desktops/local/sandbox.py), as its lab user. Named here so that web
    pages need nothing of the backend that hosts them."""

    async def spawn(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        stdout: int | IO[bytes],
        stderr: int | IO[bytes],
        pass_fds: Sequence[int] = (),
    ) -> asyncio.subprocess.Process:
        """Start `argv` with `pass_fds` kept open at their numbers, in a session of its own.

        Raises:
            OSError: the program could not be started.
        """
        ...


@dataclass
class Browser:
    """A running Chromium and its attached page."""

    process: asyncio.subprocess.Process
    pipe: CdpPipe
    page: WebPage

    def close(self) -> None:
        """Close the DevTools pipe (Chromium exits when it closes; the desktop's
        cleanup kills whatever is left)."""
        self.pipe.close()


async def start_browser(
    sandbox: Spawner | None,
    env: Mapping[str, str],
    log_path: Path,
    argv: list[str],
    timeout: float,
) -> Browser:
    """Start Chromium (`argv`, from `chromium_argv`) and attach to its page.

    Raises:
        CdpError: it could not start, exited, or showed no page within `timeout`
            (its log's tail is in the message).
    """
    commands_read, commands_write = os.pipe()
    messages_read, messages_write = os.pipe()
    child_ends = (commands_read, messages_write)
    wrapped = with_pipe_fds(argv, commands_read, messages_write)
    try:
        with open(log_path, "ab") as log:
            if sandbox is not None:
                process = await sandbox.spawn(
                    wrapped, env=env, stdout=log, stderr=log, pass_fds=child_ends
                )
            else:
                process = await asyncio.create_subprocess_exec(
                    *wrapped,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    env=dict(env),
                    pass_fds=child_ends,
                    start_new_session=True,
                )
    except OSError as exc:
        for fd in (*child_ends, commands_write, messages_read):
            os.close(fd)
        raise CdpError(f"cannot start {argv[0]!r}: {exc}") from exc
    # Ours are the other ends only: once the child has its copies, a closed pipe
    # means Chromium is gone.
    for fd in child_ends:
        os.close(fd)
    pipe = CdpPipe(commands_write, messages_read)
    try:
        page = await WebPage.attach(pipe, timeout)
    except CdpError as exc:
        pipe.close()
        raise CdpError(f"{exc}; {argv[0]}'s log: {_log_tail(log_path)}") from None
    return Browser(process, pipe, page)


# Where the page is and whether it speaks the contract, in one round trip.
PAGE_STATE = (
    "({href: location.href, readyState: document.readyState, title: document.title,"
    f" ready: {CONTRACT_READY}}})"
)
# A page whose state has not changed for this long while it lacks the contract is sent
# to its URL again. A starved browser (a TCG guest under load) can lose its first
# navigation: its network service crashes and restarts, and the window stays an
# "Untitled" blank page for good (docs/backends.md, *Measured*).
STALL_SECONDS = 45.0


async def wait_contract(
    page: WebPage, url: str, timeout: float, stall: float = STALL_SECONDS
) -> None:
    """Wait until the page has loaded `url` and defines the page contract; a page stuck
    without it for `stall` seconds is navigated to `url` again.

    Raises:
        CdpError: it did not within `timeout` (the message says where the page was).
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last = "no answer from the page yet"
    changed = loop.time()
    renavigated = 0
    while True:
        try:
            # Bounded by the stall too: one call hanging on a stuck page must not use
            # up the time in which it could be sent again.
            left = max(1.0, min(deadline - loop.time(), stall / 3))
            state = await page.evaluate(PAGE_STATE, timeout=left)
            if isinstance(state, dict) and state.get("ready") is True:
                return
            now = _describe(state)
        except CdpError as exc:
            now = str(exc)  # a page still navigating has no context yet
        if (gone := page.gone()) is not None:
            raise CdpError(gone)
        if now != last:
            last, changed = now, loop.time()
        elif loop.time() - changed > stall and deadline - loop.time() > stall / 3:
            renavigated += 1
            with contextlib.suppress(CdpError):
                await page.navigate(url, timeout=min(stall / 3, deadline - loop.time()))
            changed = loop.time()
        if loop.time() > deadline:
            again = f"; sent to it again {renavigated} time(s)" if renavigated else ""
            raise CdpError(
                f"the page did not load the page contract within {timeout:g} s "
                f"(last: {last}{again})"
            )
        await asyncio.sleep(0.05)


def _describe(state: Any) -> str:
    """A page's PAGE_STATE in words, for a message."""
    if not isinstance(state, dict):
        return f"the page answered {state!r}"
    ready = state.get("readyState")
    missing = ""
    if ready == "complete":
        names = ("getTasks", "evaluateTask", "reset")
        missing = f", without the page contract ({', '.join(names)})"
    return f"at {state.get('href')} ({ready}{missing}), title {state.get('title')!r}"


async def call_reset(page: PageScript, timeout: float = 5.0) -> None:
    """Call the page's `window.reset()` (awaited when it returns a promise).

    Raises:
        CdpError: it threw or did not finish within `timeout`.
    """
    await page.evaluate("Promise.resolve(window.reset()).then(() => true)", timeout=timeout)


async def call_evaluate(
    page: PageScript, task_id: str, returned: Any = None, timeout: float = 10.0
) -> Any:
    """The page's `window.evaluateTask(task_id, returned)`, as JSON (promises awaited).

    Raises:
        CdpError: it threw, its value is not JSON, or it did not finish within `timeout`.
    """
    expression = (
        f"Promise.resolve(window.evaluateTask({json.dumps(task_id)}, {json.dumps(returned)}))"
    )
    return await page.evaluate(expression, timeout=timeout)


async def page_tasks(page: PageScript, timeout: float = 10.0) -> Any:
    """The page's `window.getTasks()` (task objects: id, description, an optional schema)."""
    return await page.evaluate("Promise.resolve(window.getTasks())", timeout=timeout)


async def page_state(page: PageScript, timeout: float = 10.0) -> Any:
    """The page's optional `window.getState()`: named values other checks read; None
    when the page does not define it."""
    return await page.evaluate(
        "typeof window.getState === 'function' ? Promise.resolve(window.getState()) : null",
        timeout=timeout,
    )


def _log_tail(path: Path, limit: int = 600) -> str:
    try:
        text = path.read_bytes()[-4096:].decode("utf-8", "replace").strip()
    except OSError:
        return "no log"
    # Chromium logs D-Bus complaints on a bare desktop; they say nothing about a failure.
    lines = [line for line in text.splitlines() if "dbus" not in line.lower()]
    tail = "\n".join(lines)[-limit:]
    return tail or "no output"
