"""A real Ray cluster on this machine for tests: a head and worker nodes started with
`ray start` (through tests/ray_node.py, so every service listens on 127.0.0.1 only),
each in a session of its own so a test can kill one node (its raylet and the workers
it started) by its process group, and stop them all at the end, even on failure.
Nothing else is stopped: `ray stop` would end every Ray process on the machine."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STARTED = "This command will now block forever"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _reachable_temp(prefix: str) -> Path:
    """A fresh folder in the temporary directory that the desktop user may pass
    through to its session folder (mkdtemp makes it 0700)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    folder.chmod(0o711)
    return folder


@dataclass
class RayCluster:
    folder: Path
    """Where the nodes' logs go."""
    temp: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="dl-ray-")))
    """Ray's own folder (its sockets' paths must be short: 107 bytes at most)."""
    tmpdir: Path = field(default_factory=lambda: _reachable_temp("dl-ray-tmp-"))
    """The nodes' TMPDIR, where their episodes' folders and desktops' session folders
    go: a test can see what is left there."""
    address: str = ""
    nodes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def start_node(self, name: str, *, desktops: int, head: bool = False) -> None:
        """Start a node offering `desktops` desktops; return once it has joined."""
        args = [
            "start", "--block", "--num-cpus=1", "--disable-usage-stats",
            f"--resources={json.dumps({'deskloop_desktop': desktops})}",
            "--node-ip-address=127.0.0.1", f"--temp-dir={self.temp}",
            "--object-store-memory=200000000",
        ]  # fmt: skip
        if head:
            port = _free_port()
            self.address = f"127.0.0.1:{port}"
            args += ["--head", f"--port={port}", "--include-dashboard=false"]
        else:
            args += [f"--address={self.address}"]
        log = self.folder / f"{name}.log"
        env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(self.tmpdir)}
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "tests.ray_node", *args],
                cwd=REPO, stdout=out, stderr=subprocess.STDOUT, env=env,
                start_new_session=True,
            )  # fmt: skip
        self.nodes[name] = proc
        deadline = time.monotonic() + 90
        while STARTED not in log.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"ray node {name} did not start:\n{log.read_text()}")
            time.sleep(0.2)  # polling the node's log for its start, bounded above

    def node_of(self, pid: int) -> str:
        """The node a process belongs to (its ancestors include the node's `ray start`)."""
        parents = _parents()
        while pid > 1:
            for name, proc in self.nodes.items():
                if proc.pid == pid:
                    return name
            pid = parents.get(pid, 0)
        raise AssertionError("the process belongs to no node of this cluster")

    def kill_node(self, name: str) -> None:
        """Lose a node at once: SIGKILL its `ray start`, its raylet and every process
        they started (Ray's workers have process groups of their own)."""
        proc = self.nodes.pop(name)
        for pid in [proc.pid, *_descendants(proc.pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=30)

    def stop(self) -> None:
        """Stop every node this cluster started (workers first), by process group."""
        for name in [n for n in self.nodes if n != "head"] + ["head"]:
            proc = self.nodes.pop(name, None)
            if proc is None:
                continue
            # Known now: once `ray start` is gone, its children are orphans.
            started = _descendants(proc.pid)
            # `ray start --block` stops the processes it started on SIGTERM.
            proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=15)
            # Whatever is left of the node (its raylet, its workers).
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            for pid in started:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=15)
        shutil.rmtree(self.temp, ignore_errors=True)
        shutil.rmtree(self.tmpdir, ignore_errors=True)


def _parents() -> dict[int, int]:
    """Every process's parent, from /proc."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            # The command name, in parentheses, may hold spaces: split after it.
            fields = stat.read_text().rsplit(")", 1)[1].split()
            parents[int(stat.parent.name)] = int(fields[1])
    return parents


def _descendants(root: int) -> list[int]:
    parents = _parents()
    found: list[int] = []
    frontier = [root]
    while frontier:
        children = [pid for pid, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


@contextlib.contextmanager
def ray_cluster(folder: Path, workers: dict[str, int]) -> Iterator[RayCluster]:
    """A head offering no desktop and worker nodes offering the desktops given."""
    cluster = RayCluster(folder)
    try:
        cluster.start_node("head", desktops=0, head=True)
        for name, desktops in workers.items():
            cluster.start_node(name, desktops=desktops)
        yield cluster
    finally:
        cluster.stop()
