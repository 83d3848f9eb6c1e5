"""Helpers shared by the command modules: tables, errors, running coroutines."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def print_err(text: str) -> None:
    print(text, file=sys.stderr)


def indent_block(text: str, prefix: str) -> str:
    """Multi-line text with continuation lines aligned under the first."""
    lines = text.strip().splitlines() or [""]
    return lines[0] + "".join("\n" + prefix + line for line in lines[1:])


def table(headers: list[str], rows: list[list[str]]) -> None:
    if not rows:
        print("(none)")
        return
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro`; SIGINT/SIGTERM cancel it so episodes are recorded as aborted
    and desktops are closed (SIGKILL is covered by the reaper and store recovery)."""

    async def main() -> T:
        current = asyncio.current_task()
        assert current is not None
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, current.cancel)
        return await coro

    try:
        return asyncio.run(main())
    except asyncio.CancelledError:
        print_err("interrupted: the episode was recorded as aborted")
        raise SystemExit(130) from None
