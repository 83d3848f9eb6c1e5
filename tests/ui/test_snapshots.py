"""Snapshots of the main screens at 160×50, 100×30 and 80×24 (pytest-textual-snapshot).

Everything shown is fixed: a recorded database with fixed times and frames, task
files written by the test, relative paths, UTC, a fixed listing of libvirt desktops.
After an intended change of the look, review the diff and update with
`pytest tests/ui/test_snapshots.py --snapshot-update`.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot

from app.ui.app import DeskLoopApp
from tests.ui.helpers import LISTING, fixture_db, wait_until, write_tasks

SnapCompare = Callable[..., bool]

BIG = (160, 50)
SMALL = (100, 30)
TINY = (80, 24)
"""The smallest terminal the TUI is laid out for: the footer keeps `q Quit`."""
SIZES = [BIG, SMALL, TINY]
SIZE_IDS = ["160x50", "100x30", "80x24"]


@pytest.fixture
def lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], DeskLoopApp]]:
    monkeypatch.chdir(tmp_path)
    # Whether a VNC viewer is installed changes the Desktops screen's detail pane.
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    fixture_db(Path("sessions") / "deskloop.db")
    write_tasks(Path("tasks"))

    def make(start: str) -> DeskLoopApp:
        return DeskLoopApp(
            db=Path("sessions/deskloop.db"),
            tasks_dir=Path("tasks"),
            start_mode=start,
            libvirt_listing=lambda: LISTING,
        )

    yield make
    monkeypatch.delenv("TZ")
    time.tzset()


async def loaded(pilot: Pilot[None]) -> None:
    """Until the screen has read the store (Episodes, Replay and Results read it in a thread)."""
    from app.ui.screens.episodes import EpisodesScreen
    from app.ui.screens.replay import ReplayScreen
    from app.ui.screens.results import ResultsScreen

    app = pilot.app
    screen = app.screen
    if isinstance(screen, EpisodesScreen):
        await wait_until(pilot, lambda: screen.loaded, 5, "the episodes")
    if isinstance(screen, ResultsScreen):
        await wait_until(pilot, lambda: screen.loaded, 5, "the results")
    if isinstance(screen, ReplayScreen):
        await wait_until(pilot, lambda: bool(screen.rows), 5, "the episode")
    await pilot.pause()


def pressing(*keys: list[str]) -> Callable[[Pilot[None]], Awaitable[None]]:
    """Each group of keys pressed once the screen has read the store."""

    async def run(pilot: Pilot[None]) -> None:
        await loaded(pilot)
        for group in keys:
            await pilot.press(*group)
            await loaded(pilot)

    return run


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
@pytest.mark.parametrize(
    ("start", "keys"),
    [
        ("tasks", [["down", "down", "down"]]),
        ("episodes", []),
        ("episodes", [["down", "down", "enter"], ["right", "right"]]),
        ("results", []),
        ("live", []),
    ],
    ids=["tasks", "episodes", "replay", "results", "live"],
)
def test_screen(
    snap_compare: SnapCompare,
    lab: Callable[[str], DeskLoopApp],
    start: str,
    keys: list[list[str]],
    size: tuple[int, int],
) -> None:
    assert snap_compare(lab(start), run_before=pressing(*keys), terminal_size=size)


async def listed(pilot: Pilot[None]) -> None:
    """Until the libvirt desktops are in the table (the listing runs in a thread)."""
    app = pilot.app
    assert isinstance(app, DeskLoopApp)
    await wait_until(pilot, lambda: app.vms.listing is not None, 5, "the listing")
    await pilot.pause()


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_desktops(
    snap_compare: SnapCompare, lab: Callable[[str], DeskLoopApp], size: tuple[int, int]
) -> None:
    assert snap_compare(lab("desktops"), run_before=listed, terminal_size=size)


def test_desktops_and_help(snap_compare: SnapCompare, lab: Callable[[str], DeskLoopApp]) -> None:
    assert snap_compare(
        lab("desktops"), run_before=listed, press=["question_mark"], terminal_size=SMALL
    )
