"""Helpers shared by the command modules: tables, errors, running coroutines."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from app.core.tables import print_table

T = TypeVar("T")


def print_err(text: str) -> None:
    print(text, file=sys.stderr)


def indent_block(text: str, prefix: str) -> str:
    """Multi-line text with continuation lines aligned under the first."""
    lines = text.strip().splitlines() or [""]
    return lines[0] + "".join("\n" + prefix + line for line in lines[1:])


def table(headers: list[str], rows: list[list[str]]) -> None:
    print_table(headers, rows, empty="(none)")


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

    def fire(self) -> None:
        self.received = True
        for hook in list(self.hooks):
            hook()


INTERRUPT = Interrupt()


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro`; SIGINT/SIGTERM cancel it so episodes are recorded as aborted
    and desktops are closed (SIGKILL is covered by the reaper and store recovery)."""

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
    try:
        result = asyncio.run(main())
    except asyncio.CancelledError:
        cancelled = True
    if cancelled or INTERRUPT.received:
        print_err("interrupted: the episode was recorded as aborted")
        raise SystemExit(130)
    return result
