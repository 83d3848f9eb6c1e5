"""The participant view around a session: `deskloop study run`'s (`run_participant`,
a study participant's whole session) and `deskloop run --user person --view
browser`'s (`run_in_view`, single episodes with a person as the user). The view is
served on 127.0.0.1 while they run, and closed when they end or are cancelled."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path

from app.core.settings import read_settings
from app.episode.control import RunOptions
from app.episode.events import EpisodeResult
from app.episode.launch import Episode
from app.seat.seat import BrowserSeat
from app.seat.server import LoopbackServer
from app.seat.web import seat_app
from app.store import Store
from app.studies.model import Policy, Study
from app.studies.session import SessionReport, TrialStart, run_session
from app.tasks.model import Task
from app.users.person import PersonUser

END_SEEN_SECONDS = 10.0
"""How long the view stays up after the session, for the page to show its end."""
SINGLE_EPISODE_POLICY = Policy(may_take_over=True)
"""A person in a single episode may do what the TUI lets them: answer, interrupt,
give feedback, take over; due phases are offered as suggestions."""


def novnc_problem(folder: Path) -> str | None:
    """Why the view cannot show a desktop from `folder`, or None."""
    if not (folder / "core" / "rfb.js").is_file():
        return f"noVNC is not installed in {folder} (Debian: apt-get install novnc)"
    return None


@contextlib.asynccontextmanager
async def serving(seat: BrowserSeat, announce: Callable[[str], None]) -> AsyncIterator[None]:
    """The view of `seat` on 127.0.0.1 while the block runs; `announce` is told its
    first address. A block that ends normally leaves the page its last words for a
    moment (`seat.end()` shown, until the browser has fetched it)."""
    server = LoopbackServer(seat_app(seat, read_settings().novnc_dir))
    await server.start()
    try:
        announce(server.url)
        yield
        if seat.view.page.kind != "end":
            seat.end()
        end = seat.view.page.number
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(END_SEEN_SECONDS):
                while seat.view.served < end:
                    await seat.view.wait_served()
    finally:
        await server.close()


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
    session of `code` in it to its end (also when cancelled, the view closes: the
    session resumes on the next run)."""
    seat = seat or BrowserSeat()
    # The session prepares each trial's desktop while the participant plays the trial
    # before and answers its questionnaires (app.episode.ahead): no wait between trials.
    async with serving(seat, announce):
        return await run_session(
            store, study, code, seat, tasks=tasks, backend=backend, options=options,
            progress=progress, seed=seed,
        )  # fmt: skip


async def run_in_view(
    tasks: Sequence[Task],
    launch_episode: Callable[[Task, PersonUser], Episode],
    *,
    announce: Callable[[str], None],
    seat: BrowserSeat | None = None,
) -> list[EpisodeResult]:
    """Each task's episode in turn with a person in the view as its user: its brief,
    then the live desktop and the conversation. `launch_episode` wires an episode up
    with the person's user; `announce` is told the view's first address."""
    seat = seat or BrowserSeat()
    results = []
    async with serving(seat, announce):
        for position, task in enumerate(tasks):
            episode = launch_episode(task, seat.person())
            start = TrialStart(task, SINGLE_EPISODE_POLICY, alone=False, position=position)
            results.append(await seat.play(start, episode))
    return results
