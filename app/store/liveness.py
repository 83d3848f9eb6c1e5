"""Who runs an episode, and what becomes of episodes whose runner died.

An episode records its runner: pid, host and the process's identity for good
("BOOT_ID/TICKS": the kernel's boot id and the pid's start time), since a pid alone
is reused, by any process and often by a system daemon after a reboot. Every open
of the store (`Store.__init__`) calls `recover_interrupted`, which marks the running
episodes of dead runners on this host as errors.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

from app.core.procfs import process_start_time
from app.core.vocabulary import ErrorKind
from app.store.base import Part, end_pending_phases

INTERRUPTED: ErrorKind = "interrupted"
"""The error kind of an episode whose runner died: infrastructure, so a batch reruns it."""


@dataclass(frozen=True)
class Runner:
    """The process recorded as an episode's runner."""

    pid: int
    hostname: str
    start: str | None
    """'BOOT_ID/TICKS', or None when /proc cannot say."""


def this_runner() -> Runner:
    pid = os.getpid()
    return Runner(pid, socket.gethostname(), _process_identity(pid))


def _process_identity(pid: int) -> str | None:
    """'BOOT_ID/TICKS' for a live `pid`: it names one process across pid reuse and reboots."""
    start = process_start_time(pid)
    if start is None:
        return None
    try:
        boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot_id = "unknown-boot"
    return f"{boot_id}/{start}"


def _runner_alive(pid: int, runner_start: str | None) -> bool:
    if not _pid_alive(pid):
        return False
    # Episodes recorded before migration 0004 have no start: the pid is all we have.
    return runner_start is None or _process_identity(pid) == runner_start


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by another user
    # A killed child its parent has not reaped yet still answers signal 0.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    state = stat.rsplit(")", 1)[-1].split()
    return not (state and state[0] in ("Z", "X"))


class Liveness(Part):
    """`Store`'s recovery of the episodes whose runner died."""

    def recover_interrupted(self) -> list[int]:
        """Mark episodes left 'running' by a runner that died on this host as errors.

        Episodes of live runners, and of other hosts (whose processes this host
        cannot see), are left alone. Returns the ids marked.
        """
        # Read first, so opening a database with nothing to recover (the usual case,
        # and every read-only viewer) never takes the write lock.
        with self.db.op("looking for interrupted episodes") as conn:
            running = conn.execute(
                "SELECT id, pid, runner_start FROM episodes"
                " WHERE status = 'running' AND hostname = ?",
                (socket.gethostname(),),
            ).fetchall()
        dead = [
            (episode_id, pid) for episode_id, pid, start in running if not _runner_alive(pid, start)
        ]
        if not dead:
            return []
        recovered: list[int] = []
        with self.db.write("recovering interrupted episodes") as conn:
            for episode_id, pid in dead:
                # ended_at is the last thing the runner recorded, so durations stay
                # honest however long after the crash the store is reopened. An
                # interrupted episode is never a pass, even if it was scored early.
                cursor = conn.execute(
                    """UPDATE episodes SET status = 'error', end_reason = 'error', error = :error,
                           error_kind = :kind,
                           passed = CASE WHEN passed = 1 THEN 0 ELSE passed END,
                           steps = (SELECT COUNT(*) FROM steps WHERE episode_id = :id),
                           ended_at = MAX(started_at,
                               COALESCE((SELECT MAX(started_at) FROM steps
                                         WHERE episode_id = :id), ''),
                               COALESCE((SELECT MAX(created_at) FROM messages
                                         WHERE episode_id = :id), ''))
                       WHERE id = :id AND status = 'running'""",
                    {
                        "id": episode_id,
                        "kind": INTERRUPTED,
                        "error": f"interrupted: runner process {pid} ended without "
                        "finishing the episode",
                    },
                )
                if cursor.rowcount == 0:
                    continue  # another process recovered it in the meantime
                end_pending_phases(conn, episode_id)
                recovered.append(episode_id)
        return recovered
