"""The `deskloop` command line.

Each command group lives in its own module with a `register(subparsers)` function;
this module assembles them. Every subcommand explains itself with --help. Errors
the lab raises on purpose (`DeskLoopError`) are printed as one readable block and
exit with status 2; a run whose task did not pass exits 1.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from app import __version__
from app.cli import (
    author_cmd,
    batch_cmd,
    desktops_cmd,
    episodes_cmd,
    human_cmd,
    run_cmd,
    score_cmd,
    study_cmd,
    tasks_cmd,
    tui_cmd,
    vm_cmd,
)
from app.cli.common import print_err
from app.core.errors import DeskLoopError
from app.core.settings import read_settings

DEFAULT_DB = Path("sessions") / "deskloop.db"

EPILOG = """\
examples:
  deskloop                                       open the terminal UI (same as `deskloop tui`)
  deskloop demo                                  run the GIMP demo tasks, print scores
  deskloop run gimp-flip-export --agent reference
  deskloop run gimp-flip-export --agent null --json
  deskloop tasks validate tasks/                 check every task file
  deskloop episodes list                         what was recorded
  deskloop episodes show 3                       one episode: steps, messages, checks
  deskloop author record --app gimp --assets photo.png --id photo-l3
                                                 record a demonstration to draft a task from
"""

COMMAND_MODULES = (
    run_cmd,
    tasks_cmd,
    episodes_cmd,
    score_cmd,
    desktops_cmd,
    tui_cmd,
    batch_cmd,
    human_cmd,
    author_cmd,
    study_cmd,
    vm_cmd,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="deskloop",
        description="DeskLoop: run and record agents on real GIMP/Blender/Kdenlive desktops.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"deskloop {__version__}")
    parser.add_argument(
        "--db",
        type=Path,
        default=read_settings().db or DEFAULT_DB,
        help="episode database (default: sessions/deskloop.db, or $DESKLOOP_DB)",
    )
    parser.add_argument(
        "--tasks-dir",
        type=Path,
        default=tasks_cmd.DEFAULT_TASKS,
        help="task library folder for looking up task ids (default: tasks)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        # No command: open the terminal UI (the lab's front door).
        args.func = tui_cmd.cmd_tui
    if desktops_cmd.starts_desktops(args):
        desktops_cmd.cleanup_in_background()
    try:
        code: int = args.func(args)
        # Inside the try: a reader that went away is noticed here, not in the flush at
        # exit, where Python can only print a traceback.
        sys.stdout.flush()
        return code
    except DeskLoopError as exc:
        print_err(f"{exc.title}:\n{exc}")
        return 2
    except BrokenPipeError:
        # `deskloop episodes show 3 | head`: the reader has what it wanted. Stop quietly,
        # as other command-line tools do, with the status of a process ended by SIGPIPE;
        # stdout goes to /dev/null so that the flush at exit does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
