"""The child that runs one `deskloop vm` action for the TUI reports on a structured
channel (JSON lines on stdout, exit statuses), never as text for a parent to parse.
No VM is needed: the child talks to a libvirtd that is not there."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from app.desktops.libvirt.actions import (
    EXIT_FAILED,
    Done,
    Failed,
    Progress,
    child_argv,
    decode,
    encode,
)

UNREACHABLE = "qemu+unix:///system?socket=/nonexistent/libvirt-sock"


@pytest.mark.parametrize(
    "report", [Progress("cold boot of deskloop-x\n(TCG)"), Done(), Failed("Desktop error", "why")]
)
def test_a_report_survives_the_channel(report: Progress | Done | Failed) -> None:
    line = encode(report)
    assert line.endswith("\n") and line.count("\n") == 1
    assert decode(line.encode()) == report


@pytest.mark.parametrize("line", [b"cold boot...", b"[1, 2]", b'{"event": "other"}', b""])
def test_a_line_that_is_no_report_is_none(line: bytes) -> None:
    assert decode(line) is None


def test_the_child_reports_its_error_and_exit_status(tmp_path: Path) -> None:
    env = {**os.environ, "DESKLOOP_LIBVIRT_URI": UNREACHABLE, "DESKLOOP_CACHE": str(tmp_path)}
    out = subprocess.run(
        child_argv("stop", "nobody-here"), env=env, capture_output=True, timeout=60, check=False
    )
    assert out.returncode == EXIT_FAILED, out.stderr
    reports = [decode(line) for line in out.stdout.splitlines()]
    assert len(reports) == 1, out.stdout
    failed = reports[0]
    assert isinstance(failed, Failed) and failed.title == "Desktop error"
    assert "cannot connect to libvirt" in failed.message and UNREACHABLE in failed.message


def test_snapshot_and_revert_need_a_key() -> None:
    out = subprocess.run(child_argv("revert", "x"), capture_output=True, timeout=60, check=False)
    assert out.returncode != 0 and b"needs the start state's KEY" in out.stderr
    assert out.stdout == b""


def test_create_needs_an_image() -> None:
    out = subprocess.run(child_argv("create", "x"), capture_output=True, timeout=60, check=False)
    assert out.returncode != 0 and b"create needs --image" in out.stderr
    assert out.stdout == b""
