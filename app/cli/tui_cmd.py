"""`deskloop tui` (also plain `deskloop`): the terminal UI."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from app.core.settings import GRAPHICS_CHOICES

SCREENS = ("tasks", "desktops", "live", "episodes", "results", "author", "studies")


def cmd_tui(args: argparse.Namespace) -> int:
    from app.ui.app import DeskLoopApp
    from app.ui.graphics import choose_graphics

    # Before the app starts: auto asks the terminal, and Textual's input thread would
    # take the answers once it runs.
    graphics = choose_graphics(getattr(args, "graphics", None))
    app = DeskLoopApp(
        db=args.db,
        tasks_dir=args.tasks_dir,
        studies_dir=getattr(args, "studies_dir", "studies"),
        backend=getattr(args, "backend", "local"),
        start_mode=getattr(args, "screen", "tasks"),
        graphics=graphics,
    )
    app.run()
    return 0


def register(sub: Any) -> None:
    tui = sub.add_parser(
        "tui",
        help="open the terminal UI (also what plain `deskloop` does)",
        description="The lab in a terminal: desktops, tasks, a live episode with a person "
        "in the loop, recorded episodes and results. Press ? on any screen for help.",
    )
    from app.desktops.factory import BACKENDS

    tui.add_argument(
        "--backend", choices=list(BACKENDS), default="local", help="where desktops come from"
    )
    tui.add_argument("--screen", choices=SCREENS, default="tasks", help="screen to open first")
    tui.add_argument(
        "--studies-dir",
        type=Path,
        default=Path("studies"),
        help="where the Studies screen finds study files (default: studies)",
    )
    tui.add_argument(
        "--graphics",
        choices=GRAPHICS_CHOICES,
        default=None,
        help="how the Live screen draws the desktop: kitty or sixel images, or half blocks "
        "(default: $DESKLOOP_GRAPHICS, else auto: ask the terminal; half blocks in tmux)",
    )
    tui.set_defaults(func=cmd_tui)
