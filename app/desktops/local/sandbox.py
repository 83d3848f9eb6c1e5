"""Where a local desktop's programs may write: its home, and nowhere else.

Every process of a local desktop is started through `Sandbox.spawn`: as the lab user
(app/desktops/local/lab_user.py) and inside bubblewrap (`bwrap`), with this view of the
machine:

- `/` read-only (so /etc, /usr, /root, the repository, the sessions folder: reads
  follow the lab user's Unix permissions, writes fail with "Read-only file system");
- the desktop's home read-write, at its real path (DeskLoop reads and writes the same
  files from outside);
- `/tmp`, `/var/tmp` and `/dev/shm`: empty tmpfs of the one program (and its
  children), gone when it exits, never seen by another program or the host. The
  rest of the session directory under /tmp (logs, the owner file, the VNC password)
  is hidden; the X cookie is bound in read-only, and the VNC password only for Xvnc;
- a minimal, read-only `/dev` (null, zero, random, urandom, tty, pts) and the host's
  `/proc`;
- the host's network (Xvnc must listen on 127.0.0.1 for DeskLoop). X clients reach
  Xvnc through its abstract socket, which needs the session's cookie.

Unprivileged bubblewrap needs user namespaces; `check` says so plainly when the
kernel refuses them.
"""

from __future__ import annotations

import asyncio
import ctypes
import errno
import os
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from app.core.errors import DesktopError
from app.desktops.local.lab_user import SETUP_COMMAND, LabUser

BWRAP = "bwrap"

_PR_SET_PDEATHSIG = 1
_libc: ctypes.CDLL | None
try:
    _libc = ctypes.CDLL(None, use_errno=True)
except OSError:  # pragma: no cover - every Linux libc loads; keep going without it
    _libc = None


def die_with_parent() -> None:
    """Runs in the child between fork and exec: SIGTERM it when the parent goes.

    Belt and braces only: the reaper is what guarantees cleanup (PDEATHSIG follows
    the forking thread, not the process, and is reset by setuid programs).
    """
    if _libc is not None:
        _libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)


def find_bwrap() -> str:
    """The bubblewrap executable.

    Raises:
        DesktopError: it is not installed.
    """
    found = shutil.which(BWRAP)
    if found is None:
        raise DesktopError(
            f"local desktops run their programs in a sandbox made by bubblewrap "
            f"({BWRAP!r}), which is not installed; run {SETUP_COMMAND} "
            f"(apt package bubblewrap)"
        )
    return found


@dataclass(frozen=True)
class Sandbox:
    """How one desktop session's programs are started (see the module docstring)."""

    user: LabUser
    home: Path
    readable: tuple[Path, ...]
    """Files outside the home every program may read (the X cookie)."""
    bwrap: str
    tracer: tuple[str, ...] = ()
    """A command line that traces a program's execs (app.desktops.local.exec_trace), put
    before bubblewrap for `spawn(..., traced=True)`; empty: not traced."""

    def argv(self, argv: Sequence[str], readable: Sequence[Path] = ()) -> list[str]:
        """`argv` wrapped in bubblewrap; `readable` adds read-only files for this program."""
        home = str(self.home)
        layout = [
            "--ro-bind", "/", "/",
            "--dev", "/dev",
            "--tmpfs", "/dev/shm",
            # /dev itself is a tmpfs bubblewrap made; only /dev/shm stays writable.
            "--remount-ro", "/dev",
            "--bind", "/proc", "/proc",
            "--tmpfs", "/tmp",
            "--tmpfs", "/var/tmp",
            # After /tmp: the home usually lives under it.
            "--bind", home, home,
        ]  # fmt: skip
        for path in (*self.readable, *readable):
            layout += ["--ro-bind", str(path), str(path)]
        return [self.bwrap, *layout, "--chdir", home, "--die-with-parent", "--", *argv]

    async def spawn(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        stdout: int | IO[bytes],
        stderr: int | IO[bytes],
        pass_fds: Sequence[int] = (),
        readable: Sequence[Path] = (),
        traced: bool = False,
    ) -> asyncio.subprocess.Process:
        """Start `argv` in the sandbox as the lab user, in a session of its own.

        `traced` starts it under the sandbox's tracer (when it has one): the tracer,
        not bubblewrap, is the returned process, and it changes to the lab user itself.

        Raises:
            OSError: the program is not on the session's PATH (FileNotFoundError,
                as a direct start would raise), or bubblewrap could not start.
        """
        if shutil.which(argv[0], path=env.get("PATH")) is None:
            # Found outside, as bubblewrap would inside: / is the same, read-only.
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), argv[0])
        command = self.argv(argv, readable)
        credentials = self.user.popen_credentials()
        if traced and self.tracer:
            # A root tracer starts the program as the lab user (strace -u), so that
            # nothing in the desktop can stop it or detach from it.
            command = [*self.tracer, *command]
            credentials = {}
        return await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            env=dict(env),
            pass_fds=tuple(pass_fds),
            start_new_session=True,
            preexec_fn=die_with_parent,
            **credentials,
        )

    def check(self, env: Mapping[str, str]) -> None:
        """Start `true` in the sandbox once, so a kernel that refuses it is named plainly.

        Raises:
            DesktopError: bubblewrap failed (its own message included).
        """
        try:
            result = subprocess.run(
                self.argv(["true"]),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                env=dict(env),
                timeout=30,
                **self.user.popen_credentials(),
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise DesktopError(
                f"the local desktop sandbox ({self.bwrap}) cannot start: {exc}"
            ) from exc
        if result.returncode != 0:
            message = result.stderr.decode("utf-8", "replace").strip()
            raise DesktopError(
                f"the local desktop sandbox ({self.bwrap}) does not work on this machine "
                f"as user {self.user.name!r}: {message or f'exit {result.returncode}'}. "
                f"Unprivileged bubblewrap needs user namespaces (sysctl "
                f"kernel.unprivileged_userns_clone=1; on Ubuntu also "
                f"kernel.apparmor_restrict_unprivileged_userns=0)"
            )
