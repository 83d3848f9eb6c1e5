"""The DevTools relay of VM desktops (app/desktops/remote/ssh_web.py) over a real SSH server.

A VM is not needed to check the relay itself: the test's OpenSSH server on 127.0.0.1
(tests/sshd.py) stands in for the guest's, and a small program that answers CDP on its
fds 3 and 4 stands in for Chromium (the browser is not what is tested here; the end to
end test with Chromium in a VM is tests/vm/test_libvirt_web.py, slow under emulation). It
checks what a VM's start states rely on: the pipes outlive the relay, a new relay
reaches the same browser, a browser launched again replaces the old one, and no FIFO
name is left for anyone to open.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import paramiko
import pytest
import pytest_asyncio

from app.desktops.remote.ssh_guest import SSHGuest
from app.desktops.remote.ssh_web import CDP_DIR, PID_FILE, RELAY_PIDS
from app.desktops.web.cdp import CdpError
from app.desktops.web.kiosk import wait_contract
from tests.sshd import SshdServer, start_sshd

pytestmark = pytest.mark.asyncio(loop_scope="module")

# Answers the three CDP methods DeskLoop uses; an evaluation returns the expression
# and this process's pid, so a test can tell which browser answered.
FAKE_BROWSER = r"""
import json, os
buffer = b""
sessions = 0
while True:
    chunk = os.read(3, 65536)
    if not chunk:
        break
    buffer += chunk
    while b"\0" in buffer:
        raw, buffer = buffer.split(b"\0", 1)
        message = json.loads(raw)
        method = message["method"]
        if method == "Target.getTargets":
            result = {"targetInfos": [{"type": "page", "targetId": "page-1"}]}
        elif method == "Target.attachToTarget":
            sessions += 1
            result = {"sessionId": "session-%d" % sessions}
        else:
            result = {"result": {"value": [message["params"]["expression"], os.getpid()]}}
        os.write(4, json.dumps({"id": message["id"], "result": result}).encode() + b"\0")
"""


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshdServer]:
    with start_sshd(tmp_path_factory.mktemp("sshd")) as server:
        yield server


@pytest_asyncio.fixture(loop_scope="module")
async def guest(sshd: SshdServer, tmp_path: Path) -> AsyncIterator[SSHGuest]:
    home = tmp_path / "home"
    home.mkdir()
    (home / "fake_browser.py").write_text(FAKE_BROWSER)
    key = paramiko.Ed25519Key.from_private_key_file(str(sshd.client_key))
    ssh = SSHGuest(sshd.host, key, sshd.known_hosts, port=sshd.port, user=sshd.user, home=str(home))
    await ssh.connect(30.0)
    try:
        yield ssh
    finally:
        await ssh.close_web()
        pid_file = home / PID_FILE
        if pid_file.exists():  # the stand-in never exits by itself: end its group
            os.killpg(int(pid_file.read_text()), 15)
        ssh.close()


async def test_the_relay_reaches_the_browser_again_after_it_ended(guest: SSHGuest) -> None:
    home = Path(guest.home)
    await guest.browser.launch([sys.executable, f"{guest.home}/fake_browser.py"], 30.0)
    page = guest.web_page
    expression, pid = await page.evaluate("1 + 1", timeout=20.0)
    assert expression == "1 + 1"
    assert int((home / PID_FILE).read_text()) == pid
    # The pipes exist only as the browser's descriptors: no FIFO name to open.
    assert sorted(p.name for p in (home / CDP_DIR).iterdir()) == ["browser.pid", "relay.pids"]
    first_session = page.session_id

    # As before a VM is saved: the relay ends, its guest side with it.
    await guest.close_web()
    assert not (home / RELAY_PIDS).exists()
    # As after a restore: the next call makes a new relay to the same browser.
    assert (await page.evaluate("2", timeout=20.0))[1] == pid
    assert page.session_id != first_session

    # A second launch replaces the browser (its process group is ended).
    await guest.browser.launch([sys.executable, f"{guest.home}/fake_browser.py"], 30.0)
    second = int((home / PID_FILE).read_text())
    assert second != pid and (await page.evaluate("3", timeout=20.0))[1] == second
    assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()


async def test_a_page_call_without_a_browser_says_none_runs(guest: SSHGuest) -> None:
    with pytest.raises(CdpError, match="no browser is running in the guest"):
        await guest.web_page.evaluate("1", timeout=10.0)


async def test_waiting_for_a_page_that_has_no_relay_yet_says_why(guest: SSHGuest) -> None:
    """Before the first relay is made (no browser yet, or a starved guest not letting it
    attach), waiting for the contract keeps trying and fails naming why, however often
    it tried to send the page to its URL again."""
    with pytest.raises(CdpError, match="no browser is running in the guest"):
        await wait_contract(guest.web_page, "file:///nowhere.html", timeout=3.0, stall=1.0)


async def test_a_browser_that_is_missing_is_named(guest: SSHGuest) -> None:
    with pytest.raises(CdpError, match="no-such-browser: not found"):
        await guest.browser.launch(["no-such-browser", "--kiosk"], 10.0)
