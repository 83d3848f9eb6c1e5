"""A failed SSH attempt is reported by our connect loops, not printed by paramiko: its
transport thread logs each failure with a traceback, which Python's last-resort
handler wrote on stderr (over bench output and the TUI) while guests booted."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

ATTEMPT = """
import sys
import paramiko
import app.desktops  # noqa: F401  (what every SSH user of DeskLoop imports first)
try:
    paramiko.SSHClient().connect("127.0.0.1", port=int(sys.argv[1]), banner_timeout=0.5,
                                 timeout=5, allow_agent=False, look_for_keys=False)
except paramiko.SSHException as exc:
    print("raised:", exc)
"""


def test_a_silent_ssh_server_is_reported_by_the_caller_not_on_stderr() -> None:
    # A guest booting: its port accepts, its sshd has not said its banner yet.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        port = silent.getsockname()[1]
        out = subprocess.run(
            [sys.executable, "-c", ATTEMPT, str(port)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert "raised: Error reading SSH protocol banner" in out.stdout, out.stdout + out.stderr
    assert "Traceback" not in out.stderr and "banner" not in out.stderr, out.stderr
