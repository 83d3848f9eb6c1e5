"""A desktop's death is noticed within seconds, in setup and in the episode, and a
failed setup leaves its last frame and open windows with the episode.

The VNC watch (what every backend has) is proven on a real RFB peer that can go
away (tests/rfb_server.py); the whole path on a real local desktop (Xvnc, openbox,
xterm), whose Xvnc is killed while a setup step waits for a window that never comes.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from app.agents.base import Observation
from app.agents.null import NullAgent
from app.cli import main
from app.core.actions import Action
from app.core.errors import DesktopError
from app.core.windows import Window, WindowList
from app.desktops.liveness import DesktopDied, while_alive
from app.desktops.local.desktop import LocalDesktop
from app.desktops.vnc_screen import VncScreen
from app.episode.events import EpisodeResult
from app.episode.runner import EpisodeRunner
from app.rfb.client import VNCSession
from app.store import Store
from app.tasks.loader import load_task
from app.users.simulated import SimulatedUser
from tests.rfb_server import RFBTestServer
from tests.still_desktop import QuietAgent

# -- the VNC watch, on a real RFB peer -----------------------------------------------


class ServerScreen(VncScreen):
    """A desktop's screen half over one VNC session and nothing else: what a backend
    without a process of its own to watch is left with."""

    backend_label = "test desktop"
    name = "peer"

    def __init__(self, session: VNCSession) -> None:
        self.session = session

    def _vnc_session(self) -> VNCSession:
        return self.session


@pytest.fixture
async def peer() -> AsyncIterator[tuple[RFBTestServer, ServerScreen]]:
    server = RFBTestServer(64, 48)
    port = await server.start()
    session = VNCSession("127.0.0.1", port, server.password)
    await session.connected()
    try:
        yield server, ServerScreen(session)
    finally:
        await session.close()
        await server.stop()


async def until(condition: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"still not true after {timeout:g} s: {what}")
        await asyncio.sleep(0.02)


async def test_a_dropped_connection_that_reopens_is_no_death(
    peer: tuple[RFBTestServer, ServerScreen],
) -> None:
    server, screen = peer
    watch = asyncio.ensure_future(screen.until_dead())
    try:
        server.drop()  # as a snapshot revert or a server restart would
        await until(lambda: server.connections == 2, "the watch reopened the connection")
        frame = await screen.frame(5.0)  # the reopened connection works
        assert frame.pixels.shape == (48, 64, 3)
        assert not watch.done()
    finally:
        watch.cancel()


async def test_a_vnc_server_that_goes_away_is_a_death_within_2_s(
    peer: tuple[RFBTestServer, ServerScreen],
) -> None:
    server, screen = peer
    watch = asyncio.ensure_future(screen.until_dead())
    await asyncio.sleep(0.1)
    assert not watch.done()
    t0 = time.monotonic()
    await server.stop()
    what = await asyncio.wait_for(watch, 5.0)
    assert time.monotonic() - t0 < 2.0
    assert what.startswith("test desktop peer died: its VNC connection ended (")
    assert "could not be reopened" in what and "refused" in what


async def test_while_alive_returns_the_work_or_raises_the_death(
    peer: tuple[RFBTestServer, ServerScreen],
) -> None:
    server, screen = peer
    assert await while_alive(screen, asyncio.sleep(0.05, result="done")) == "done"
    # Work that fails of the death itself (a frame from a server gone) is reported
    # as the death, not as the lost connection it saw first.
    await server.stop()
    t0 = time.monotonic()
    with pytest.raises(DesktopDied, match="test desktop peer died: its VNC connection ended"):
        await while_alive(screen, screen.frame(30.0))
    # Work that would wait for ever ends too.
    with pytest.raises(DesktopDied):
        await while_alive(screen, asyncio.Event().wait())
    assert time.monotonic() - t0 < 5.0


async def test_while_alive_keeps_an_error_that_is_not_the_death(
    peer: tuple[RFBTestServer, ServerScreen],
) -> None:
    _, screen = peer

    async def fails() -> None:
        raise DesktopError("the step's own failure")

    t0 = time.monotonic()
    with pytest.raises(DesktopError, match="the step's own failure") as info:
        await while_alive(screen, fails())
    assert not isinstance(info.value, DesktopDied)
    assert time.monotonic() - t0 < 3.0  # at most the grace the watch is given


def test_window_lists_round_trip_through_the_store(tmp_path: Path) -> None:
    windows = WindowList((Window("0x40000c", 'a "q" ü', "XTerm", 42), Window("0x5", "", "")), 1.5)
    with Store(tmp_path / "db.sqlite") as store:
        first = store.start_episode(**EPISODE)
        store.finish_episode(
            first, status="error", end_reason="error", steps=0, final_windows=windows
        )
        second = store.start_episode(**EPISODE)
        store.finish_episode(second, status="error", end_reason="error", steps=0)
        assert store.get_episode(first).final_windows == windows
        assert store.get_episode(second).final_windows is None


EPISODE: dict[str, Any] = dict(
    task_id="t",
    task_path="t.yaml",
    task_sha256="0" * 64,
    app="gimp",
    level="L1",
    interactive=False,
    agent="null",
    user_mode="simulated",
    backend="local",
    config={},
)


# -- on a real local desktop ----------------------------------------------------------

NEVER_TASK = """\
id: never-window
app: gimp
level: L1
title: Wait for a window that never comes
instruction: Nothing to do.
setup:
  - launch: [xterm, -title, 'first "term" ü']
  - wait_window: {{class: XTerm, timeout: 30}}
  - wait_window: {{class: NeverComes, timeout: {timeout}}}
