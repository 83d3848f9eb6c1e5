"""The local desktop backend on real Xvnc + openbox (+ xterm as the app under test).

Process checks scan /proc here with their own code rather than the reaper's, so a
bug in the reaper's scan cannot hide its own leftovers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from app.core.actions import Type
from app.core.errors import DesktopError, GuestError, VNCError
from app.core.procfs import process_environ, process_start_time
from app.desktops.local import reaper, xvnc
from app.desktops.local import session as local_session
from app.desktops.local.desktop import LocalDesktop, reap_orphans
from app.desktops.local.lab_user import lab_user
from app.desktops.xwindows import active_window_title, wait_window
from app.rfb.client import connect
from app.rfb.wire import vnc_password_file_bytes
from tests.waiting import eventually, wait_until

REPO = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------ helpers


def pids_with_marker(marker: str) -> list[int]:
    """Live (non-zombie) processes whose environment holds DESKLOOP_DESKTOP=marker."""
    needle = f"DESKLOOP_DESKTOP={marker}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            env = Path(f"/proc/{name}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if needle in env and alive(int(name)):
            found.append(int(name))
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"


@pytest.fixture
async def desktop() -> AsyncIterator[LocalDesktop]:
    d = LocalDesktop(name="test")
    await d.reset()
    try:
        yield d
    finally:
        await d.close()


@pytest.fixture
def session_root() -> Iterator[Path]:
    """An empty folder for session folders, which the desktop's user can enter
    (pytest's tmp_path lies under root's private /tmp/pytest-of-root)."""
    with tempfile.TemporaryDirectory(prefix="deskloop-test-root-") as folder:
        os.chmod(folder, 0o711)
        yield Path(folder)


@pytest.fixture
def xterm() -> str:
    path = shutil.which("xterm")
    assert path, "xterm is needed by the desktop tests: apt-get install xterm"
    return path


@pytest.fixture
def environ_secret() -> Iterator[str]:
    os.environ["DESKLOOP_TEST_SECRET"] = "do-not-leak"
    try:
        yield "DESKLOOP_TEST_SECRET"
    finally:
        del os.environ["DESKLOOP_TEST_SECRET"]


# ------------------------------------------------------------------ no X needed


@pytest.mark.parametrize("password", ["abcdefgh", "x", "Zq9!long-password", "EczHWUFi"])
def test_password_file_matches_vncpasswd(password: str) -> None:
    assert shutil.which("vncpasswd"), "vncpasswd (tigervnc-tools) is needed for this check"
    expected = subprocess.run(
        ["vncpasswd", "-f"], input=password.encode(), capture_output=True, check=True, timeout=10
    ).stdout
    assert vnc_password_file_bytes(password) == expected


def test_reap_orphans_kills_leftovers_of_dead_owners_only(tmp_path: Path) -> None:
    dead_pid = subprocess.Popen(["true"])
    dead_pid.wait()
    me, my_start = os.getpid(), process_start_time(os.getpid())
    assert my_start is not None
    orphan_dir = tmp_path / "deskloop-orphan"
    orphan_dir.mkdir()
    (orphan_dir / "owner").write_text(f"{dead_pid.pid} 1\n")
    live_dir = tmp_path / "deskloop-live"
    live_dir.mkdir()
    (live_dir / "owner").write_text(f"{me} {my_start}\n")

    def start(marker: str, owner: int, start_time: str, session: Path) -> subprocess.Popen[bytes]:
        env = {
            "PATH": os.environ["PATH"],
            "DESKLOOP_DESKTOP": marker,
            "DESKLOOP_OWNER_PID": str(owner),
            "DESKLOOP_OWNER_START": start_time,
            "DESKLOOP_SESSION_DIR": str(session),
        }
        return subprocess.Popen(["sleep", "600"], env=env)

    orphan = start("orphan-" + os.urandom(4).hex(), dead_pid.pid, "1", orphan_dir)
    # Same pid as us but another start time: a recycled pid is not a live owner.
    recycled = start("recycled-" + os.urandom(4).hex(), me, "1", orphan_dir)
    kept = start("kept-" + os.urandom(4).hex(), me, my_start, live_dir)
    try:
        # Popen returns once exec has closed the child's descriptors, but the kernel
        # sets up the new environment a moment later: until then /proc shows none,
        # and a leftover (always long-lived) would not be told from an exec in flight.
        pids = [orphan.pid, recycled.pid, kept.pid]
        wait_until(
            lambda: all("DESKLOOP_DESKTOP" in process_environ(pid) for pid in pids),
            "the sleepers' environments",
        )
        killed = reap_orphans(root=tmp_path)
        assert orphan.wait(timeout=10) is not None
        assert recycled.wait(timeout=10) is not None
        # Which call stopped them is not asked: another process's clean-up (every
        # command that starts desktops runs one) may have been first.
        assert kept.poll() is None and kept.pid not in killed
        assert not orphan_dir.exists()
        assert live_dir.exists()
    finally:
        for proc in (orphan, recycled, kept):
            proc.kill()
            proc.wait()


async def test_reaper_cleans_up_when_its_pipe_closes(tmp_path: Path) -> None:
    marker = "reaper-" + os.urandom(4).hex()
    session = tmp_path / "deskloop-session"
    session.mkdir()
    (session / "owner").write_text(f"{os.getpid()} 0\n")
    env = {"PATH": os.environ["PATH"], "DESKLOOP_DESKTOP": marker}
    # setsid detaches the sleeper from this process, as a double-forking app would.
    victim = subprocess.Popen(["setsid", "sleep", "600"], env=env)
    watchdog = subprocess.Popen(
        [sys.executable, "-I", reaper.__file__, "--marker", marker, "--dir", str(session)],
        stdin=subprocess.PIPE,
    )
    try:
        await eventually(lambda: len(pids_with_marker(marker)) == 1, "the sleeper started")
        assert watchdog.poll() is None, "the watchdog must wait while its pipe is open"
        assert watchdog.stdin is not None
        watchdog.stdin.close()
        await eventually(lambda: watchdog.poll() is not None, "the watchdog exited")
        await eventually(lambda: not pids_with_marker(marker), "the marked sleeper is gone")
        assert not session.exists()
    finally:
        victim.kill()
        victim.wait()
        watchdog.kill()
        watchdog.wait()


# ------------------------------------------------------------------ real desktops


@pytest.mark.desktop
async def test_reset_starts_a_desktop_with_frames_of_its_size(desktop: LocalDesktop) -> None:
    frame = await desktop.frame()
    assert (frame.width, frame.height) == (1280, 800)
    assert frame.pixels.shape == (800, 1280, 3) and frame.pixels.dtype == np.uint8
    info = desktop.info()
    assert info.backend == "local" and info.state == "running"
    assert info.vnc is not None and info.vnc.host == "127.0.0.1"
    assert info.details["display"].startswith(":")
    assert info.details["home"] == desktop.guest.home
    # The endpoint a person's viewer would use works, and only with the password.
    client = await connect(info.vnc.host, info.vnc.port, info.vnc.password)
    assert (client.width, client.height) == (1280, 800)
    await client.close()
    with pytest.raises(VNCError):
        await connect(info.vnc.host, info.vnc.port, "wrong-pw")


def listening_addresses(port: int) -> set[str]:
    """The addresses a TCP port listens on, read from the kernel's socket tables."""
    found = set()
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.split(":")
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                raw = bytes.fromhex(address)
                # The kernel prints each 32-bit word in host (little-endian) order.
                words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
                found.add(
                    socket.inet_ntop(socket.AF_INET if width == 8 else socket.AF_INET6, words)
                )
    return found


