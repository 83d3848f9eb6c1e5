"""A Blender task end to end on a real VM of the `blender` image, with its oracle reference.

Blender's GUI is not usable under software emulation (a VM without KVM), so the task is
an L3 one whose reference is an oracle: Blender's own Python in background mode in the
guest keys the turntable, renders 24 Workbench frames and saves, and the checks read the
guest's files. The task's setup still opens the GUI, once, for the start state; later
episodes restore it. One VM and its start state serve the module, as in
`tests/test_libvirt_gimp.py`; the image is built by the recipe when the cache lacks it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from app.desktops.libvirt import LibvirtDesktop
from app.store import Store
from tests.libvirt_episodes import ephemeral_vm, restored_runs_match_local, run_episode

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(2400),
]

TASK = Path(__file__).resolve().parent.parent / "tasks" / "blender" / "blender-turntable.yaml"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def blender_vm() -> AsyncIterator[LibvirtDesktop]:
    async with ephemeral_vm("blender", "blender") as desktop:
        yield desktop


async def test_blender_task_on_a_vm_scores_as_on_the_local_desktop(
    blender_vm: LibvirtDesktop, tmp_path: Path
) -> None:
    with Store(tmp_path / "db.sqlite") as store:
        # Cold: boots, opens the scene in Blender by the task's setup, saves the state.
        first_null = await run_episode(TASK, blender_vm, "null", store, "libvirt")
        assert "cold_boot" in blender_vm.timings and "save" in blender_vm.timings
        print("start state made:", blender_vm.timings)

        # The reference rendered ~/Desktop/turntable/ and saved the scene; the next
        # restore brings back the untouched scene and no frames.
        await restored_runs_match_local(TASK, blender_vm, store, first_null)
