"""The store's calls off the event loop: a write waiting on a lock leaves the loop running,
calls run in order, close waits for them."""

from __future__ import annotations

import asyncio
import functools
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from app.core.errors import StoreError
from app.store import Store
from tests.store.helpers import new_episode

# -- off the loop ------------------------------------------------------------------------


@contextmanager
def write_locked(db: Path) -> Iterator[None]:
    """Another process in the middle of a write: the store's writes wait for it."""
    other = sqlite3.connect(db, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        yield
        other.execute("COMMIT")
    finally:
        other.close()


def question(store: Store, episode: int, text: str) -> Callable[[], int]:
    return functools.partial(
        store.record_message,
        episode,
        role="agent",
        kind="question",
        text=text,
        step=0,
        source="agent",
    )


async def test_a_write_waiting_on_a_lock_leaves_the_loop_running(tmp_path: Path) -> None:
    with Store(tmp_path / "lab.db") as store:
        episode = new_episode(store)
        with write_locked(tmp_path / "lab.db"):
            write = asyncio.ensure_future(store.off_loop(question(store, episode, "a")))
            ticks, until = 0, time.monotonic() + 0.5
            while time.monotonic() < until:
                await asyncio.sleep(0.01)
                ticks += 1
            assert not write.done() and ticks >= 10
        message_id = await write
        assert [m.id for m in store.messages(episode)] == [message_id]


async def test_calls_run_in_order_and_survive_their_awaiter_being_cancelled(
    tmp_path: Path,
) -> None:
    # A runner cancelled (Ctrl-C, a batch's time limit) while its write waits still
    # has that write done, and before the episode's end it records next.
    db = tmp_path / "lab.db"
    with Store(db) as store:
        episode = new_episode(store)
        with write_locked(db):
            first = asyncio.ensure_future(store.off_loop(question(store, episode, "a")))
            await asyncio.sleep(0.1)  # the store's thread runs it: it waits for the lock
            # Handing calls over does not wait for the one running.
            start = time.monotonic()
            calls = [
                asyncio.ensure_future(store.off_loop(question(store, episode, text)))
                for text in "bc"
            ]
            await asyncio.sleep(0.05)
            assert time.monotonic() - start < 1.0 and not first.done()
            calls[0].cancel()
            with pytest.raises(asyncio.CancelledError):
                await calls[0]
        await first
        await calls[1]
        assert [m.text for m in store.messages(episode)] == ["a", "b", "c"]


async def test_close_waits_for_the_calls_handed_over(tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    store = Store(db)
    episode = new_episode(store)
    other = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    try:
        other.execute("BEGIN IMMEDIATE")
        write = asyncio.ensure_future(store.off_loop(question(store, episode, "kept")))
        await asyncio.sleep(0.05)
        release = threading.Timer(0.3, other.execute, ["COMMIT"])
        release.start()
        store.close()  # blocks until the write, waiting on the lock, is done
        release.join()
    finally:
        other.close()
    await write
    with pytest.raises(StoreError, match="closed"):
        await store.off_loop(question(store, episode, "too late"))
    with Store(db) as again:
        assert [m.text for m in again.messages(episode)] == ["kept"]
