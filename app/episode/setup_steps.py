"""Run a task's setup steps (s0) on a freshly reset desktop, over its guest channel.

Each step is raced against the desktop's death (`while_alive`), so a desktop that
dies while a step waits for a window ends setup within about a second, not at the
step's timeout. While setup runs, what the desktop shows (the frame and the open
windows) is looked at every few seconds and kept in a `LastSeen`, so that a failed
setup can be recorded with the last screen and windows even when the desktop died
and can no longer be asked.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote

from app.core.errors import DesktopError, GuestError, TaskError
from app.core.frames import Frame
from app.core.windows import WindowList
from app.desktops.base import Desktop, HostsWebPages
from app.desktops.liveness import DesktopDied, while_alive
from app.desktops.web.kiosk import call_reset
from app.desktops.xwindows import list_windows, wait_window
from app.tasks.loader import resolve_asset, site_files
from app.tasks.model import (
    LaunchStep,
    OpenPageStep,
    ResetPageStep,
    SetupStep,
    SleepStep,
    Task,
    UploadStep,
    WaitWindowStep,
)

# How long the screen must stay quiet after a window appears before setup is done:
# a mapped window is not a painted one (FIELD_NOTES: "Window mapped is not ready").
WINDOW_SETTLE_QUIET = 0.5
WINDOW_SETTLE_TIMEOUT = 15.0
# Seconds between looks at the screen and the windows while setup runs (times the
# desktop's time scale): a frame over loopback VNC and an xprop or two per window,
# cheap next to an app starting, and what a setup that dies leaves behind.
LOOK_INTERVAL = 2.0
# The bound on one look (a frame, then the window list).
LOOK_TIMEOUT = 5.0
# Where a web task's app is copied in the desktop's home (`open_page`).
WEB_FOLDER = ".deskloop-web"
# After a page's reset() the page repaints at once: a short settle keeps a web
# desktop's reset within its 1 s budget (bench/bench_web.py measures it).
PAGE_SETTLE_QUIET = 0.1
PAGE_SETTLE_CHANGE_WAIT = 0.3


@dataclass
class LastSeen:
    """What the desktop showed last while setup ran; None where it was never seen."""

    frame: Frame | None = None
    windows: WindowList | None = None


async def run_setup(
    task: Task,
    desktop: Desktop,
    progress: Callable[[str], None] | None = None,
    seen: LastSeen | None = None,
) -> None:
    """Execute `task.setup` in order, keeping `seen` up to date.

    When a step fails, `seen` is refreshed once more (unless the desktop died), so it
    holds the screen and the windows of the failure.

    Raises:
        DesktopDied: the desktop died during a step; the message names the task file,
            the step, what died and how far into the step.
        DesktopError: a step failed; the message names the task file and the step.
        TaskError: the task asks for what no desktop of its image can do (an asset
            outside its folder, a `launch` of a program the desktop does not have).
    """
    seen = seen if seen is not None else LastSeen()
    scale = desktop.info().time_scale
    stop = asyncio.Event()
    looking = asyncio.ensure_future(_keep_looking(desktop, seen, LOOK_INTERVAL * scale, stop))
    try:
        for i, step in enumerate(task.setup):
            where = f"{task.source}: setup[{i}]"
            started = time.monotonic()
            try:
                await while_alive(desktop, _run_step(task, desktop, step, where, progress))
            except DesktopDied as exc:
                into = time.monotonic() - started
                raise DesktopDied(
                    f"{where} ({_kind(step)}): {exc} ({into:.1f} s into the step)"
                ) from exc
            except (GuestError, DesktopError) as exc:
                raise DesktopError(f"{where}: {exc}") from exc
    except Exception as exc:
        stop.set()
        looking.cancel()
        if not isinstance(exc, DesktopDied):
            await _look(desktop, seen)
        raise
    finally:
        await _stop_looking(looking, stop)


async def _run_step(
    task: Task,
    desktop: Desktop,
    step: SetupStep,
    where: str,
    progress: Callable[[str], None] | None,
) -> None:
    guest = desktop.guest
    if isinstance(step, UploadStep):
        if progress:
            progress(f"upload {step.upload.src} → {step.upload.dest}")
        try:
            src = resolve_asset(task.folder, step.upload.src, "upload.src")
        except ValueError as exc:
            raise TaskError(f"{where}: {exc}") from None
        data = await asyncio.to_thread(src.read_bytes)
        await guest.write_file(step.upload.dest, data)
    elif isinstance(step, LaunchStep):
        if progress:
            progress(f"launch {' '.join(step.launch)}")
        try:
            await guest.launch(list(step.launch))
        except GuestError as exc:
            if await _on_path(desktop, step.launch[0]) is False:
                # The task's own mistake (or an image without its app): a fresh desktop
                # of the same image would fail the same way, so it is no desktop error
                # and a batch does not retry it.
                info = desktop.info()
                raise TaskError(
                    f"{where}: launch: {step.launch[0]!r} is not a program on the "
                    f"{info.backend} desktop {info.name} ({exc})"
                ) from exc
            raise
    elif isinstance(step, WaitWindowStep):
        spec = step.wait_window
        scale = desktop.info().time_scale
        timeout = spec.timeout * scale
        if progress:
            what = f"{spec.wm_class or ''} {spec.name or ''}".strip()
            stretched = f" (×{scale:g}: a slower desktop)" if scale != 1 else ""
            progress(f"wait for window {what}, up to {timeout:g} s{stretched}")
        await wait_window(guest, wm_class=spec.wm_class, name=spec.name, timeout=timeout)
        await desktop.settle(
            timeout=WINDOW_SETTLE_TIMEOUT, quiet=WINDOW_SETTLE_QUIET, change_wait=1.0
        )
    elif isinstance(step, OpenPageStep):
        await _open_page(task, desktop, step, progress)
    elif isinstance(step, ResetPageStep):
        page = _web_guest(desktop).web_page
        if page is None:
            raise DesktopError("reset_page: no page is open (an open_page step comes first)")
        if progress:
            progress("reset the page (window.reset())")
        await call_reset(page, step.reset_page.timeout * desktop.info().time_scale)
        await desktop.settle(
            timeout=WINDOW_SETTLE_TIMEOUT,
            quiet=PAGE_SETTLE_QUIET,
            change_wait=PAGE_SETTLE_CHANGE_WAIT,
        )
    elif isinstance(step, SleepStep):
        if progress:
            progress(f"sleep {step.sleep:g}s")
        await asyncio.sleep(step.sleep)


async def _on_path(desktop: Desktop, program: str) -> bool | None:
    """Whether `program` is a program the desktop can run (None: it cannot tell)."""
    try:
        result = await desktop.guest.run(["which", "--", program], timeout=10.0)
    except GuestError:
        return None
    return result.returncode == 0


def _web_guest(desktop: Desktop) -> HostsWebPages:
    guest = desktop.guest
    if not isinstance(guest, HostsWebPages):
        backend = desktop.info().backend
        raise DesktopError(
            f"the {backend} backend's desktops cannot show web pages (web tasks run on "
            f"the local backend and on libvirt VMs; see docs/backends.md)"
        )
    return guest


async def _open_page(
    task: Task, desktop: Desktop, step: OpenPageStep, progress: Callable[[str], None] | None
) -> None:
    spec = step.open_page
    guest = _web_guest(desktop)
    try:
        files = await asyncio.to_thread(site_files, task.folder, spec.site, spec.page, "open_page")
    except ValueError as exc:
        raise TaskError(str(exc)) from None
    folder = f"{WEB_FOLDER}/{task.id}"
    if progress:
        progress(f"copy {spec.site} ({len(files)} files) → ~/{folder}")
    for rel, path in files:
        data = await asyncio.to_thread(path.read_bytes)
        await desktop.guest.write_file(f"~/{folder}/{rel}", data)
    url = "file://" + quote(f"{desktop.guest.home}/{folder}/{spec.page}")
    timeout = spec.timeout * desktop.info().time_scale
    if progress:
        progress(f"open {spec.page} in Chromium (kiosk), up to {timeout:g} s")
    await guest.open_page(url, timeout)
    await desktop.settle(timeout=WINDOW_SETTLE_TIMEOUT, quiet=WINDOW_SETTLE_QUIET, change_wait=1.0)


def _kind(step: SetupStep) -> str:
    """The step's key in the task file (upload, launch, wait_window, sleep)."""
    return next(iter(type(step).model_fields))


