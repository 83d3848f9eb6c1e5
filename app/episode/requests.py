"""Requests to a running episode from another process, followed by its runner.

A participant's trial runs in the participant's own process (`deskloop study run`);
the researcher's TUI, in another, asks it to pause, resume or abort by writing a
request to the store (`app.store.requests`). `follow_requests` reads the episode's
new requests every `POLL_SECONDS` and hands each, once and in order, to the
episode's `EpisodeControl`, as the TUI's own keys do for an episode it runs itself:
a pause stops the agent at its next step boundary, an abort ends the episode at once
(also while the agent is still deciding).

SQLite tells no one of a new row, so the runner asks: a read of one small table a
second, off the loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from app.core.errors import StoreError
from app.episode.control import EpisodeControl
from app.store import Store

POLL_SECONDS = 1.0
"""How often the runner reads its episode's requests (the longest a request waits)."""

log = logging.getLogger(__name__)


async def follow_requests(
    store: Store,
    episode_id: int,
    control: EpisodeControl,
    say: Callable[[str], None],
) -> None:
    """Apply the episode's requests to `control` as they come; runs until cancelled.
    Each one is said (`say`): the episode's progress shows who paused it."""
    seen = -1
    while True:
        await asyncio.sleep(POLL_SECONDS)
        try:
            requests = await store.off_loop(store.episode_requests, episode_id, seen)
        except StoreError:
            # A busy database: the request is read on the next round.
            log.debug("episode %s: cannot read its requests", episode_id, exc_info=True)
            continue
        for idx, request in requests:
            seen = idx
            say(f"{request} requested from outside the episode (the researcher)")
            if request == "pause":
                control.pause()
            elif request == "resume":
                control.resume()
            else:
                control.abort()
