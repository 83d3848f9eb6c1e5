"""Every web app of the library keeps the page contract, on the real local desktop with
the real Chromium: it lists tasks, no task is complete at the start, a click on one of
its buttons (a real pointer click over VNC) changes its state, and `reset()` brings back
exactly the start (state and title). Apps are found by folder, so a new app is covered
without editing this file; the tasks themselves are proven by `tasks verify`."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

from app.core.actions import Click
from app.desktops.local.desktop import LocalDesktop
from app.desktops.web.cdp import WebPage
from app.desktops.web.kiosk import call_evaluate, call_reset, page_state, page_tasks
from app.episode.setup_steps import run_setup
from app.tasks.loader import load_task

ROOT = Path(__file__).resolve().parents[2]
APPS = sorted(p.parent.name for p in (ROOT / "tasks" / "web" / "assets").glob("*/index.html"))

pytestmark = pytest.mark.desktop

TASK = """\
id: web-contract
app: web
level: L1
title: page contract
instruction: x
setup:
  - open_page: {{site: assets/{app}, page: index.html}}
  - reset_page: {{}}
evaluate: {{check: web_evaluate, task: none}}
"""

# The centres of the page's visible, enabled buttons, last first: the last buttons of
# these apps act on their items (approve, add to cart, mark reviewed), while the first
# ones tend to open dialogs or need text typed first.
BUTTONS = """[...document.querySelectorAll('button')].reverse()
  .filter((b) => !b.disabled && b.offsetParent !== null)
  .map((b) => b.getBoundingClientRect())
  .map((r) => [Math.round(r.x + r.width / 2), Math.round(r.y + r.height / 2)])
  .filter(([x, y]) => x > 0 && y > 0 && x < 1280 && y < 800)"""


async def _snapshot(page: WebPage) -> tuple[Any, Any]:
    return await page_state(page), await page.evaluate("document.title")


async def _changed_by_a_click(desktop: LocalDesktop, page: WebPage, start: Any) -> bool:
    """Click the page's buttons one by one until its state differs from `start`."""
    loop = asyncio.get_running_loop()
    for x, y in (await page.evaluate(BUTTONS))[:8]:
        await desktop.act(Click(x, y))
        deadline = loop.time() + 3
        while loop.time() < deadline:
            if await _snapshot(page) != start:
                return True
            await asyncio.sleep(0.05)
    return False


@pytest.mark.parametrize("app", APPS)
async def test_each_app_keeps_the_page_contract(app: str, tmp_path: Path) -> None:
    shutil.copytree(ROOT / "tasks" / "web" / "assets" / app, tmp_path / "assets" / app)
    path = tmp_path / "web-contract.yaml"
    path.write_text(TASK.format(app=app))
    task = load_task(path)
    async with LocalDesktop() as desktop:
        await run_setup(task, desktop)
        page = desktop.guest.web_page
        assert page is not None
        tasks = await page_tasks(page)
        assert tasks and all(t["id"] and t["description"] for t in tasks), tasks
        for t in tasks:
            verdict = await call_evaluate(page, t["id"])
            done = verdict if isinstance(verdict, bool) else verdict["success"]
            assert done is False, f"{app}: task {t['id']} is complete at the start: {verdict}"
        start = await _snapshot(page)
        assert start[0] is not None, f"{app} has no getState()"
        assert await _changed_by_a_click(desktop, page, start), f"no click changed {app}"
        await call_reset(page)
        assert await _snapshot(page) == start
