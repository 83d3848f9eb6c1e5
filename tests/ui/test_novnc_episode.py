"""noVNC during an episode: Desktops → `o` serves the episode's recording proxy, not the
desktop's own VNC server, so what a person does in the browser is recorded as their
steps; the server stops when the episode ends.

On a real local desktop (Xvnc + xterm), a real headless Chromium opens the URL the TUI
gives, clicks the xterm on noVNC's canvas and types a shell command into it: the command
runs in the desktop, and the store holds the click and the typed line as the person's
steps, in that order.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable

import app.ui.screens.desktops as desktops_screen
from app.store import Store
from app.ui.app import DeskLoopApp
from app.ui.screens.desktops import DesktopsScreen
from app.ui.screens.live import LiveScreen
from app.ui.services.novnc import novnc_available
from tests.novnc_browser import (
    click_canvas,
    headless_chromium,
    open_url,
    type_into_canvas,
    wait_connected,
)
from tests.ui.helpers import start_default_episode, wait_until
from tests.waiting import eventually
from tests.xterm_task import write_xterm_task

pytestmark = pytest.mark.desktop

# No skip: scripts/setup.sh installs noVNC; a missing one fails here, named.
assert novnc_available() is None, novnc_available()


async def test_novnc_during_an_episode_is_recorded_through_the_proxy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(desktops_screen, "viewer_command", lambda: None)  # noVNC, always
    monkeypatch.delenv("DISPLAY", raising=False)  # no browser of the person's to open
    write_xterm_task(tmp_path, steps=20, seconds=600, reference=True)
    db = tmp_path / "db" / "deskloop.db"
    app = DeskLoopApp(db=db, tasks_dir=tmp_path / "tasks")
    async with app.run_test(size=(160, 50)) as pilot:
        assert isinstance(await start_default_episode(pilot), LiveScreen)
        session = app.session
        assert session is not None
        await pilot.press("f2")  # paused: only the person acts
        await wait_until(pilot, lambda: session.status == "paused", 120, "the pause")
        name = next(n for n, e in app.pool.entries.items() if e.desktop is session.desktop)
        own = session.desktop.info().vnc
        assert own is not None

        await pilot.press("d")
        await wait_until(
            pilot, lambda: isinstance(app.screen, DesktopsScreen), 5, "the Desktops screen"
        )
        table = app.screen.query_one(DataTable)
        await wait_until(pilot, lambda: table.row_count >= 1, 10, "the desktop listed")
        await pilot.press("o")
        await wait_until(pilot, lambda: app.novnc.serving(name) is not None, 30, "noVNC served")
        server = app.novnc.serving(name)
        assert server is not None
        person_input = session.person_input
        assert person_input is not None and person_input.address is not None
        # The recording proxy, never the desktop's own server.
        assert server.endpoint.port == person_input.address.port != own.port

        async with headless_chromium(tmp_path) as browser:
            await open_url(browser, server.url)
            said = await wait_connected(browser)
            assert said.startswith("Connected"), said
            await click_canvas(browser, 120, 80)  # the xterm, at the top left
            await type_into_canvas(browser, "touch nv\n")
            guest = session.desktop.guest

            await eventually(
                lambda: guest.exists(f"{guest.home}/nv"),
                "the command typed in noVNC to make the file nv",
                60,
                pause=pilot.pause,
            )
            await wait_until(
                pilot,
                lambda: sum(s.actor == "person" for s in session.steps) == 2,
                60,
                "the click and the typed line as the person's steps",
            )
        await pilot.press("l", "f4")
        await pilot.press("y")
        await wait_until(pilot, lambda: session.ended, 60, "the end of the episode")
        # The proxy is gone with the episode: its noVNC server is stopped.
        await wait_until(pilot, lambda: app.novnc.serving(name) is None, 10, "noVNC stopped")
        episode_id = session.episode_id
        assert episode_id is not None
    with Store(db) as store:
        steps = [s for s in store.steps(episode_id) if s.actor == "person"]
    assert [s.action["kind"] for s in steps] == ["click", "type"]
    assert (steps[0].action["x"], steps[0].action["y"]) == (120, 80)
    assert steps[1].action["text"] == "touch nv\n"
