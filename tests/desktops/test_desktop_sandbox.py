"""The local desktop is a sandbox: its programs run as the lab user and can write only
in its home (app/desktops/local/lab_user.py, app/desktops/local/sandbox.py).

Real Xvnc, real bubblewrap, real programs: what is proven is what the operating
system refuses them.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.agents.factory import make_agent
from app.checks.base import Probe
from app.core.errors import DesktopError, GuestError
from app.core.procfs import all_pids, process_environ
from app.desktops.local import lab_user as lab_user_module
from app.desktops.local import reaper
from app.desktops.local.desktop import LocalDesktop
from app.desktops.local.lab_user import lab_user
from app.episode.runner import EpisodeRunner
from app.probes import gather_probe
from app.store import Store
from app.tasks.loader import load_task
from app.users.simulated import SimulatedUser

ROOT = Path(__file__).resolve().parents[2]
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="privileges are dropped only by root")


@pytest.fixture
async def desktop() -> AsyncIterator[LocalDesktop]:
    async with LocalDesktop(name="sandbox") as d:
        yield d


def _uid_of(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("Uid:"):
                return int(line.split()[1])
    raise AssertionError(f"no Uid line for {pid}")


def _comm(pid: int) -> str:
    with open(f"/proc/{pid}/comm") as comm:
        return comm.read().strip()


async def _wait_for_file(desktop: LocalDesktop, path: str, timeout: float = 20.0) -> None:
    async with asyncio.timeout(timeout):
        while not await desktop.guest.exists(path):
            await asyncio.sleep(0.05)


@pytest.mark.desktop
async def test_every_desktop_process_runs_as_the_lab_user(desktop: LocalDesktop) -> None:
    await desktop.guest.launch(["xterm"])
    marked = [p for p in all_pids() if process_environ(p).get(reaper.MARKER_ENV) == desktop.marker]
    names = {_comm(p) for p in marked}
    assert {"Xvnc", "openbox", "dbus-daemon", "xterm"} <= names, names
    user = lab_user()
    # The exec tracers (app.desktops.local.exec_trace) stay DeskLoop's user, outside the
    # sandbox, so nothing in the desktop can stop them; what they run is the lab user's.
    tracers = [p for p in marked if _comm(p) == "strace"]
    assert tracers and {_uid_of(p) for p in tracers} == {os.geteuid()}
    programs = [p for p in marked if p not in tracers]
    assert {p: _uid_of(p) for p in programs} == {p: user.uid for p in programs}
    if os.geteuid() == 0:
        assert user.dropped and user.uid != 0
    # The home and what DeskLoop writes into it belong to that user.
    home = Path(desktop.guest.home)
    await desktop.guest.write_file("~/Desktop/new/upload.txt", b"x")
    for path in (home, home / "Desktop", home / "Desktop/new", home / "Desktop/new/upload.txt"):
        assert path.stat().st_uid == user.uid, path
    appended = await desktop.guest.run(["sh", "-c", "echo more >> ~/Desktop/new/upload.txt"])
    assert appended.ok, appended.stderr


@pytest.mark.desktop
async def test_a_launch_cannot_read_shadow_or_write_outside_the_home(
    desktop: LocalDesktop,
) -> None:
    tag = uuid.uuid4().hex
    session_dir = desktop.session_dir
    assert session_dir is not None
    outside = [
        f"/etc/{tag}",
        f"/root/{tag}",
        f"/tmp/{tag}",
        f"/var/tmp/{tag}",
        f"/dev/shm/{tag}",
        f"/dev/{tag}",
        f"{session_dir}/{tag}",
        f"{session_dir}/logs/{tag}",
        f"{ROOT}/{tag}",
    ]
    # The error file first: a redirection that fails stops the ones after it.
    writes = "; ".join(f"echo pwned 2>> ~/write-errors.txt > {p}" for p in outside)
    script = (
        f"cat /etc/shadow > ~/out.txt 2> ~/err.txt; {writes}; "
        f"ln /etc/passwd ~/hardlink 2> ~/link-error.txt; "
        f"cat {session_dir}/vncpasswd > /dev/null 2> ~/vncpasswd-error.txt; "
        "echo finished > ~/done.txt"
    )
    await desktop.guest.launch(["sh", "-c", script])
    await _wait_for_file(desktop, "~/done.txt")
    assert await desktop.guest.read_file("~/out.txt") == b""
    assert b"Permission denied" in await desktop.guest.read_file("~/err.txt")
    errors = (await desktop.guest.read_file("~/write-errors.txt")).decode()
    # /tmp, /var/tmp and /dev/shm are the program's own empty tmpfs: the writes
    # succeed there and reach nothing outside. Everything else is refused.
    for path in outside:
        assert not Path(path).exists(), f"{path} was written from the desktop"
        if not path.startswith(("/tmp/", "/var/tmp/", "/dev/shm/")):
            assert path in errors, f"no refusal for {path}: {errors}"
    assert "Read-only file system" in errors
    # No hard link out of the home; the VNC password is Xvnc's alone.
    assert not await desktop.guest.exists("~/hardlink")
    assert b"Invalid cross-device link" in await desktop.guest.read_file("~/link-error.txt")
    assert await desktop.guest.read_file("~/vncpasswd-error.txt") != b""


@pytest.mark.desktop
async def test_a_write_through_a_folder_swapped_for_a_symlink_is_refused(
    desktop: LocalDesktop, tmp_path: Path
) -> None:
    guest = desktop.guest
    await guest.write_file("~/box/keep.txt", b"x")
    real = guest.resolve("~/box/sub/new.txt")
    # What the desktop could do between DeskLoop's check and its write.
    os.rename(Path(guest.home) / "box", Path(guest.home) / "box-old")
    os.symlink(tmp_path, Path(guest.home) / "box")
    with pytest.raises(GuestError, match=r"cannot write '~/box/sub/new\.txt'"):
        await asyncio.to_thread(guest._write, "~/box/sub/new.txt", real, b"pwned")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.desktop
async def test_the_stat_probe_reads_only_inside_the_home(desktop: LocalDesktop) -> None:
    os.symlink("/etc/hostname", Path(desktop.guest.home) / "hostname-link")
    for path in ("/etc/hostname", "~/hostname-link", "~/../../etc/hostname"):
        result = await gather_probe(desktop.guest, Probe("stat", path))
        assert result.data is None, path
        assert result.error is not None and repr(path) in result.error, result.error
        assert "outside the desktop home" in result.error


@pytest.mark.desktop
async def test_an_episode_whose_launch_reads_shadow_is_recorded_with_the_reason(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "tasks" / "gimp"
    folder.mkdir(parents=True)
    (folder / "steal-shadow.yaml").write_text(
        "id: steal-shadow\n"
        "app: gimp\n"
        "level: L1\n"
        "title: Read the shadow file\n"
        "instruction: Nothing to do.\n"
        "setup:\n"
        "  - launch: [cat, /etc/shadow]\n"
        "budget: {steps: 5, seconds: 60}\n"
        "evaluate:\n"
        "  all:\n"
        "    - {check: file_exists, path: ~/x.txt}\n"
    )
    task = load_task(folder / "steal-shadow.yaml")
    with Store(tmp_path / "db.sqlite") as store:
        async with LocalDesktop() as desktop:
            runner = EpisodeRunner(
                task, desktop, make_agent("null", task), SimulatedUser(), store, backend="local"
            )
            result = await runner.run()
        assert result.status == "error" and result.passed is not True
        stored = store.get_episode(result.episode_id)
        assert stored.status == "error" and stored.error is not None
        assert "setup[0]" in stored.error and "/etc/shadow" in stored.error
        assert "Permission denied" in stored.error
        assert result.steps == 0


@as_root
async def test_root_without_the_lab_user_is_told_to_run_setup(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lab_user_module, "LAB_USER", "deskloop-no-such-user")
    d = LocalDesktop(name="userless")
    with pytest.raises(DesktopError, match=r"'deskloop-no-such-user'.*scripts/setup\.sh"):
        await d.reset()
    assert d.info().state == "failed"


@as_root
@pytest.mark.desktop
async def test_a_session_root_the_lab_user_cannot_enter_is_named(tmp_path: Path) -> None:
    # pytest's tmp_path lies under root's private /tmp/pytest-of-root.
    d = LocalDesktop(name="unreachable", root=tmp_path)
    with pytest.raises(DesktopError, match="cannot enter /tmp/pytest-of-root"):
        await d.reset()
    assert d.info().state == "failed"
    assert list(tmp_path.iterdir()) == []
