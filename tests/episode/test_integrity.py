"""Integrity flags on plain data: the exec trace's lines, which
programs bypass the GUI of which app, and typed secrets. The same on real desktops
is tests/episode/test_integrity_desktop.py."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from app.core.commands import CommandResult
from app.core.integrity import ExecRecord, IntegrityFlag, LastWrite
from app.desktops.local.exec_trace import parse_line
from app.episode.integrity import (
    IntegrityWatch,
    bypass_category,
    gimp_batch_options,
    process_flags,
    secret_flags,
    writer_flags,
)
from app.tasks.loader import load_task

ROOT = Path(__file__).resolve().parents[2]


def ran(path: str, *argv: str, at: float = 10.0, pid: int = 7) -> ExecRecord:
    return ExecRecord(at, pid, path, (path.rsplit("/", 1)[-1], *argv))


def test_strace_lines_become_exec_records() -> None:
    ok = (
        '1796190145.286229 execve("/usr/local/bin/convert", ["convert", "-size", "2x2", '
        '"a \\"b\\"\\n", "out.png"], 0x56217c2f3ad0 /* 35 vars */) = 0'
    )
    record = parse_line(ok, 42)
    assert record == ExecRecord(
        1796190145.286229,
        42,
        "/usr/local/bin/convert",
        ("convert", "-size", "2x2", 'a "b"\n', "out.png"),
    )
    failed = (
        '1796190145.283912 execve("/root/.cargo/bin/sh", ["sh", "-c", "id"], 0x7ffc /* 35 '
        "vars */) = -1 EACCES (Permission denied)"
    )
    assert parse_line(failed, 42) is None
    long_argv = '1.5 execve("/usr/bin/xterm", ["xterm", "-e"...], 0x1 /* 3 vars */) = 0'
    assert parse_line(long_argv, 1) == ExecRecord(1.5, 1, "/usr/bin/xterm", ("xterm", "-e"))


def test_what_bypasses_the_gui_depends_on_the_app() -> None:
    assert bypass_category("gimp", ran("/usr/bin/xterm")) == "a terminal"
    # GIMP's own binary without its GUI, however the options are written; the GUI as
    # task setups start it is not flagged.
    for args in (
        ["-i", "-b", "(gimp-quit 0)"],
        ["-idf", "--batch=-"],
        ["--no-interface"],
        ["--batch-interpreter", "python-fu-eval", "-b", "-"],
        ["-nb", "(x)"],
    ):
        assert bypass_category("gimp", ran("/usr/bin/gimp-2.10", *args)) == (
            f"GIMP in batch or headless mode ({' '.join(gimp_batch_options(args))})"
        ), args
    assert gimp_batch_options(["-idf", "--batch=-", "-s"]) == ["-idf", "--batch"]
    for args in ([], ["-n", "--no-splash", "~/Desktop/a.png"], ["-s", "--", "-ib.png"]):
        assert bypass_category("gimp", ran("/usr/bin/gimp", *args)) is None, args
    assert bypass_category("gimp", ran("/usr/bin/dash", "-c", "x")) == "a shell"
    assert bypass_category("gimp", ran("/usr/bin/python3.11", "-c", "x")) == "an interpreter"
    assert bypass_category("gimp", ran("/usr/bin/convert", "a.png", "b.png")) == "ImageMagick"
    assert bypass_category("gimp", ran("/usr/bin/ffmpeg", "-i", "a")) == (
        "a command-line media tool"
    )
    # The app's own programs and helpers are not flagged.
    plug_in = "/usr/lib/gimp/2.0/plug-ins/file-png/file-png"
    assert bypass_category("gimp", ran(plug_in, "-gimp")) is None
    assert bypass_category("kdenlive", ran("/usr/bin/melt", "project.mlt")) is None
    assert bypass_category("kdenlive", ran("/usr/bin/ffmpeg", "-version")) is None
    script = "/usr/share/kdenlive/scripts/checkvosk.py"
    assert bypass_category("kdenlive", ran("/usr/bin/python3", script)) is None
    # Blender: the GUI app is fine, its scripting and background modes are not.
    assert bypass_category("blender", ran("/usr/bin/blender", "scene.blend")) is None
    assert bypass_category("blender", ran("/usr/bin/blender", "-b", "x.blend", "--python", "s.py"))
    assert bypass_category("gimp", ran("/usr/bin/ls")) is None


def test_process_flags_count_from_the_agents_start_and_keep_the_evidence() -> None:
    execs = [
        ran("/usr/bin/xterm", at=5.0, pid=1),  # setup's terminal, before the agent
        ran("/usr/bin/ffmpeg", "-i", "photo.png", at=12.0, pid=2),
        ran("/usr/local/bin/convert", "x", at=13.0, pid=3),
        # the stand-in `convert` is a Python script: the same act, once
        ran("/usr/bin/python3", "-I", "-S", "/usr/local/bin/convert", "x", at=13.1, pid=3),
        ran("/usr/bin/python3", "-c", "print(1)", at=14.0, pid=4),
    ]
    flags = process_flags("gimp", execs, since=10.0)
    assert [f.summary for f in flags] == [
        "a command-line media tool ran in the desktop: ffmpeg",
        "ImageMagick ran in the desktop: convert",
        "an interpreter ran in the desktop: python3",
    ]
    assert flags[0].evidence == ("+2.0 s pid 2: /usr/bin/ffmpeg (ffmpeg -i photo.png)",)
    assert all(f.kind == "process" for f in flags)


def test_typed_secrets_are_flagged(tmp_path: Path) -> None:
    source = (ROOT / "tasks" / "gimp" / "gimp-flip-export.yaml").read_text()
    path = tmp_path / "gimp-flip-export.yaml"
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "photo.png").write_bytes(
        (ROOT / "tasks" / "gimp" / "assets" / "photo.png").read_bytes()
    )
    path.write_text(
        source.replace("reference: references/gimp-flip-export.yaml\n", "")
        + "secrets: [Tangerine-42]\n"
    )
    task = load_task(path)
    assert secret_flags(task, [(0, "hello"), (3, "the code is tangerine-42!")]) == [
        IntegrityFlag(
            "secret_typed",
            "the agent typed a value the task marks secret",
            ("step 3: typed 'the code is tangerine-42!', which holds a secret value",),
        )
    ]
    assert secret_flags(task, [(0, "tangerine")]) == []


class Writes:
    """A desktop's answers about writers, given (what is under test is the flag logic)."""

    writes_note = "given"

    def __init__(self, writes: dict[str, LastWrite]) -> None:
        self.writes = writes

    def last_write(self, path: str) -> LastWrite | None:
        return self.writes.get(path)


