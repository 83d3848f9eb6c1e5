"""Reading a VM guest's process accounting, ps and fatrace's write log into the
integrity watch's records (app.desktops.libvirt.guest_watch), on bytes laid out as the
kernel's `struct acct_v3` and lines as `ps` and `fatrace -tt` print them. The same
on a real VM is tests/vm/test_libvirt_integrity.py."""

from __future__ import annotations

import struct

import pytest

from app.desktops.libvirt.guest_watch import (
    ProgramIndex,
    build_log,
    parse_pacct,
    parse_ps,
    parse_threads,
    parse_writes,
)
from app.episode.integrity import is_apps_own, process_flags

ACCT = struct.Struct("<BBHIIIIIIf8H16s")


def record(pid: int, ppid: int, comm: str, btime: int, uid: int = 1000, flag: int = 0) -> bytes:
    return ACCT.pack(flag, 3, 0, 0, uid, uid, pid, ppid, btime, 0.5, *([0] * 8), comm.encode())


def test_records_parse_and_a_partial_one_is_left_out() -> None:
    data = record(10, 1, "xterm", 1000) + record(11, 10, "sh", 1005, flag=0x01)
    parsed = parse_pacct(data + b"\x00" * 10)
    assert [(r.pid, r.ppid, r.comm, r.start, r.forked_only) for r in parsed] == [
        (10, 1, "xterm", 1000.0, False),
        (11, 10, "sh", 1005.0, True),
    ]
    assert ACCT.size == 64
    with pytest.raises(ValueError, match="version 2"):
        parse_pacct(ACCT.pack(0, 2, 0, 0, 0, 0, 1, 0, 0, 0.0, *([0] * 8), b"x"))


def test_deskloops_commands_and_roots_are_left_out_and_names_resolved() -> None:
    records = [
        record(20, 12, "bash", 2000),  # DeskLoop's: under the live sshd session
        record(21, 20, "xdotool", 2000),
        record(30, 1, "sh", 2010),  # the agent's shell, in a terminal reparented to init
        record(31, 30, "cp", 2011),
        record(40, 1, "cron", 2012, uid=0),  # root's
        record(50, 5, "file-png", 2013),  # GIMP's plug-in
        record(51, 30, "sh", 2014, flag=0x01),  # a subshell: no exec
    ]
    stat = (
        "    5     1  1000  100 gimp-2.10\n"
        "   12     9  1000   90 sshd\n"
        "    9     1     0  200 sshd\n"
    )
    args = "    5 gimp-2.10 -n --no-splash /home/user/Desktop/photo.png\n   12 sshd: user@notty\n"
    live = parse_ps(stat, args, now=2100.0)
    index = ProgramIndex(
        ["/usr/lib/gimp/2.0/plug-ins/file-png/file-png"], ["/usr/bin/sh", "/usr/bin/cp"]
    )
    writes = parse_writes(
        "2011.250000 cp(31): W   /home/user/Desktop/photo-flipped.png\n"
        "2013.500000 file-png(50): CW /home/user/Desktop/photo-flipped.png\n"
        "garbage line\n"
    )
    log = build_log(parse_pacct(b"".join(records)), live, writes, index)
    seen = [(e.pid, e.path) for e in log.execs]
    assert seen == [
        (5, "gimp-2.10"),
        (30, "/usr/bin/sh"),
        (31, "/usr/bin/cp"),
        (50, "/usr/lib/gimp/2.0/plug-ins/file-png/file-png"),
    ]
    assert log.by_pid[5].argv == ("gimp-2.10", "-n", "--no-splash", "/home/user/Desktop/photo.png")
    # The same rules as the local backend's: the shell is flagged, GIMP's plug-in is its own.
    (flag,) = process_flags("gimp", log.execs, since=2005.0)
    assert flag.summary == "a shell ran in the desktop: sh"
    last = log.last_write("/home/user/Desktop/photo-flipped.png")
    assert last is not None and last.program is not None and last.time == 2013.5
    assert is_apps_own("gimp", last.program)
    assert log.exec_log().covered
    # A guest clock 100 s behind the host's: its times are moved onto the host's.
    late = build_log(parse_pacct(b"".join(records)), live, writes, index, clock_offset=100.0)
    assert [e.time for e in late.execs if e.pid == 30] == [2110.0]
    assert late.writes[0].time == 2111.25
    # A write fatrace names by the thread that made it (GIMP's gmain, thread 866 of
    # process 5) is GIMP's, not an unknown program's.
    by_thread = parse_writes("2015.0 gmain(866): CW /home/user/Desktop/photo-flipped.png\n")
    threaded = build_log(
        parse_pacct(b"".join(records)),
        live,
        by_thread,
        index,
        threads=parse_threads("    5     5\n  866     5\n   12    12\n"),
    )
    last = threaded.last_write("/home/user/Desktop/photo-flipped.png")
    assert last is not None and last.program is not None and last.pid == 5
    assert is_apps_own("gimp", last.program)
    unmapped = build_log(parse_pacct(b"".join(records)), live, by_thread, index)
    last = unmapped.last_write("/home/user/Desktop/photo-flipped.png")
    assert last is not None and last.program is None
    # A plug-in of GIMP's whose last thread to exit was gmain: the accounting names it
    # "gmain"; it is taken for its parent's program, GIMP, and is not flagged.
    plugin = [*records, record(60, 5, "gmain", 2015)]
    write = parse_writes("2015.5 gmain(60): CW /home/user/Desktop/photo-flipped.png\n")
    log = build_log(parse_pacct(b"".join(plugin)), live, write, index)
    last = log.last_write("/home/user/Desktop/photo-flipped.png")
    assert last is not None and last.program is not None
    assert last.program.path == "gimp-2.10" and is_apps_own("gimp", last.program)
    # ...while a "gmain" under the agent's shell is the shell's, and flagged as one.
    child = record(61, 30, "gmain", 2015)
    shell_child = build_log(parse_pacct(b"".join([*records, child])), live, [], index)
    assert [e.path for e in shell_child.execs if e.pid == 61] == ["/usr/bin/sh"]