@pytest.mark.desktop
async def test_vnc_listens_on_ipv4_loopback_only(desktop: LocalDesktop) -> None:
    info = desktop.info()
    assert info.vnc is not None
    assert listening_addresses(info.vnc.port) == {"127.0.0.1"}


@pytest.mark.desktop
async def test_other_sizes_are_honoured() -> None:
    async with LocalDesktop(width=800, height=600) as d:
        frame = await d.frame()
        assert (frame.width, frame.height) == (800, 600)
        result = await d.guest.run(["xdotool", "getdisplaygeometry"])
        assert result.stdout_text().split() == ["800", "600"]


@pytest.mark.desktop
async def test_two_desktops_run_at_once_apart() -> None:
    async with LocalDesktop(name="a") as a, LocalDesktop(name="b") as b:
        ia, ib = a.info(), b.info()
        assert ia.vnc is not None and ib.vnc is not None
        assert ia.vnc.port != ib.vnc.port
        assert ia.details["display"] != ib.details["display"]
        assert ia.details["home"] != ib.details["home"]
        assert ia.vnc.password != ib.vnc.password
        fa, fb = await asyncio.gather(a.frame(), b.frame())
        assert fa.width == fb.width == 1280


@pytest.mark.desktop
async def test_desktop_starts_when_its_first_port_is_taken(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        ports = iter([taken])
        real_free_port = xvnc.free_port
        monkeypatch.setattr(
            local_session, "free_port", lambda: next(ports, None) or real_free_port()
        )
        async with LocalDesktop() as d:
            info = d.info()
            assert info.vnc is not None and info.vnc.port != taken
            assert (await d.frame()).width == 1280


@pytest.mark.desktop
async def test_guest_run_sees_the_session_environment(environ_secret: str) -> None:
    async with LocalDesktop() as desktop:
        await _check_session_environment(desktop, environ_secret)


async def _check_session_environment(desktop: LocalDesktop, secret_name: str) -> None:
    result = await desktop.guest.run(["env"])
    assert result.ok
    env = dict(line.split("=", 1) for line in result.stdout_text().splitlines() if "=" in line)
    home = desktop.guest.home
    assert env["HOME"] == home
    assert env["DISPLAY"] == desktop.info().details["display"]
    assert env["TMPDIR"].startswith(home + "/")
    assert env["XDG_RUNTIME_DIR"].startswith(home + "/")
    assert env["DESKLOOP_DESKTOP"] == desktop.marker
    assert env["DBUS_SESSION_BUS_ADDRESS"] == f"unix:path={env['XDG_RUNTIME_DIR']}/bus"
    bus = await desktop.guest.run(
        [
            "dbus-send",
            "--session",
            "--print-reply",
            "--dest=org.freedesktop.DBus",
            "/org/freedesktop/DBus",
            "org.freedesktop.DBus.GetId",
        ]
    )
    assert bus.ok, bus.stderr
    # The lab's own environment (API keys...) does not leak into the desktop.
    assert secret_name in os.environ and secret_name not in env
    pwd = await desktop.guest.run(["pwd"])
    assert pwd.stdout_text().strip() == home
    # '~/' in argv names the throw-away home.
    echoed = await desktop.guest.run(["echo", "~/x", "~", "a~/b"])
    assert echoed.stdout_text().split() == [f"{home}/x", home, "a~/b"]
    session_dir = desktop.session_dir
    assert session_dir is not None
    # Root's session folder lets the lab user through to its home, but not list it.
    assert session_dir.stat().st_mode & 0o777 == (0o711 if lab_user().dropped else 0o700)
    geometry = await desktop.guest.run(["xdotool", "getdisplaygeometry"])
    assert geometry.stdout_text().split() == ["1280", "800"]
    # The display takes only clients holding the session's cookie.
    stranger = subprocess.run(
        ["xdotool", "getdisplaygeometry"],
        env={"PATH": os.environ["PATH"], "DISPLAY": env["DISPLAY"], "HOME": "/nonexistent"},
        capture_output=True,
        timeout=10,
    )
    assert stranger.returncode != 0


@pytest.mark.desktop
async def test_a_failed_start_is_reported_and_cleaned_up(
    monkeypatch: pytest.MonkeyPatch, session_root: Path
) -> None:
    tmp_path = session_root
    d = LocalDesktop(name="broken", root=tmp_path)
    with pytest.raises(DesktopError, match="stopped; call reset"):
        await d.frame()
    monkeypatch.setattr(local_session, "XVNC", "no-such-xvnc-binary")
    with pytest.raises(DesktopError, match=r"broken.*no-such-xvnc-binary"):
        await d.reset()
    assert d.info().state == "failed"
    # The watchdog and the bus had started before Xvnc failed: all gone now.
    assert list(tmp_path.iterdir()) == []
    monkeypatch.undo()
    await d.reset()
    try:
        assert d.info().state == "running"
        assert d.session_dir is not None and d.session_dir.parent == tmp_path
    finally:
        await d.close()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.desktop
async def test_guest_run_is_bounded(desktop: LocalDesktop) -> None:
    started = time.monotonic()
    with pytest.raises(GuestError, match="timeout"):
        await desktop.guest.run(["sleep", "30"], timeout=0.5)
    assert time.monotonic() - started < 5
    with pytest.raises(GuestError, match="no-such-program"):
        await desktop.guest.run(["no-such-program-xyz"])
    failed = await desktop.guest.run(["sh", "-c", "echo oops >&2; exit 3"])
    assert (failed.returncode, failed.stderr) == (3, b"oops\n")


@pytest.mark.desktop
async def test_guest_files_are_confined_to_home(desktop: LocalDesktop, tmp_path: Path) -> None:
    guest = desktop.guest
    home = Path(guest.home)
    await guest.write_file("~/deep/er/note.txt", b"hello")
    assert (home / "deep/er/note.txt").read_bytes() == b"hello"
    assert await guest.read_file("deep/er/note.txt") == b"hello"
    assert await guest.read_file(str(home / "deep/er/note.txt")) == b"hello"
    assert await guest.exists("~/deep/er")
    assert not await guest.exists("~/nothing-here")
    await guest.write_file("~/deep/er/note.txt", b"hi")  # replaces, no stale tail
    assert await guest.read_file("~/deep/er/note.txt") == b"hi"

    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"secret")
    os.symlink("/etc", home / "etc-link")
    os.symlink(outside, home / "file-link")
    escapes = [
        "../x",
        "~/../x",
        "/etc/passwd",
        str(outside),
        "~/etc-link/passwd",
        "etc-link/hostname",
        "~/file-link",
        "~/deep/../../x",
    ]
    for path in escapes:
        with pytest.raises(GuestError, match="outside") as info:
            await guest.read_file(path)
        assert repr(path) in str(info.value)
        with pytest.raises(GuestError, match="outside"):
            await guest.write_file(path, b"pwned")
        with pytest.raises(GuestError, match="outside"):
            await guest.exists(path)
    assert outside.read_bytes() == b"secret"
    assert not (home.parent / "x").exists()


