"""What the Desktops screen writes: its rows, states, saved states and VNC lines (no
state of the screen's own)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from rich.markup import escape
from rich.text import Text

from app.desktops.inventory import SavedState
from app.rfb.client import VncEndpoint
from app.ui.services.desktops import viewer_command


@dataclass(frozen=True)
class Row:
    key: str
    cells: tuple[str | Text, ...]


def state_text(state: str) -> Text:
    color = {"running": "green", "failed": "red", "unreachable": "red"}.get(state, "yellow")
    return Text(state, color)


def describe_state(state: SavedState) -> str:
    """A saved start state, for the restore picker."""
    if state.key == "boot":
        what = "boot: the desktop just after a cold boot"
    elif state.key.startswith("tui-"):
        what = f"{state.key}: a snapshot taken in the TUI"
    elif len(state.key) == 20 and all(c in "0123456789abcdef" for c in state.key):
        what = f"{state.key}: a task's start state (made by a run)"
    else:
        what = f"{state.key}: a snapshot (deskloop vm snapshot)"
    if state.saved is not None:
        what += time.strftime(" · saved %Y-%m-%d %H:%M", time.localtime(state.saved))
    return what


def address(vnc: VncEndpoint | None) -> str:
    return f"{vnc.host}:{vnc.port}" if vnc else "—"


def vnc_lines(vnc: VncEndpoint | None) -> list[str]:
    if vnc is None:
        return []
    lines = [
        f"VNC: {vnc.host}:{vnc.port} (display ::{vnc.port}) · password: {escape(vnc.password)}"
    ]
    if viewer_command() is None:
        lines.append(
            "[dim]no vncviewer installed: o serves noVNC for a browser, or use the address "
            "and password above[/dim]"
        )
    return lines
