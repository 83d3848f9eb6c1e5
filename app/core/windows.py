"""The windows a desktop showed: what a failed setup records beside its last frame,
so that a person can see which window came instead of the one a step waited for."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any


@dataclass(frozen=True)
class Window:
    """One top-level window the window manager managed."""

    id: str
    """The X window id, as xprop writes it ('0x400007')."""
    title: str
    wm_class: str
    """WM_CLASS's class part ('XTerm', 'Gimp'), what a `wait_window` class matches."""
    pid: int | None = None
    """The owning process (_NET_WM_PID), when the window says."""

    def describe(self) -> str:
        pid = f" pid {self.pid}" if self.pid is not None else ""
        return f"{self.wm_class or '?'} {self.title!r} ({self.id}{pid})"


@dataclass(frozen=True)
class WindowList:
    """The windows open at one moment (`seen_at`, wall-clock seconds)."""

    windows: tuple[Window, ...]
    seen_at: float

    def describe(self) -> list[str]:
        """A heading and one line per window, for people (CLI, TUI)."""
        when = datetime.fromtimestamp(self.seen_at, UTC).isoformat(timespec="seconds")
        if not self.windows:
            return [f"no windows were open (seen {when})"]
        return [f"windows open (seen {when}):", *(f"  {w.describe()}" for w in self.windows)]

    def to_raw(self) -> dict[str, Any]:
        """The JSON the store keeps."""
        return {
            "seen_at": self.seen_at,
            "windows": [
                {"id": w.id, "title": w.title, "class": w.wm_class, "pid": w.pid}
                for w in self.windows
            ],
        }

    @classmethod
    def from_raw(cls, raw: dict[str, Any]) -> WindowList:
        return cls(
            tuple(
                Window(str(w["id"]), str(w["title"]), str(w["class"]), w.get("pid"))
                for w in raw["windows"]
            ),
            float(raw["seen_at"]),
        )
