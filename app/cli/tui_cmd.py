"""`deskloop tui` (also plain `deskloop`): the terminal UI."""

from __future__ import annotations

import argparse
from typing import Any

SCREENS = ("tasks", "desktops", "live", "episodes", "results")


def cmd_tui(args: argparse.Namespace) -> int:
    from app.ui.app import DeskLoopApp

    app = DeskLoopApp(
        db=args.db,
        tasks_dir=args.tasks_dir,
        backend=getattr(args, "backend", "local"),
        start_mode=getattr(args, "screen", "tasks"),
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
    tui.set_defaults(func=cmd_tui)