budget: {{steps: 5, seconds: 60}}
evaluate:
  all:
    - {{check: file_exists, path: ~/proof.txt}}
"""

XTERM_ONLY_TASK = """\
id: xterm-only
app: gimp
level: L1
title: An xterm
instruction: Nothing to do.
setup:
  - launch: [xterm]
  - wait_window: {class: XTerm, timeout: 30}
budget: {steps: 5, seconds: 60}
evaluate:
  all:
    - {check: file_exists, path: ~/proof.txt}
"""


def write_task(root: Path, text: str, name: str) -> Path:
    folder = root / "tasks" / "gimp"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(text)
    return path


async def run_until_waiting(
    tmp_path: Path,
    timeout: int,
    meanwhile: Callable[[LocalDesktop], None] | None,
) -> tuple[EpisodeResult, float, Store]:
    """Run the never-window task; once setup waits for the window that never comes
    (and has had time to look at the screen), do `meanwhile`. Returns the result
    and the seconds from `meanwhile` to the episode's end."""
    task = load_task(write_task(tmp_path, NEVER_TASK.format(timeout=timeout), "never-window"))
    store = Store(tmp_path / "db.sqlite")
    lines: list[str] = []
    async with LocalDesktop() as desktop:
        runner = EpisodeRunner(
            task, desktop, NullAgent(), SimulatedUser(), store, backend="local",
            progress=lines.append,
        )  # fmt: skip
        episode = asyncio.ensure_future(runner.run())
        await until(lambda: any("NeverComes" in line for line in lines), "setup waits", 60.0)
        # Long enough for one look at the screen after the xterm settled.
        await asyncio.sleep(2.5)
        t0 = time.monotonic()
        if meanwhile is not None:
            meanwhile(desktop)
        result = await asyncio.wait_for(episode, 120.0)
        return result, time.monotonic() - t0, store


def xvnc_pid(desktop: LocalDesktop) -> int:
    session = desktop._session
    assert session is not None and session.xvnc is not None
    return session.xvnc.pid


def assert_setup_evidence(store: Store, result: EpisodeResult, db_folder: Path) -> None:
    """The episode kept the xterm's screen and the window list of its end."""
    episode = store.get_episode(result.episode_id)
    assert episode.final_frame is not None
    pixels = np.asarray(Image.open(store.frame_path(episode.final_frame)).convert("RGB"))
    assert pixels.shape == (800, 1280, 3)
    assert (pixels > 200).all(axis=2).mean() > 0.05, "the xterm's white window is in it"
    assert episode.final_windows is not None
    titles = [(w.wm_class, w.title) for w in episode.final_windows.windows]
    assert titles == [("XTerm", 'first "term" ü')]
    assert episode.final_windows.windows[0].pid is not None