@pytest.mark.desktop
async def test_read_file_cap_and_odd_files(desktop: LocalDesktop) -> None:
    guest = desktop.guest
    await guest.write_file("~/blob.bin", bytes(range(256)) * 4)
    assert len(await guest.read_file("~/blob.bin", max_bytes=1024)) == 1024
    with pytest.raises(GuestError, match="1024 bytes, over the 1023-byte limit"):
        await guest.read_file("~/blob.bin", max_bytes=1023)
    with pytest.raises(GuestError, match="cannot read"):
        await guest.read_file("~/missing.txt")
    with pytest.raises(GuestError, match="not a regular file"):
        await guest.read_file("~")
    os.mkfifo(Path(guest.home) / "fifo")
    with pytest.raises(GuestError, match="not a regular file"):
        await asyncio.wait_for(guest.read_file("~/fifo"), 5)


@pytest.mark.desktop
async def test_launched_xterm_shows_up_and_takes_input(desktop: LocalDesktop, xterm: str) -> None:
    guest = desktop.guest
    before = await desktop.frame()
    with pytest.raises(DesktopError, match="class 'XTerm'"):
        await wait_window(guest, wm_class="XTerm", timeout=0.3)
    assert await active_window_title(guest) == ""
    await guest.launch([xterm, "-T", "deskloop-xterm", "-geometry", "80x24+10+10"])
    window = await wait_window(guest, wm_class="XTerm", name="deskloop-xterm", timeout=20)
    assert window.isdigit()

    async def title_is_active() -> bool:
        return await active_window_title(guest) == "deskloop-xterm"

    deadline = time.monotonic() + 10
    while not await title_is_active():
        assert time.monotonic() < deadline, "the new xterm never became the active window"
        await asyncio.sleep(0.05)

    async def differs_from(reference: npt.NDArray[np.uint8]) -> bool:
        return bool(np.any((await desktop.frame()).pixels != reference))

    deadline = time.monotonic() + 10
    while not await differs_from(before.pixels):
        assert time.monotonic() < deadline, "the screen never showed the xterm"
        await asyncio.sleep(0.05)

    shown = await desktop.frame()
    await desktop.act(Type("echo deskloop"))
    result = await desktop.settle(timeout=3.0)
    assert result.changed
    assert np.any((await desktop.frame()).pixels != shown.pixels)
    logs = list((desktop.session_dir or Path("/nonexistent")).glob("logs/launch-*-xterm.log"))
    assert len(logs) == 1


