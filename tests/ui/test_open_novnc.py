"""`o` with no native VNC viewer serves noVNC for the desktop and shows its URL.

The desktop is a real Xvnc listed as a libvirt VM (the listing is fixed: the test is
about the screen); the URL the notification gives is fetched, and the page it serves is
noVNC's, for that desktop's VNC port, with the password only in the fragment. What the
page shows in a real browser is tests/ui/test_novnc.py's.
"""

from __future__ import annotations

import os
import re
import shutil
import urllib.request
from pathlib import Path

import pytest
from textual.notifications import Notify
from textual.widgets import DataTable

from app.desktops.inventory import BackendListing
from app.desktops.local.bare_xvnc import bare_xvnc
from app.rfb.client import VncEndpoint
from app.ui.app import DeskLoopApp
from app.ui.screens.desktops import DesktopsScreen
from app.ui.services.novnc import novnc_available
from tests.ui.helpers import fixture_db, vm, wait_until, write_tasks

# No skip: scripts/setup.sh installs noVNC; a missing one fails here, named.
assert novnc_available() is None, novnc_available()


async def test_o_without_a_viewer_serves_novnc(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A PATH with websockify (and what its script runs on) but no vncviewer.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("websockify", "python3"):
        found = shutil.which(tool)
        assert found is not None
        os.symlink(found, bin_dir / tool)
    monkeypatch.delenv("DISPLAY", raising=False)  # nothing to open a browser on
    monkeypatch.setenv("DESKLOOP_LIBVIRT_URI", "qemu+unix:///system?socket=/nonexistent/x")
    folder = tmp_path / "x"
    folder.mkdir()
    with bare_xvnc(folder, "pw4delta") as x:
        monkeypatch.setenv("PATH", str(bin_dir))  # after Xvnc has started
        delta = vm("delta", state="running", vnc=VncEndpoint("127.0.0.1", x.port, "pw4delta"))
        listing = BackendListing("libvirt", "qemu:///system", (delta,))
        app = DeskLoopApp(
            db=fixture_db(tmp_path / "lab.db"),
            tasks_dir=write_tasks(tmp_path / "tasks"),
            start_mode="desktops",
            libvirt_listing=lambda: listing,
        )
        seen: list[Notify] = []
        async with app.run_test(
            size=(160, 50),
            message_hook=lambda m: seen.append(m) if isinstance(m, Notify) else None,
        ) as pilot:
            assert isinstance(app.screen, DesktopsScreen)
            await wait_until(
                pilot,
                lambda: "delta" in str(app.screen.query_one(DataTable).get_row_at(0)),
                5,
                "delta listed",
            )
            await pilot.press("o")

            def url() -> str | None:
                for note in seen:
                    found = re.search(
                        r"http://127\.0\.0\.1:\d+/\S+", str(note.notification.message)
                    )
                    if found:
                        return found.group(0)
                return None

            await wait_until(pilot, lambda: url() is not None, 20, "the noVNC URL")
            address = url()
            assert address is not None
            page, _, fragment = address.partition("#")
            assert fragment == "autoconnect=true&password=pw4delta"
            assert "pw4delta" not in page  # never sent to the server
            with urllib.request.urlopen(page, timeout=10) as response:
                assert b"noVNC" in response.read()
            server = app.novnc.servers["delta"]
            assert server.endpoint.port == x.port and server.alive()
            await pilot.press("o")  # again: the same server
            assert app.novnc.servers["delta"] is server
        assert not server.alive()  # stopped with the TUI
