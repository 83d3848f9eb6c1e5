"""A Kdenlive task end to end on a real VM of the `kdenlive` image, GUI reference included.

Kdenlive's GUI works under software emulation, only slower: it opens in about two
minutes, once, while the first episode's setup makes the start state; later episodes
restore that state in seconds. The VM is booted once for the run (tests/vm/episodes.py)
and its start state serves what the module checks. The image is built by the recipe when
the cache lacks it (with the base layer cached, the kdenlive layer takes minutes).
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

TASK = ROOT / "tasks" / "kdenlive" / "kdenlive-first-clip.yaml"
VM_IMAGE = "kdenlive"


async def test_kdenlive_task_on_a_vm_scores_as_on_the_local_desktop(
    pooled_vm: LibvirtDesktop, tmp_path: Path
) -> None:
    with Store(tmp_path / "db.sqlite") as store:
        # From the boot state: opens Kdenlive with the clip by the task's setup, saves
        # the start state.
        pooled_vm.timings.clear()
        first_null = await run_episode(TASK, pooled_vm, "null", store, "libvirt")
        assert "save" in pooled_vm.timings, pooled_vm.timings
        print("start state made:", pooled_vm.timings)

        # The reference saved ~/Videos/harbour-edit.kdenlive; the next restore drops it.
        await restored_runs_match_local(TASK, pooled_vm, store, first_null)