@pytest.mark.desktop
async def test_killing_xvnc_during_setup_ends_it_within_5_s_with_frame_and_windows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result, seconds, store = await run_until_waiting(
        tmp_path, 90, lambda desktop: os.kill(xvnc_pid(desktop), signal.SIGKILL)
    )
    with store:
        assert seconds < 5.0, f"the death was noticed after {seconds:.1f} s"
        assert result.status == "error" and result.error_kind == "desktop"
        assert result.error is not None
        assert result.error.startswith("Desktop died: ")
        assert "setup[2] (wait_window): local desktop " in result.error
        assert "its Xvnc (pid " in result.error and "was killed by SIGKILL" in result.error
        assert "s into the step" in result.error
        assert_setup_evidence(store, result, tmp_path)
    assert main(["--db", str(tmp_path / "db.sqlite"), "episodes", "show", "1"]) == 0
    shown = capsys.readouterr().out
    assert "final frame: " in shown and "setup-failed.png" in shown
    assert "XTerm 'first \"term\" ü' (0x" in shown


@pytest.mark.desktop
async def test_a_setup_timeout_keeps_the_last_frame_and_the_open_windows(
    tmp_path: Path,
) -> None:
    result, _, store = await run_until_waiting(tmp_path, 4, None)
    with store:
        assert result.status == "error" and result.error_kind == "desktop"
        assert result.error is not None
        assert "setup[2]: no visible window with class 'NeverComes' appeared within 4 s" in (
            result.error
        )
        assert "died" not in result.error
        assert_setup_evidence(store, result, tmp_path)


@pytest.mark.desktop
async def test_a_dropped_vnc_connection_during_setup_is_no_death(tmp_path: Path) -> None:
    def drop(desktop: LocalDesktop) -> None:
        client = desktop._vnc_session().client
        assert client is not None
        client._writer.transport.abort()  # the connection drops; Xvnc lives on

    result, _, store = await run_until_waiting(tmp_path, 6, drop)
    with store:
        # Setup ran on to its own timeout: the session reopened the connection.
        assert result.error is not None and "appeared within 6 s" in result.error
        assert "died" not in result.error
        assert_setup_evidence(store, result, tmp_path)


class KillsXvncThenThinks(QuietAgent):
    """An agent that kills the desktop's Xvnc at its first turn and then thinks for
    ever: only the death watch can end the episode."""

    name = "killer"

    def __init__(self, desktop: LocalDesktop) -> None:
        self.desktop = desktop
        self.killed_at = 0.0

    async def decide(self, observation: Observation) -> Action:
        os.kill(xvnc_pid(self.desktop), signal.SIGKILL)
        self.killed_at = time.monotonic()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


@pytest.mark.desktop
async def test_killing_xvnc_mid_episode_ends_it_within_5_s(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path, XTERM_ONLY_TASK, "xterm-only"))
    with Store(tmp_path / "db.sqlite") as store:
        async with LocalDesktop() as desktop:
            agent = KillsXvncThenThinks(desktop)
            runner = EpisodeRunner(task, desktop, agent, SimulatedUser(), store, backend="local")
            result = await asyncio.wait_for(runner.run(), 120.0)
            seconds = time.monotonic() - agent.killed_at
        assert seconds < 5.0, f"the death was noticed after {seconds:.1f} s"
        assert result.status == "error" and result.error_kind == "desktop"
        assert result.error is not None and result.error.startswith("Desktop died: local desktop")
        assert "its Xvnc (pid " in result.error and "(during step 0, " in result.error
        episode = store.get_episode(result.episode_id)
        # The last screen the agent saw (step 0's, never recorded as a step: the
        # agent never answered) is the episode's final frame.
        assert episode.final_frame is not None and episode.final_frame.endswith("/00000.png")
        assert store.frame_path(episode.final_frame).is_file()


@pytest.mark.desktop
async def test_a_launch_of_a_program_the_desktop_lacks_is_the_tasks_error(
    tmp_path: Path,
) -> None:
    """Not a desktop error: a fresh desktop would fail the same way, so a batch does not
    retry it (app.batch.retry)."""
    from app.batch.retry import is_retried

    text = XTERM_ONLY_TASK.replace("launch: [xterm]", "launch: [no-such-editor, --new]")
    task = load_task(write_task(tmp_path, text, "xterm-only"))
    with Store(tmp_path / "db.sqlite") as store:
        async with LocalDesktop() as desktop:
            runner = EpisodeRunner(
                task, desktop, NullAgent(), SimulatedUser(), store, backend="local"
            )
            result = await asyncio.wait_for(runner.run(), 120.0)
        assert result.status == "error" and result.error_kind == "task", result.error
        assert result.error is not None
        assert "setup[0]: launch: 'no-such-editor' is not a program on the local desktop" in (
            result.error
        )
        assert not is_retried(result.status, result.error_kind)
