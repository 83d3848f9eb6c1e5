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
from app.desktops.local import LocalDesktop
from app.store import Store
from tests.episode_story import episode_story
from tests.libvirt_episodes import ephemeral_vm, run_episode, verdicts

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

        kdenlive_vm.timings.clear()
        reference = await run_episode(TASK, kdenlive_vm, "reference", store, "libvirt")
        assert "restore" in kdenlive_vm.timings and "cold_boot" not in kdenlive_vm.timings
        print("restored:", kdenlive_vm.timings)

        # The reference saved ~/Videos/harbour-edit.kdenlive; the next restore drops it.
        second_null = await run_episode(TASK, kdenlive_vm, "null", store, "libvirt")

        async with LocalDesktop() as local:
            local_reference = await run_episode(TASK, local, "reference", store, "local")

        story = episode_story(store, reference)
        assert reference.end_reason == "done" and reference.score == 1.0, story
        assert first_null.score == 0.0 and second_null.score == 0.0, (
            episode_story(store, first_null),
            episode_story(store, second_null),
        )
        assert verdicts(store, reference) == verdicts(store, local_reference)