@pytest.mark.desktop
async def test_reset_ends_everything_and_gives_a_new_empty_home(
    desktop: LocalDesktop, xterm: str
) -> None:
    guest = desktop.guest
    old_home, old_marker, old_dir = guest.home, desktop.marker, desktop.session_dir
    assert old_marker is not None and old_dir is not None
    await guest.write_file("~/work.txt", b"from the last episode")
    await guest.launch([xterm])
    await guest.launch(["setsid", "sleep", "600"])  # left its process group
    await wait_window(guest, wm_class="XTerm", timeout=20)
    await eventually(lambda: len(pids_with_marker(old_marker)) >= 4, "xvnc, wm, apps running")

    await desktop.reset()

    assert not pids_with_marker(old_marker)
    assert not old_dir.exists()
    assert desktop.marker != old_marker and desktop.guest.home != old_home
    assert not await desktop.guest.exists("~/work.txt")
    assert sorted(os.listdir(desktop.guest.home)) == sorted(
        [".tmp", ".run", ".config", ".cache", ".local"]
    )
    with pytest.raises(DesktopError):
        await wait_window(desktop.guest, wm_class="XTerm", timeout=0.5)
    assert (await desktop.frame()).width == 1280


@pytest.mark.desktop
async def test_close_leaves_nothing_and_is_idempotent(xterm: str) -> None:
    d = LocalDesktop()
    await d.reset()
    marker, session_dir = d.marker, d.session_dir
    assert marker is not None and session_dir is not None
    display = d.info().details["display"]
    await d.guest.launch([xterm])
    await d.guest.launch(["sleep", "600"])
    await wait_window(d.guest, wm_class="XTerm", timeout=20)
    old_guest = d.guest
    await d.close()
    assert not pids_with_marker(marker)
    assert not session_dir.exists()
    # Xvnc got SIGTERM, not SIGKILL: it removed its own lock file.
    assert not Path(f"/tmp/.X{display[1:]}-lock").exists()
    assert d.info().state == "closed" and d.info().vnc is None
    await d.close()
    with pytest.raises(GuestError, match="ended"):
        await old_guest.launch(["sleep", "600"])
    with pytest.raises(GuestError, match="ended"):
        await old_guest.exists("~/x")
    with pytest.raises(DesktopError, match="closed"):
        _ = d.guest
    with pytest.raises(DesktopError, match="closed"):
        await d.frame()