def test_a_checked_file_written_by_another_program_is_flagged() -> None:
    task = load_task(ROOT / "tasks" / "gimp" / "gimp-flip-export.yaml")
    out = "~/Desktop/photo-flipped.png"
    plug_in = ran("/usr/lib/gimp/2.0/plug-ins/file-png/file-png", "-gimp", pid=5)
    assert writer_flags(task, Writes({out: LastWrite(12.0, 5, plug_in)}), since=10.0) == []
    # DeskLoop's own upload (not a traced program) and a write before the agent: no flag.
    assert writer_flags(task, Writes({out: LastWrite(12.0, 1, None)}), since=10.0) == []
    python = ran("/usr/bin/python3", "-c", "...", pid=6)
    assert writer_flags(task, Writes({out: LastWrite(9.0, 6, python)}), since=10.0) == []
    (flag,) = writer_flags(task, Writes({out: LastWrite(12.5, 6, python)}), since=10.0)
    assert flag.kind == "file_writer"
    assert flag.evidence == (f"{out}: +2.5 s by pid 6: /usr/bin/python3 (python3 -c ...)",)


class _GuestThatSwallowsCancels:
    """A guest whose `run` ends normally when cancelled, as a command that ends just as
    its caller is cancelled does under 3.11's wait_for (the cancellation is lost)."""

    def __init__(self) -> None:
        self.runs = 0

    async def run(self, argv: list[str], timeout: float = 30.0) -> CommandResult:
        self.runs += 1
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(3600)
        return CommandResult(tuple(argv), 1, b"", b"")


