"""Who a local desktop runs as: the lab user.

Everything of a local desktop (Xvnc, the bus, openbox, the apps, setup's `launch`,
the guest channel's commands) runs as an unprivileged user, never as the user who
started DeskLoop when that is root. DeskLoop run as root drops privileges for the
desktop to the dedicated system user `deskloop-desktop` (no login shell, no home
of its own; `scripts/setup.sh` creates it). A DeskLoop run by an ordinary user
cannot change user: its desktop runs as that user, who is unprivileged already.
Either way app/desktops/local/sandbox.py confines what the desktop can write to its home.

This module owns those facts: which user, whether privileges are dropped, the
credentials a child process gets, and handing files DeskLoop makes in the home
over to that user.
"""

from __future__ import annotations

import os
import pwd
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.core.errors import DesktopError

LAB_USER = "deskloop-desktop"
SETUP_COMMAND = "scripts/setup.sh"


@dataclass(frozen=True)
class LabUser:
    """The user a local desktop's processes run as."""

    name: str
    uid: int
    gid: int
    dropped: bool
    """True when DeskLoop runs as root and the desktop as `LAB_USER` (privileges are
    dropped for every desktop process); False when both run as the invoking user."""

    def popen_credentials(self) -> dict[str, Any]:
        """The subprocess arguments that start a child as this user.

        `extra_groups=[]` clears root's supplementary groups: without it the child
        would keep them (group `root`, `shadow` on some machines) after the uid change.
        """
        if not self.dropped:
            return {}
        return {"user": self.uid, "group": self.gid, "extra_groups": []}

    def hand_over(self, fd_or_path: int | Path) -> None:
        """Make a file or folder DeskLoop created in the home the lab user's.

        Paths are changed without following a symlink, so a link swapped in cannot
        hand over something outside the home.
        """
        if not self.dropped:
            return
        if isinstance(fd_or_path, int):
            os.fchown(fd_or_path, self.uid, self.gid)
        else:
            os.chown(fd_or_path, self.uid, self.gid, follow_symlinks=False)

    def unreachable_folder(self, path: Path) -> Path | None:
        """The first folder on the way to `path` this user may not enter, or None.

        Mode bits only (no ACLs): enough for the folders DeskLoop makes or is given.
        """
        for folder in (*reversed(path.parents), path):
            try:
                info = folder.stat()
            except OSError:
                return folder
            if info.st_uid == self.uid:
                bit = stat.S_IXUSR
            elif info.st_gid == self.gid:
                bit = stat.S_IXGRP
            else:
                bit = stat.S_IXOTH
            if not info.st_mode & bit:
                return folder
        return None


def lab_user() -> LabUser:
    """The user this process's local desktops run as.

    Raises:
        DesktopError: DeskLoop runs as root and `LAB_USER` is missing (or is root).
    """
    if os.geteuid() != 0:
        me = pwd.getpwuid(os.geteuid())
        return LabUser(me.pw_name, me.pw_uid, me.pw_gid, dropped=False)
    try:
        entry = pwd.getpwnam(LAB_USER)
    except KeyError:
        raise DesktopError(
            f"DeskLoop runs as root, so local desktops run as the unprivileged user "
            f"{LAB_USER!r}, which does not exist on this machine; run {SETUP_COMMAND} "
            f"(it creates the user), or: useradd --system --user-group --no-create-home "
            f"--home-dir /nonexistent --shell /usr/sbin/nologin {LAB_USER}"
        ) from None
    if entry.pw_uid == 0 or entry.pw_gid == 0:
        raise DesktopError(
            f"the local desktop user {LAB_USER!r} has uid {entry.pw_uid} and gid "
            f"{entry.pw_gid}; it must be an unprivileged user (see {SETUP_COMMAND})"
        )
    return LabUser(entry.pw_name, entry.pw_uid, entry.pw_gid, dropped=True)
