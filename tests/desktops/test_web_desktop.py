"""Web desktops on the real local backend with Debian's Chromium: the page contract is
reached over the browser's DevTools pipe, which nothing else can reach (no listening
socket, no DevToolsActivePort file), `web_evaluate` and `web_state_equals` score
through it, `reset_page` restores the start, and task files cannot point a page
outside their folder."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest

from app.core.actions import Click
from app.core.errors import DesktopError, GuestError, TaskError
from app.core.procfs import process_name, process_start_time
from app.desktops.base import DesktopInfo
from app.desktops.local import reaper
from app.desktops.local.desktop import LocalDesktop
from app.desktops.web.cdp import CdpError
from app.desktops.web.kiosk import call_evaluate, call_reset, page_tasks, wait_contract
from app.desktops.xwindows import wait_window
from app.episode.scoring import score_task
from app.episode.setup_steps import run_setup
from app.tasks.loader import load_task

ROOT = Path(__file__).resolve().parents[2]
START_CARD = ROOT / "tasks" / "web" / "web-kanban-start-card.yaml"
START_BUTTON = (85, 187)  # "Start ▶" of the first To do card (tasks/web/assets/kanban)


def _listening_inodes() -> set[str]:
    """Socket inodes of every TCP/UDP socket on this machine in LISTEN state (or bound UDP)."""
    inodes: set[str] = set()
    for table in ("tcp", "tcp6", "udp", "udp6"):
        path = Path("/proc/net") / table
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            listening = fields[3] == "0A" if table.startswith("tcp") else True
            if listening:
                inodes.add(fields[9])
    return inodes


def _socket_inodes(pid: int) -> set[str]:
    found: set[str] = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("socket:["):
                found.add(target[8:-1])
    except OSError:
        pass
    return found


@pytest.mark.desktop
async def test_the_page_contract_goes_over_a_private_pipe_only() -> None:
    task = load_task(START_CARD)
    async with LocalDesktop() as desktop:
        await run_setup(task, desktop)
        page = desktop.guest.web_page
        assert page is not None
        ids = [t["id"] for t in await page_tasks(page)]
        assert "start-login-fix" in ids
        assert desktop.marker is not None
        browsers = [
            pid
            for pid in reaper.marked_processes(desktop.marker)
            if (process_name(pid) or "").startswith("chromium")
        ]
        assert browsers, "no Chromium process of this desktop"
        listening = _listening_inodes()
        for pid in browsers:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            assert not any(arg.startswith(b"--remote-debugging-port") for arg in cmdline)
            # No process of the browser listens on any port: DevTools has no address.
            assert not (_socket_inodes(pid) & listening), f"Chromium pid {pid} listens"
        profiles = list(Path(desktop.guest.home).glob(".chromium-profile-*"))
        assert profiles and not any((p / "DevToolsActivePort").exists() for p in profiles)
        starts = {pid: process_start_time(pid) for pid in browsers}
    # Chromium writes its process titles over its environment, marker included: the
    # desktop's cleanup still finds it, as a descendant of a marked process.
    left = [pid for pid, start in starts.items() if process_start_time(pid) == start]
    assert not left, f"Chromium processes left behind: {left}"


@pytest.mark.desktop
async def test_web_evaluate_scores_the_page_and_reset_page_restores_it() -> None:
    task = load_task(START_CARD)
    async with LocalDesktop() as desktop:
        await run_setup(task, desktop)
        before = await score_task(task, desktop.guest)
        assert before.passed is False
        assert "failed" in before.checks[0].evidence, before.checks[0].evidence
        await desktop.act(Click(*START_BUTTON))
        # The page puts its column counts in the title: wait on that, not on time.
        await wait_window(desktop.guest, name="To do 2 · In progress 3 ", timeout=10)
        page = desktop.guest.web_page
        assert page is not None
        after = await score_task(task, desktop.guest)
        assert after.passed is True, after.checks[0].evidence
        assert "succeeded" in after.checks[0].evidence
        doing = await page.evaluate("window.getState().columns.doing")
        assert doing == ["Fix login timeout", "Search filters", "Invoice PDF export"]
        await call_reset(page)
        verdict = await call_evaluate(page, "start-login-fix")
        assert verdict["success"] is False


@pytest.mark.desktop
async def test_a_page_that_lost_its_navigation_is_sent_to_its_url_again() -> None:
    """A starved browser can lose its first navigation and stay a blank page; waiting for
    the contract sends a page stuck that way to its URL again instead of timing out."""
    task = load_task(START_CARD)
    async with LocalDesktop() as desktop:
        await run_setup(task, desktop)
        page = desktop.guest.web_page
        assert page is not None
        url = await page.evaluate("location.href")
        assert str(url).startswith("file://"), url
        await page.navigate("about:blank")  # the state a lost navigation leaves
        with pytest.raises(CdpError, match="about:blank"):
            await wait_contract(page, url, timeout=1.5, stall=60.0)
        await wait_contract(page, url, timeout=60.0, stall=1.0)
        assert await page.evaluate("location.href") == url
        ids = [t["id"] for t in await page_tasks(page)]
        assert "start-login-fix" in ids


def _copy_task(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "web"
    shutil.copytree(ROOT / "tasks" / "web" / "assets" / "kanban", folder / "assets" / "kanban")
    path = folder / "web-x.yaml"
    path.write_text(text)
    return path


TASK = """\
id: web-x
app: {app}
level: L1
title: x
instruction: x
setup:
  - open_page: {{site: {site}, page: index.html}}
  - reset_page: {{}}
