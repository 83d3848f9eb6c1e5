"""The lifecycle both backends share (app/desktops/lifecycle.py) and the capabilities a
desktop is asked for by type (app/desktops/base.py), with no desktop started."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from app.core.errors import DesktopError
from app.desktops.base import MarksProcesses, SavesStartStates, SavesStates
from app.desktops.libvirt import LibvirtConfig, LibvirtDesktop
from app.desktops.lifecycle import DesktopLifecycle
from app.desktops.local.desktop import LocalDesktop
from app.ui.services.desktops import DesktopPool


class Recorded(DesktopLifecycle):
    """A backend that only records its lifecycle; its reset can be held open."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []
        self.hold = asyncio.Event()
        self.hold.set()

    async def _reset(self) -> None:
        self.calls.append("reset")
        await self.hold.wait()
        self._state = "running"

    async def _close(self) -> None:
        self.calls.append("close")
        self._state = "closed"


async def test_async_with_resets_and_closes_even_when_the_block_fails() -> None:
    desktop = Recorded()
    with pytest.raises(RuntimeError):
        async with desktop as entered:
            assert entered is desktop
            assert desktop.calls == ["reset"]
            raise RuntimeError("the episode failed")
    assert desktop.calls == ["reset", "close"]
    assert desktop._state == "closed"


async def test_a_close_waits_for_a_reset_in_progress() -> None:
    desktop = Recorded()
    desktop.hold.clear()
    reset = asyncio.create_task(desktop.reset())
    await asyncio.sleep(0)
    close = asyncio.create_task(desktop.close())
    await asyncio.sleep(0.05)
    assert desktop.calls == ["reset"], "the close ran while the reset held the lock"
    desktop.hold.set()
    await asyncio.gather(reset, close)
    assert desktop.calls == ["reset", "close"]


def test_the_capabilities_are_told_by_type(tmp_path: Path) -> None:
    local = LocalDesktop(name="cap-local")
    vm = LibvirtDesktop(name="cap-vm", config=LibvirtConfig(uri="qemu:///system", cache=tmp_path))
    assert isinstance(local, DesktopLifecycle) and isinstance(vm, DesktopLifecycle)
    assert isinstance(vm, SavesStates) and isinstance(vm, SavesStartStates)
    assert not isinstance(local, SavesStates) and not isinstance(local, SavesStartStates)
    assert isinstance(local, MarksProcesses) and local.marker is None
    assert not isinstance(vm, MarksProcesses)


async def test_a_local_desktop_says_it_has_no_snapshots() -> None:
    pool = DesktopPool("local")
    entry = pool._add(LocalDesktop(name="cap-pool"))
    name = entry.info().name
    limitation = pool.cannot_snapshot(name)
    assert limitation is not None and "no snapshots" in limitation
    with pytest.raises(DesktopError, match="cannot take snapshots"):
        await pool.snapshot(name)
    with pytest.raises(DesktopError, match="no snapshot of cap-pool"):
        await pool.restore(name)
