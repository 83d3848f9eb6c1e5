"""Run a task's setup steps (s0) on a freshly reset desktop, over its guest channel."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from app.core.errors import DesktopError, GuestError, TaskError
from app.desktops.base import Desktop
from app.desktops.xwindows import wait_window
from app.tasks.loader import resolve_asset
from app.tasks.model import LaunchStep, SleepStep, Task, UploadStep, WaitWindowStep

# How long the screen must stay quiet after a window appears before setup is done:
# a mapped window is not a painted one (FIELD_NOTES: "Window mapped is not ready").
WINDOW_SETTLE_QUIET = 0.5
WINDOW_SETTLE_TIMEOUT = 15.0


async def run_setup(
    task: Task, desktop: Desktop, progress: Callable[[str], None] | None = None
) -> None:
    """Execute `task.setup` in order.

    Raises:
        DesktopError: a step failed; the message names the task file and the step.
    """
    guest = desktop.guest
    scale = desktop.info().time_scale
    for i, step in enumerate(task.setup):
        where = f"{task.source}: setup[{i}]"
        try:
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
                await guest.launch(list(step.launch))
            elif isinstance(step, WaitWindowStep):
                spec = step.wait_window
                timeout = spec.timeout * scale
                if progress:
                    what = f"{spec.wm_class or ''} {spec.name or ''}".strip()
                    stretched = f" (×{scale:g}: a slower desktop)" if scale != 1 else ""
                    progress(f"wait for window {what}, up to {timeout:g} s{stretched}")
                await wait_window(guest, wm_class=spec.wm_class, name=spec.name, timeout=timeout)
                await desktop.settle(
                    timeout=WINDOW_SETTLE_TIMEOUT, quiet=WINDOW_SETTLE_QUIET, change_wait=1.0
                )
            elif isinstance(step, SleepStep):
                if progress:
                    progress(f"sleep {step.sleep:g}s")
                await asyncio.sleep(step.sleep)
        except (GuestError, DesktopError) as exc:
            raise DesktopError(f"{where}: {exc}") from exc