evaluate: {{check: web_evaluate, task: start-login-fix}}
"""


def test_a_site_that_leads_outside_the_task_folder_is_refused(tmp_path: Path) -> None:
    path = _copy_task(tmp_path, TASK.format(app="web", site="assets/kanban"))
    load_task(path)  # the copy is fine as it is
    (path.parent / "assets" / "kanban" / "secret").symlink_to("/etc/hostname")
    with pytest.raises(
        TaskError,
        match=r"setup\[0\]\.open_page\.site: assets/kanban/secret "
        r"leads outside the task folder",
    ):
        load_task(path)
    with pytest.raises(TaskError, match=r"setup\[0\]\.open_page\.site.*'\.\.'"):
        load_task(_copy_task(tmp_path / "b", TASK.format(app="web", site="../kanban")))
    with pytest.raises(TaskError, match=r"open_page\.site: folder 'assets/nope' not found"):
        load_task(_copy_task(tmp_path / "c", TASK.format(app="web", site="assets/nope")))


def test_page_steps_belong_to_web_tasks(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match=r"open_page is for 'app: web' tasks"):
        load_task(_copy_task(tmp_path / "a", TASK.format(app="gimp", site="assets/kanban")))
    no_page = TASK.format(app="web", site="assets/kanban").replace(
        "  - open_page: {site: assets/kanban, page: index.html}\n  - reset_page: {}\n",
        "  - sleep: 1\n",
    )
    with pytest.raises(TaskError, match=r"a web task opens its page with an open_page step"):
        load_task(_copy_task(tmp_path / "b", no_page))


class _NoWebGuest:
    """A guest channel without web pages (as a VM's is, for now)."""

    home = "/home/user"

    async def write_file(self, path: str, data: bytes) -> None:
        return None

    async def run(self, argv: list[str], timeout: float = 30.0) -> None:
        raise GuestError("no commands here")


class _NoWebDesktop:
    guest = _NoWebGuest()

    def info(self) -> DesktopInfo:
        return DesktopInfo(name="box-1", backend="other", state="running", width=1280, height=800)

    async def frame(self, timeout: float = 5.0) -> None:
        raise DesktopError("no frames here")

    async def until_dead(self) -> str:
        await asyncio.Event().wait()
        return "never"


async def test_a_desktop_without_web_pages_says_so_at_open_page() -> None:
    task = load_task(START_CARD)
    with pytest.raises(
        DesktopError, match=r"setup\[0\]: the other backend's desktops cannot show web pages"
    ):
        await run_setup(task, _NoWebDesktop())  # type: ignore[arg-type]
