"""Every program a local desktop's processes start, short-lived ones too.

The long-lived programs of a session (its D-Bus daemon, openbox, and each app setup
launches) are started under `strace -f` with a seccomp filter, so only execve and
execveat stop the tracee: a `convert` that runs for 30 ms between two frames is in
the log as surely as a terminal left open. Every descendant is followed (`-f`), each
into its own file (`-ff`), in the session folder outside the home, which programs
in the sandbox cannot see. When DeskLoop runs as root, strace stays root and starts
the program as the lab user (`-u`), so a program in the desktop can neither stop
the tracer nor detach from it; a DeskLoop run by an ordinary user traces as that
user, and a program in the desktop could kill its tracer (its later programs are
then missing from the log; the log does not say so).

Not traced: DeskLoop's own commands through the guest channel (setup's `run` steps,
scoring's probes), and Xvnc (it starts nothing).
"""

from __future__ import annotations

import codecs
import re
import shutil
from dataclasses import replace
from pathlib import Path

from app.core.integrity import ExecRecord
from app.desktops.local.lab_user import LabUser

STRACE = "strace"
LOG_PREFIX = "exec"

_LINE = re.compile(
    r'^(?P<time>\d+\.\d+) (?:execve|execveat)\((?:\S+, )?"(?P<path>(?:[^"\\]|\\.)*)"(?:\.\.\.)?, '
    r"\[(?P<argv>.*)\](?:\.\.\.)?, .*\) = 0$"
)
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
# A fork in the parent's log: `clone(...) = 4567`, `clone3({...}, 88) = 4567`, `vfork() = 12`.
_FORK = re.compile(r"^\d+\.\d+ (?:clone3?|v?fork)\(.*\) = (?P<child>\d+)$")


def find_strace() -> str | None:
    return shutil.which(STRACE)


def strace_argv(strace: str, trace_dir: Path, user: LabUser) -> list[str]:
    """The strace command line that runs a program traced into `trace_dir`."""
    argv = [
        strace,
        "-f",
        "-ff",
        "--seccomp-bpf",
        "-qqq",
        "-e",
        # Forks too, so that each program's parent is known: Kdenlive's renderer
        # started by Kdenlive is its own, the same binary run from a shell is not.
        "trace=execve,execveat,clone,clone3,fork,vfork",
        "-e",
        "signal=none",
        "-ttt",
        "-s",
        "512",
        "-o",
        str(trace_dir / LOG_PREFIX),
    ]
    if user.dropped:
        argv += ["-u", user.name]
    return [*argv, "--"]


def _unescape(text: str) -> str:
    # strace writes C escapes (\n, \t, \", \x..., \ooo) for non-printing bytes.
    try:
        return codecs.escape_decode(text.encode())[0].decode("utf-8", "replace")
    except ValueError:
        return text


def parse_line(line: str, pid: int) -> ExecRecord | None:
    """One strace line as an exec record; None for anything but a successful exec."""
    match = _LINE.match(line.rstrip("\n"))
    if match is None:
        return None
    argv = tuple(_unescape(s) for s in _STRING.findall(match["argv"]))
    return ExecRecord(float(match["time"]), pid, _unescape(match["path"]), argv)


def forked_child(line: str) -> int | None:
    """The child's pid of a successful fork line (clone, clone3, fork, vfork)."""
    match = _FORK.match(line.rstrip("\n"))
    return int(match["child"]) if match else None


def read_exec_log(trace_dir: Path) -> list[ExecRecord]:
    """Every successful exec in the trace files of `trace_dir`, in time order, each
    with the pid of the process that forked it where the trace saw the fork."""
    records: list[ExecRecord] = []
    parents: dict[int, int] = {}
    for path in trace_dir.glob(f"{LOG_PREFIX}.*"):
        try:
            pid = int(path.suffix.lstrip("."))
            text = path.read_text(errors="replace")
        except (ValueError, OSError):
            continue
        for line in text.splitlines():
            record = parse_line(line, pid)
            if record is not None:
                records.append(record)
            elif (child := forked_child(line)) is not None:
                parents[child] = pid
    ran = {r.pid for r in records}

    def started_by(pid: int) -> int | None:
        # A fork that never ran a program of its own runs its parent's: the program
        # that started `pid` is the nearest forker that ran one.
        parent = parents.get(pid)
        seen = {pid}
        while parent is not None and parent not in ran and parent not in seen:
            seen.add(parent)
            parent = parents.get(parent, parent)
        return parent

    records = [replace(r, ppid=started_by(r.pid)) for r in records]
    return sorted(records, key=lambda r: (r.time, r.pid))
