"""Integrity flags: evidence that an episode's final state may not have come through
the GUI. A flag never changes a score; it is recorded beside it, with the
evidence a person needs to judge it, and reports show success with and without the
flagged episodes.

It lives on the ground floor because the store records flags and may import nothing
else; what raises them is `app.episode.integrity`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, cast, get_args

FlagKind = Literal["process", "console", "file_writer", "secret_typed"]
"""What a flag is about: a program the task's app does not start ran in the desktop
(a terminal, a shell, an interpreter, ImageMagick, `blender --python`); an app's
scripting console was open; a checked file was last written by a program that is not
the task's app; the agent typed a value the task marks secret."""

FLAG_KINDS: tuple[str, ...] = get_args(FlagKind)
ORACLE_INFO = "oracle"
"""The key of a step's `agent_info` that lists the programs an agent ran in the guest
outside the GUI before that step (a scripted oracle), each as its command line."""


@dataclass(frozen=True)
class IntegrityFlag:
    """One reason to doubt that the final state came through the GUI."""

    kind: FlagKind
    summary: str
    """One line for people: `xterm ran (started 12.3 s into the episode)`."""
    evidence: tuple[str, ...] = ()
    """What was seen, line by line: the command lines, the window titles, the step."""

    def to_raw(self) -> dict[str, Any]:
        return {"kind": self.kind, "summary": self.summary, "evidence": list(self.evidence)}

    @classmethod
    def from_raw(cls, raw: dict[str, Any]) -> IntegrityFlag:
        kind = raw.get("kind")
        if kind not in FLAG_KINDS:
            raise ValueError(f"integrity flag kind must be one of {FLAG_KINDS}, got {kind!r}")
        return cls(
            kind=cast(FlagKind, kind),
            summary=str(raw.get("summary", "")),
            evidence=tuple(str(line) for line in raw.get("evidence", ())),
        )


@dataclass(frozen=True)
class ExecRecord:
    """One program a desktop's process started (a successful execve), as traced."""

    time: float
    """Wall-clock seconds (Unix time) of the exec."""
    pid: int
    path: str
    """The executable the kernel ran."""
    argv: tuple[str, ...]
    ppid: int | None = None
    """The process that started it, where the backend saw (None: it did not)."""

    def describe(self) -> str:
        args = " ".join(self.argv)
        return f"pid {self.pid}: {self.path} ({args[:300]}{'…' if len(args) > 300 else ''})"


@dataclass(frozen=True)
class ExecLog:
    """What a desktop can say about the programs started in it."""

    records: tuple[ExecRecord, ...]
    covered: bool
    """False when the backend could not watch (then `note` says why)."""
    note: str
    """How the programs were watched, or why they were not, for people."""


@dataclass(frozen=True)
class WindowLog:
    """What a desktop can say about the windows opened in it."""

    records: tuple[tuple[float, str], ...]
    """(Unix time the window appeared, its title then), in order."""
    covered: bool
    """False when the backend could not watch (then `note` says why)."""
    note: str


@dataclass(frozen=True)
class LastWrite:
    """Who last wrote a file during a desktop's session, as far as it can tell."""

    time: float
    pid: int
    program: ExecRecord | None
    """The writer's program (its last exec before the write); None when the pid is
    not one of the desktop's traced programs (DeskLoop's own uploads, say)."""
