"""A Kdenlive task end to end on a real VM of the `kdenlive` image, GUI reference included.

Kdenlive's GUI works under software emulation, only slower: it opens in about two
minutes, once, while the first episode's setup makes the start state; later episodes
restore that state in seconds. The module shares one VM and its start state across
what it checks, as `tests/test_libvirt_gimp.py` does. The image is built by the recipe
when the cache lacks it (with the base layer cached, the kdenlive layer takes minutes).
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

TASK = Path(__file__).resolve().parent.parent / "tasks" / "kdenlive" / "kdenlive-first-clip.yaml"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def kdenlive_vm() -> AsyncIterator[LibvirtDesktop]:
    async with ephemeral_vm("kdenlive", "kdenlive") as desktop:
        yield desktop


async def test_kdenlive_task_on_a_vm_scores_as_on_the_local_desktop(
    kdenlive_vm: LibvirtDesktop, tmp_path: Path
) -> None:
    with Store(tmp_path / "db.sqlite") as store:
        # Cold: boots, opens Kdenlive with the clip by the task's setup, saves the state.
        first_null = await run_episode(TASK, kdenlive_vm, "null", store, "libvirt")
        assert "cold_boot" in kdenlive_vm.timings and "save" in kdenlive_vm.timings
        print("start state made:", kdenlive_vm.timings)

        # The reference saved ~/Videos/harbour-edit.kdenlive; the next restore drops it.
        await restored_runs_match_local(TASK, kdenlive_vm, store, first_null)
