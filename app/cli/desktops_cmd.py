"""`deskloop desktops cleanup`."""

from __future__ import annotations

import argparse
from typing import Any


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
    dc = dsub.add_parser("cleanup", help="stop desktop processes left by a crashed DeskLoop")
    dc.set_defaults(func=cmd_cleanup)