def process_names(pids: list[int]) -> list[str]:
    names = []
    for pid in pids:
        with contextlib.suppress(OSError):
            names.append(Path(f"/proc/{pid}/comm").read_text().strip())
    return names


@pytest.mark.desktop
async def test_gimp_runs_on_the_session_bus_and_leaves_nothing() -> None:
    gimp = shutil.which("gimp")
    assert gimp, "GIMP is needed by the desktop tests: apt-get install gimp"
    d = LocalDesktop()
    await d.reset()
    marker, session_dir = d.marker, d.session_dir
    assert marker is not None and session_dir is not None
    try:
        await d.guest.launch([gimp, "-n", "--no-splash"])
        await wait_window(d.guest, wm_class="Gimp", timeout=90)
        names = process_names(pids_with_marker(marker))
        assert "gimp" in names and "dbus-daemon" in names
        # GIMP found our bus: it did not autolaunch its own (dbus-launch ignores SIGTERM).
        assert "dbus-launch" not in names
    finally:
        await d.close()
    assert not pids_with_marker(marker)
    assert not session_dir.exists()


_CRASHING_OWNER = """
import asyncio, json, sys
from app.desktops.local.desktop import LocalDesktop

async def main() -> None:
    d = LocalDesktop(name="doomed")
    await d.reset()
    await d.guest.launch([sys.argv[1]])
    await d.guest.launch(["setsid", "sleep", "600"])
    print(json.dumps({"marker": d.marker, "dir": str(d.session_dir)}), flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
"""


@pytest.mark.desktop
async def test_nothing_survives_a_sigkilled_owner(xterm: str) -> None:
    owner = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _CRASHING_OWNER,
        xterm,
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert owner.stdout is not None
        line = await asyncio.wait_for(owner.stdout.readline(), 30)
        started = json.loads(line)
        marker, session_dir = started["marker"], Path(started["dir"])
        await eventually(lambda: len(pids_with_marker(marker)) >= 4, "the owner's desktop runs")
        assert session_dir.exists()
    finally:
        owner.send_signal(signal.SIGKILL)
        await owner.wait()
    await eventually(lambda: not pids_with_marker(marker), "every marked process is gone")
    await eventually(lambda: not session_dir.exists(), "the session directory is removed")