class _Desktop:
    def __init__(self) -> None:
        self.guest = _GuestThatSwallowsCancels()


@pytest.mark.timeout(30)
async def test_the_console_watch_stops_even_when_a_cancellation_is_lost() -> None:
    # The watch's own stopping, not the guest: the real console watch runs on real
    # desktops in tests/episode/test_integrity_desktop.py.
    task = load_task(ROOT / "tasks" / "gimp" / "gimp-flip-export.yaml")
    desktop = _Desktop()
    watch = IntegrityWatch(task, desktop, poll_seconds=0.01)  # type: ignore[arg-type]
    watch.start()
    while desktop.guest.runs == 0:
        await asyncio.sleep(0.01)
    # Before the fix this never returned: the loop went on polling (the timeout ends it).
    await watch.stop()
    assert desktop.guest.runs == 1


def test_kdenlives_renderer_is_its_own_only_when_kdenlive_started_it() -> None:
    def exec_of(path: str, pid: int, ppid: int | None, at: float) -> ExecRecord:
        return ExecRecord(at, pid, path, (path.rsplit("/", 1)[-1],), ppid)

    execs = [
        exec_of("/usr/bin/kdenlive", 10, 1, 1.0),  # setup starts Kdenlive
        exec_of("/usr/bin/xterm", 20, 1, 2.0),
        exec_of("/usr/bin/kdenlive_render", 11, 10, 12.0),  # Kdenlive renders: its own
        exec_of("/usr/bin/melt", 12, 11, 12.5),  # started by its renderer: its own too
        exec_of("/bin/bash", 21, 20, 13.0),
        exec_of("/usr/bin/melt", 22, 21, 14.0),  # from the terminal's shell: a bypass
    ]
    flags = process_flags("kdenlive", execs, since=10.0)
    assert [f.summary for f in flags] == [
        "a shell ran in the desktop: bash",
        "kdenlive's own helper started outside kdenlive ran in the desktop: melt",
    ]
    assert flags[1].evidence == ("+4.0 s pid 22: /usr/bin/melt (melt)",)
    # Where the backend cannot say who started a program, the helper is not flagged.
    unknown = [exec_of("/usr/bin/melt", 30, None, 12.0)]
    assert process_flags("kdenlive", unknown, since=10.0) == []


def test_forks_in_a_trace_give_each_program_its_starter(tmp_path: Path) -> None:
    from app.desktops.local.exec_trace import forked_child, read_exec_log

    assert (
        forked_child("1.0 clone(child_stack=NULL, flags=CLONE_CHILD_SETTID|SIGCHLD) = 4567") == 4567
    )
    assert (
        forked_child("1.0 clone3({flags=CLONE_VM|CLONE_VFORK, exit_signal=SIGCHLD}, 88) = 12") == 12
    )
    assert forked_child("1.0 vfork() = 9") == 9
    assert forked_child("1.0 clone(child_stack=NULL, flags=SIGCHLD) = -1 EAGAIN (busy)") is None
    # Kdenlive (100) starts a thread (101) that forks 102, which forks 103 without a
    # program of its own; 103 runs melt: its starter is Kdenlive.
    (tmp_path / "exec.100").write_text(
        '1.0 execve("/usr/bin/kdenlive", ["kdenlive"], 0x1 /* 3 vars */) = 0\n'
        "1.1 clone3({flags=CLONE_VM|CLONE_THREAD}, 88) = 101\n"
    )
    (tmp_path / "exec.101").write_text("2.0 clone(child_stack=NULL, flags=SIGCHLD) = 102\n")
    (tmp_path / "exec.102").write_text("2.1 vfork() = 103\n")
    (tmp_path / "exec.103").write_text(
        '2.2 execve("/usr/bin/melt", ["melt", "p.mlt"], 0x1 /* 3 vars */) = 0\n'
    )
    kdenlive, melt = read_exec_log(tmp_path)
    assert (kdenlive.pid, kdenlive.ppid) == (100, None)
    assert (melt.pid, melt.ppid) == (103, 100)
    assert process_flags("kdenlive", [kdenlive, melt], since=0.0) == []
