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
        "trace=execve,execveat",
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


def read_exec_log(trace_dir: Path) -> list[ExecRecord]:
    """Every successful exec in the trace files of `trace_dir`, in time order."""
    records: list[ExecRecord] = []
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
    return sorted(records, key=lambda r: (r.time, r.pid))