async def _keep_looking(
    desktop: Desktop, seen: LastSeen, interval: float, stop: asyncio.Event
) -> None:
    # `stop` as well as the cancel: a cancel that lands as a look's own timeout fires
    # can be lost (Python 3.11), and a loop that only ends on cancel would then look on
    # forever while setup waited for it to end.
    while not stop.is_set():
        await _look(desktop, seen)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(interval):
                await stop.wait()


async def _stop_looking(looking: asyncio.Future[None], stop: asyncio.Event) -> None:
    """End the looks; never waits long for them (a look is bounded by LOOK_TIMEOUT)."""
    stop.set()
    looking.cancel()
    # asyncio.wait: the looks' own end (cancelled) is not raised here, while a cancel
    # of this task (Ctrl-C) still is.
    await asyncio.wait({looking}, timeout=2 * LOOK_TIMEOUT + 1.0)
    if looking.done() and not looking.cancelled():
        looking.exception()  # retrieved: a look's failure is not setup's


async def _look(desktop: Desktop, seen: LastSeen) -> None:
    """Take a frame and the window list into `seen`; what cannot be had stays as it was."""
    with contextlib.suppress(DesktopError, TimeoutError):
        async with asyncio.timeout(LOOK_TIMEOUT):
            seen.frame = await desktop.frame(LOOK_TIMEOUT)
    with contextlib.suppress(DesktopError, GuestError, TimeoutError):
        async with asyncio.timeout(LOOK_TIMEOUT):
            seen.windows = await list_windows(desktop.guest, LOOK_TIMEOUT)
