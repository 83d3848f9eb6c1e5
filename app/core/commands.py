"""The result of one command run in a desktop's guest session."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: bytes
    stderr: bytes

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def stdout_text(self) -> str:
        return self.stdout.decode("utf-8", "replace")
