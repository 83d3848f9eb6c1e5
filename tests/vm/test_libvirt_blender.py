"""A Blender task end to end on a real VM of the `blender` image, with its oracle
reference.

Blender's GUI is not usable under software emulation (a VM without KVM), so the task is
an L3 one whose reference is an oracle: Blender's own Python in background mode in the
guest keys the turntable, renders 24 Workbench frames and saves, and the checks read the
guest's files. The task's setup still opens the GUI, once, for the start state; later
episodes restore it. The VM is booted once for the run (tests/vm/episodes.py) and its
start state serves the module; the image is built by the recipe when the cache lacks it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from app.desktops.libvirt import LibvirtDesktop
from app.store import Store
from tests.vm.episodes import ROOT, restored_runs_match_local, run_episode

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.asyncio(loop_scope="session"),
    pytest.mark.timeout(2400),
]

TASK = ROOT / "tasks" / "blender" / "blender-turntable.yaml"
VM_IMAGE = "blender"


async def test_blender_task_on_a_vm_scores_as_on_the_local_desktop(
    pooled_vm: LibvirtDesktop, tmp_path: Path
) -> None:
    with Store(tmp_path / "db.sqlite") as store:
        # From the boot state: opens the scene in Blender by the task's setup, saves
        # the start state.
        pooled_vm.timings.clear()
        first_null = await run_episode(TASK, pooled_vm, "null", store, "libvirt")
        assert "save" in pooled_vm.timings, pooled_vm.timings
        print("start state made:", pooled_vm.timings)

        # The reference rendered ~/Desktop/turntable/ and saved the scene; the next
        # restore brings back the untouched scene and no frames.
        await restored_runs_match_local(TASK, pooled_vm, store, first_null)
