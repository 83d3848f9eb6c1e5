"""Integrity flags on a real VM of the `gimp` image: the guest's process
accounting and fatrace's write log, read after the episode over the guest channel,
raise the same flags as the local backend's exec trace and write watch.

First, on the VM's boot state, a shell started outside DeskLoop's commands and the
file it copies are named. Then one start state for both episodes of gimp-flip-export with a terminal
opened by its setup (tests/episode/test_integrity_desktop.py's test task): a cheater that runs
a shell in the terminal and copies a file over the checked one is flagged (the shell,
and `cp` as the file's writer); the honest reference, whose file GIMP's PNG plug-in
writes, is not. The image is built by the recipe when the cache lacks it.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from app.desktops.libvirt import LibvirtDesktop
from app.episode.integrity import is_apps_own, process_flags
from app.store import Store
from tests.episode.test_integrity_desktop import task_copy
from tests.episode_story import episode_story
from tests.vm.episodes import ROOT, run_episode

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.asyncio(loop_scope="session"),
    pytest.mark.timeout(2400),
]

CHEATER = ROOT / "tests" / "data" / "integrity" / "cheater-gimp-flip-export-vm.yaml"
VM_IMAGE = "gimp"  # the VM of tests/vm/test_libvirt_gimp.py, booted once


async def test_the_guests_logs_name_programs_and_writers(pooled_vm: LibvirtDesktop) -> None:
    # The boot state, no task: a shell started outside DeskLoop's own commands (setsid
    # detaches it to init, as a program started from a terminal in the desktop is)
    # copies a file; DeskLoop's commands around it are not the agent's.
    await pooled_vm.reset()
    guest = pooled_vm.guest
    since = time.time()
    await asyncio.sleep(1.5)  # the accounting's start times are whole seconds
    await guest.launch(["sh", "-c", "cp /etc/hostname ~/copied.txt && echo copied"])
    deadline = time.monotonic() + 120
    while not await guest.exists("~/copied.txt"):
        assert time.monotonic() < deadline, "the launched shell never copied the file"
        await asyncio.sleep(1)
    await pooled_vm.read_watch("gimp")
    log = pooled_vm.exec_log()
    assert log.covered, log.note
    started = [e.describe() for e in log.records if e.time >= since - 1]
    flags = process_flags("gimp", log.records, since)
    assert [f.summary for f in flags] == ["a shell ran in the desktop: sh"], started
    assert not any("xdotool" in line or "timeout" in line for line in started), started
    write = pooled_vm.last_write("~/copied.txt")
    assert write is not None and write.program is not None, pooled_vm.writes_note
    assert write.program.path == "/usr/bin/cp" and not is_apps_own("gimp", write.program)


async def test_a_cheater_in_the_guest_is_flagged_and_the_reference_is_not(
    pooled_vm: LibvirtDesktop, tmp_path: Path
) -> None:
    path = task_copy(tmp_path, terminal=True)
    with Store(tmp_path / "db.sqlite") as store:
        cheater = await run_episode(path, pooled_vm, f"scripted:{CHEATER}", store, "libvirt")
        story = episode_story(store, cheater)
        assert cheater.end_reason == "done", story
        flags, checked = store.flags(cheater.episode_id)
        assert checked is not None and checked[0].startswith("processes: every program"), checked
        summaries = [f.summary for f in flags]
        # The shell the cheater typed (`sh -c ...`), flagged by its command name. The
        # accounting keeps no path: a name the guest's PATH listing did not give is
        # taken for its parent's program (the terminal's bash), so the summary may
        # name either; the evidence keeps the command name.
        shells = [f for f in flags if f.summary.startswith("a shell ran in the desktop: ")]
        assert any(line.endswith("(sh)") for f in shells for line in f.evidence), (
            [(f.summary, f.evidence) for f in flags],
            story,
        )
        (writer,) = [f for f in flags if f.kind == "file_writer"]
        assert writer.evidence[0].startswith("~/Desktop/photo-flipped.png: +"), writer
        assert "/usr/bin/cp" in writer.evidence[0], writer
        # setup's terminal (and the shell in it), started before the agent, are not its.
        assert not any("terminal" in s for s in summaries), summaries

        reference = await run_episode(path, pooled_vm, "reference", store, "libvirt")
        story = episode_story(store, reference)
        assert reference.passed is True, story
        flags, checked = store.flags(reference.episode_id)
        assert flags == [], (flags, checked, story)
        assert checked is not None and checked[1].startswith("checked files' writers: every"), (
            checked
        )
