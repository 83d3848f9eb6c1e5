"""Helpers shared by the command modules: tables, errors, running coroutines."""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from app.core.errors import DeskLoopError

if TYPE_CHECKING:
    # Imported where a store is opened: the command line starts without it.
    from app.store import LockWait, Store

T = TypeVar("T")


def print_err(text: str) -> None:
    print(text, file=sys.stderr)


def indent_block(text: str, prefix: str) -> str:
    """Multi-line text with continuation lines aligned under the first."""
    lines = text.strip().splitlines() or [""]
    return lines[0] + "".join("\n" + prefix + line for line in lines[1:])


class Interrupt:
    """What SIGINT/SIGTERM did during a command.

    The first answer to a signal is cancelling the command's task, which records the
    running episode as aborted at once. Python 3.11's `asyncio.wait_for` can swallow
    a cancellation that lands as its inner call finishes, so `hooks` (e.g. an
    `EpisodeControl.abort`) also stop the episode at its next step boundary, and
    the command exits 130 whatever happened to the cancellation.
    """

    def __init__(self) -> None:
        self.received = False
        self.hooks: list[Callable[[], None]] = []
        self.stores: list[Store] = []
        """The stores `open_store` opened: whether one gave up a write while stopping."""

    def fire(self) -> None:
        self.received = True
        for hook in list(self.hooks):
            hook()


INTERRUPT = Interrupt()


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro`; SIGINT/SIGTERM cancel it so episodes are recorded as aborted
    and desktops are closed (SIGKILL is covered by the reaper and store recovery)."""
    import asyncio  # here: commands that run nothing (`tasks list`) start without it

    async def main() -> T:
        current = asyncio.current_task()
        assert current is not None
        loop = asyncio.get_running_loop()

        def on_signal() -> None:
            INTERRUPT.fire()
            current.cancel()

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, on_signal)
        return await coro

    cancelled = False
    failed: DeskLoopError | None = None
    try:
        result = asyncio.run(main())
    except asyncio.CancelledError:
        cancelled = True
    except DeskLoopError as exc:
        if not INTERRUPT.received:
            raise
        failed = exc  # raised while stopping: the episode's end may be unrecorded
    if cancelled or INTERRUPT.received:
        if any(store.gave_up or store.lock_waiting for store in INTERRUPT.stores):
            print_err(
                "interrupted before the episode's end could be recorded: the store stayed "
                "locked by another process; the episode is marked interrupted when the "
                "database is next opened"
            )
        elif failed is not None:
            print_err(f"interrupted; then {failed.title}: {failed}")
        else:
            print_err("interrupted: the episode was recorded as aborted")
        raise SystemExit(130) from failed
    return result


STOP_GRACE_SECONDS = 10.0
"""After Ctrl-C or SIGTERM, how long a write waiting for another process's lock on the
store (the episode's last step, its end) goes on waiting; a second signal stops it at
once. An end that could not be written is recorded when the database is next opened
(the episode is marked interrupted)."""


def report_lock_wait(wait: LockWait) -> None:
    print_err(f"store: {wait.describe()}")


@contextmanager
def open_store(db: Path | str) -> Iterator[Store]:
    """The store at `db` for a command: waits for another process's lock are reported
    on stderr, and SIGINT/SIGTERM bound them (STOP_GRACE_SECONDS, then at once)."""
    from app.store import Store

    with Store(db, on_lock_wait=report_lock_wait) as store:
        signals = 0

        def stop_waiting() -> None:
            nonlocal signals
            signals += 1
            store.stop_waiting(STOP_GRACE_SECONDS if signals == 1 else 0.0)

        INTERRUPT.hooks.append(stop_waiting)
        INTERRUPT.stores.append(store)
        try:
            yield store
        finally:
            INTERRUPT.hooks.remove(stop_waiting)
            INTERRUPT.stores.remove(store)
