"""The batch's progress on stderr: slots done, passed, failed, errored, retries, running
tries (and, on Ray, tries waiting for a node's desktop), an ETA and the hosts whose
desktops failed.

On a terminal it is a rich progress bar that stays at the bottom while log lines (the
retries, a host coming back) scroll above it. Elsewhere, as in CI logs, it is one
plain line per change, which tests and log readers can grep.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import TextIO

from rich import progress as rich_progress
from rich.console import Console
from rich.table import Column

_BAR_WIDTH = 24


@dataclass
class Progress:
    """The counts of one run, shown after every change (`show`)."""

    total: int
    already: int = 0
    """Slots finished before this run (a resumed batch)."""
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    passed: int = 0
    failed: int = 0
    errored: int = 0
    retried: int = 0
    running: int = 0
    waiting: int = 0
    """Tries handed to a Ray cluster that no node has started yet (no desktop free)."""
    started: float = field(default_factory=time.monotonic)
    host_failures: dict[str, int] = field(default_factory=dict)
    """Desktops that failed at start-up, by host (a libvirt URI)."""
    _done_here: int = field(default=0, init=False)
    _bar: rich_progress.Progress | None = field(default=None, init=False, repr=False)
    _bar_task: rich_progress.TaskID = field(default=rich_progress.TaskID(0), init=False)

    @property
    def done(self) -> int:
        return self.already + self._done_here

    def finished(self, row_status: str, passed: bool | None) -> None:
        self._done_here += 1
        if row_status == "error":
            self.errored += 1
        elif passed:
            self.passed += 1
        else:
            self.failed += 1
        self.show()

    def retry(self) -> None:
        self.retried += 1
        self.show()

    def host_failed(self, host: str) -> None:
        self.host_failures[host] = self.host_failures.get(host, 0) + 1
        self.show()

    def eta(self) -> str:
        remaining = self.total - self.done
        if remaining <= 0:
            return "0s"
        if not self._done_here:
            return "?"
        seconds = (time.monotonic() - self.started) / self._done_here * remaining
        return _duration(seconds)

    def counts(self) -> str:
        """Everything but the bar: `4/8 done · 2 passed · ... · ETA 36s`."""
        return (
            f"{self.done}/{self.total} done · {self.passed} passed · "
            f"{self.failed} failed · {self.errored} errored · {self.retried} retried · "
            f"{self.running} running · "
            + (f"{self.waiting} waiting for a desktop · " if self.waiting else "")
            + f"ETA {self.eta()}"
        ) + "".join(f" · host {host} failed {count}×" for host, count in self.host_failures.items())

    def line(self) -> str:
        """The plain line printed where the stream is not a terminal."""
        filled = round(_BAR_WIDTH * self.done / self.total) if self.total else _BAR_WIDTH
        return f"[{'#' * filled}{'-' * (_BAR_WIDTH - filled)}] {self.counts()}"

    def show(self) -> None:
        if not self.stream.isatty():
            self.stream.write(self.line() + "\n")
            self.stream.flush()
            return
        if self._bar is None:
            self._bar = rich_progress.Progress(
                rich_progress.BarColumn(bar_width=_BAR_WIDTH),
                # Host URIs are text, not rich markup. On a narrow terminal the
                # counts wrap instead of squeezing the bar away.
                rich_progress.TextColumn(
                    "{task.description}", markup=False, table_column=Column(no_wrap=False)
                ),
                console=Console(file=self.stream),
                # Redrawn on every change, not by a timer: the counts change only then.
                auto_refresh=False,
            )
            self._bar_task = self._bar.add_task("", total=self.total)
            # Also takes over sys.stdout and sys.stderr, so log lines print above the bar.
            self._bar.start()
        self._bar.update(
            self._bar_task, completed=self.done, description=self.counts(), refresh=True
        )

    def close(self) -> None:
        """Leave the bar's last state on the terminal and give the streams back."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"
