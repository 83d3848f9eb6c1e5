"""Progress of an image build inside its long stages, and how it is shown.

A stage (a layer, configure, filesystem) runs several commands; the long ones say how
far they are in their output, which the builder reads as it comes:

- `AptOutput`: apt and dpkg as run by ``mmdebstrap --verbose`` or ``apt-get install``.
  ``N upgraded, M newly installed`` gives the count of a run's packages, then
  ``Get:`` lines count downloads and ``Unpacking`` and ``Setting up`` lines the
  install (one step: apt unpacks and sets up in alternating batches, so each package
  counts twice, as mmdebstrap's own bar does). mmdebstrap's ``I:`` lines name its
  steps between them.
- `QemuImgOutput`: ``qemu-img convert -p`` prints ``(12.34/100%)`` pieces ended by
  a carriage return.

A build reports through a `BuildReport`: stage lines (what `build_image` always
said) and `StepUpdate`s. The base class turns each new step into one more line for the
caller's `progress(text)` callback, so callers without a terminal (tests, the TUI, a
CI log) get one line per step and never a line per package. `LiveReport` shows the
current step as a live rich progress bar instead, for `deskloop image build` on a
terminal.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
)

# What `build_image(progress=...)` has always taken: one line of text per call.
ProgressCallback = Callable[[str], None]


@dataclass(frozen=True)
class StepUpdate:
    """How far one step of a stage is: `done` of `total` (None: not known)."""

    step: str
    """What the step does, e.g. 'installing 240 packages'; a new text is a new step."""
    done: float = 0
    total: float | None = None
    item: str = ""
    """What it is at now ('unpacking libc6'), shown beside a live bar."""


class OutputWatch(Protocol):
    """Reads a command's output as it comes, a line (or a \\r-ended piece) at a time."""

    def feed(self, piece: str) -> StepUpdate | None: ...


class Pieces:
    """Bytes of output → complete lines, split at \\n and at \\r (progress meters
    redraw one line with \\r and never end it)."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._partial = ""

    def feed(self, data: bytes) -> list[str]:
        text = self._partial + self._decoder.decode(data)
        *complete, self._partial = re.split(r"\r\n|\r|\n", text)
        return [piece for piece in complete if piece]

    def end(self) -> list[str]:
        rest, self._partial = self._partial + self._decoder.decode(b"", final=True), ""
        return [rest] if rest else []


_SUMMARY = re.compile(r"^(\d+) upgraded, (\d+) newly installed")
# ``Get:12 URI SUITE/COMPONENT ARCH PACKAGE ARCH VERSION [SIZE]``; package-list
# downloads (``Get:2 URI bookworm/main amd64 Packages [8790 kB]``) have fewer fields.
_GET = re.compile(r"^Get:\d+\s+\S+\s+\S+\s+\S+\s+(?P<package>\S+)\s+\S+\s+\S+\s+\[")
_DPKG = re.compile(r"^(?P<verb>Unpacking|Setting up) (?P<package>[^\s:]+)(?::\S+)? \(")
# mmdebstrap's steps that print no count; the others are counted from apt and dpkg.
_MMDEBSTRAP_STEPS = {
    "I: running apt-get update...": "updating the package lists",
    "I: extracting archives...": "extracting the essential packages",
    "I: creating tarball...": "packing the layer",
}


class AptOutput:
    """Package steps from apt's and dpkg's output (see the module docstring)."""

    def __init__(self) -> None:
        self._total: int | None = None
        self._downloaded = 0
        self._installed = 0  # unpacked plus set up: each package counts twice

    def feed(self, piece: str) -> StepUpdate | None:
        line = piece.strip()
        if line in _MMDEBSTRAP_STEPS:
            return StepUpdate(_MMDEBSTRAP_STEPS[line])
        if summary := _SUMMARY.match(line):
            # A new apt run (mmdebstrap has two): its own count, from zero.
            self._total = int(summary[1]) + int(summary[2])
            self._downloaded = self._installed = 0
            return None
        total = self._total
        if total is None:
            return None  # apt-get update's index downloads come before any count
        if get := _GET.match(line):
            self._downloaded += 1
            done = min(self._downloaded, total)
            return StepUpdate(f"downloading {total} packages", done, total, get["package"])
        if dpkg := _DPKG.match(line):
            # dpkg may set a package up twice; a bar never goes past its end.
            self._installed = min(self._installed + 1, 2 * total)
            verb = "unpacking" if dpkg["verb"] == "Unpacking" else "setting up"
            return StepUpdate(
                f"installing {total} packages",
                self._installed,
                2 * total,
                f"{verb} {dpkg['package']}",
            )
        return None


_PERCENT = re.compile(r"\((\d+(?:\.\d+)?)/100%\)")


class QemuImgOutput:
    """``qemu-img convert -p``'s percentages."""

    def __init__(self, step: str) -> None:
        self._step = step

    def feed(self, piece: str) -> StepUpdate | None:
        found = _PERCENT.search(piece)
        return StepUpdate(self._step, float(found[1]), 100.0) if found else None


class BuildReport:
    """What a build tells its caller, as lines through `say`: the stages' lines and
    one line when a step begins (``[1/4] layer base: unpacking 329 packages``)."""

    def __init__(self, say: ProgressCallback | None = None) -> None:
        self._say = say or (lambda _text: None)
        self._current: tuple[str, str] | None = None

    def line(self, text: str) -> None:
        self._say(text)

    def update(self, stage: str, update: StepUpdate) -> None:
        if (stage, update.step) != self._current:
            self._current = (stage, update.step)
            self.begin(stage, update)
        self.advance(update)

    def begin(self, stage: str, update: StepUpdate) -> None:
        self._say(f"{stage}: {update.step}")

    def advance(self, update: StepUpdate) -> None:
        """Lines say nothing between a step's first and last update."""

    def close(self) -> None:
        self._current = None

    def __enter__(self) -> BuildReport:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class LiveReport(BuildReport):
    """On a terminal: the current step as a live rich bar (packages done of all, the
    package at hand, time), the stage lines printed above it as they come."""

    def __init__(self, say: ProgressCallback | None = None, console: Console | None = None) -> None:
        super().__init__(say)
        # Transient: a finished build leaves its stage lines, not a stack of bars.
        # The bars redirect stdout, so `say` printing there lands above them.
        self._bars = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}", markup=False),
            BarColumn(),
            TaskProgressColumn(),
            TextColumn("{task.fields[item]}", style="dim", markup=False),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self._task: TaskID | None = None

    def begin(self, stage: str, update: StepUpdate) -> None:
        if self._task is None:
            self._bars.start()
        else:
            self._bars.remove_task(self._task)
        self._task = self._bars.add_task(f"{stage}: {update.step}", total=update.total, item="")
        self._bars.refresh()

    def advance(self, update: StepUpdate) -> None:
        if self._task is not None:
            # Drawn at once rather than at the next tick of rich's refresh thread, so a
            # step's last package shows before the next step replaces its bar.
            self._bars.update(
                self._task,
                completed=update.done,
                total=update.total,
                item=update.item,
                refresh=True,
            )

    def close(self) -> None:
        super().close()
        if self._task is not None:  # the bars run from the first step on
            self._bars.remove_task(self._task)
            self._task = None
            self._bars.stop()
