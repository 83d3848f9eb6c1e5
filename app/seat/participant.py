"""`deskloop study run STUDY --participant P07`'s session: the participant view served
on 127.0.0.1 while the participant's session runs from wherever it stopped."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from pathlib import Path

from app.core.settings import read_settings
from app.episode.control import RunOptions
from app.seat.seat import BrowserSeat
from app.seat.server import LoopbackServer
from app.seat.web import seat_app
from app.store import Store
from app.studies.model import Study
from app.studies.pilot import DesktopsBySpec
from app.studies.session import SessionReport, run_session
from app.tasks.model import Task

DEFAULT_NOVNC_DIR = Path("/usr/share/novnc")
END_SEEN_SECONDS = 10.0
"""How long the view stays up after the session, for the page to show its end."""


def novnc_dir() -> Path:
    """Where noVNC's ES modules are: $DESKLOOP_NOVNC_DIR, else Debian's folder."""
    return read_settings().novnc_dir or DEFAULT_NOVNC_DIR


def novnc_problem(folder: Path) -> str | None:
    """Why the view cannot show a desktop from `folder`, or None."""
    if not (folder / "core" / "rfb.js").is_file():
        return f"noVNC is not installed in {folder} (Debian: apt-get install novnc)"
    return None


async def run_participant(
    store: Store,
    study: Study,
    code: str,
    *,
    tasks: Mapping[str, Task],
    backend: str,
    seed: int,
    announce: Callable[[str], None],
    progress: Callable[[str], None] = lambda _: None,
    seat: BrowserSeat | None = None,
    options: RunOptions | None = None,
) -> SessionReport:
    """Serve the participant view, tell `announce` its first address, and run the
    session of `code` in it to its end; the view closes when the session does (also
    when it is cancelled: the session resumes on the next run)."""
    seat = seat or BrowserSeat()
    server = LoopbackServer(seat_app(seat, novnc_dir()))
    # One desktop per kind the tasks need, reset by each trial: a participant does not
    # wait for a VM to boot before every trial.
    desktops = DesktopsBySpec()
    await server.start()
    try:
        announce(server.url)
        report = await run_session(
            store, study, code, seat, tasks=tasks, backend=backend, options=options,
            desktop_for=lambda task: desktops.lend(backend, task), progress=progress,
            seed=seed,
        )  # fmt: skip
        if report.consented:
            seat.end()
        end = seat.view.page.number
        # Give the page a moment to show its last words before the server goes.
        try:
            async with asyncio.timeout(END_SEEN_SECONDS):
                while seat.view.served < end:
                    await seat.view.wait_served()
        except TimeoutError:
            pass
        return report
    finally:
        await server.close()
        await desktops.close()
