"""`deskloop desktops cleanup`, and the same clean-up when a command starts desktops."""

from __future__ import annotations

import argparse
import logging
import threading
from typing import Any

log = logging.getLogger(__name__)

# The commands that start desktops (and `tasks verify`/`audit`, which do): before they
# make new ones, what a crashed run left behind goes, as `desktops cleanup` would.
STARTS_DESKTOPS = frozenset(["run", "demo", "tui", "batch", "human", "author"])
TASKS_STARTING_DESKTOPS = frozenset(["verify", "audit"])
STUDY_STARTING_DESKTOPS = frozenset(["run", "pilot"])


def starts_desktops(args: argparse.Namespace) -> bool:
    command = getattr(args, "command", None)
    if command is None:  # plain `deskloop`: the terminal UI
        return True
    if command == "tasks":
        return getattr(args, "tasks_command", None) in TASKS_STARTING_DESKTOPS
    if command == "study":
        return getattr(args, "study_command", None) in STUDY_STARTING_DESKTOPS
    return command in STARTS_DESKTOPS


def cleanup_in_background() -> threading.Thread:
    """Stop leftover desktop processes of dead DeskLoop runs and remove their folders,
    in a thread, so the command does not wait for it (the interpreter does, at exit).
    A failure is logged, never the command's."""

    def cleanup() -> None:
        from app.desktops.local.desktop import reap_orphans

        try:
            reap_orphans()
        except Exception:  # the command must go on whatever the clean-up met
            log.warning("clean-up of leftover desktops failed", exc_info=True)

    thread = threading.Thread(target=cleanup, name="desktops-cleanup")
    thread.start()
    return thread


def cmd_cleanup(args: argparse.Namespace) -> int:
    from app.desktops.local.desktop import reap_orphans

    killed = reap_orphans()
    if killed:
        print(f"stopped {len(killed)} leftover desktop process(es)")
    else:
        print("no leftover desktop processes")
    return 0


def register(sub: Any) -> None:
    desktops = sub.add_parser("desktops", help="manage desktops")
    dsub = desktops.add_subparsers(dest="desktops_command", metavar="ACTION", required=True)
    dc = dsub.add_parser(
        "cleanup",
        help="stop desktop processes left by a crashed DeskLoop and remove their folders "
        "(also done when a command starts desktops)",
    )
    dc.set_defaults(func=cmd_cleanup)
