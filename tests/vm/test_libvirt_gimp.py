"""One GIMP task end to end on a real VM of the `gimp` image, from a saved start state.

The image is built by the recipe when the cache lacks it (CI starts without one: the
gimp layer adds about a minute to the base layer). The VM is booted once for the run and
shared with tests/vm/test_libvirt_integrity.py (tests/vm/episodes.py); the first episode
runs the task's setup from its boot state (GIMP opens in about 2 min under TCG) and
saves the start state; the next ones restore it in seconds. Scores must match the local
backend's, and nothing of one episode may reach the next: the null agent after a
reference episode that exported the file still scores 0.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from app.desktops.libvirt import LibvirtDesktop
from app.desktops.local.desktop import LocalDesktop
from app.store import Store
from tests.episode_story import episode_story
from tests.vm.episodes import ROOT, run_episode, verdicts

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.asyncio(loop_scope="session"),
    pytest.mark.timeout(2400),
]

TASK = ROOT / "tasks" / "gimp" / "gimp-flip-export.yaml"
VM_IMAGE = "gimp"


async def test_gimp_task_on_a_vm_scores_as_on_the_local_desktop(
    pooled_vm: LibvirtDesktop, tmp_path: Path
) -> None:
    with Store(tmp_path / "db.sqlite") as store:
        # From the boot state: opens GIMP by the task's setup and saves the start state.
        pooled_vm.timings.clear()
        first_null = await run_episode(TASK, pooled_vm, "null", store, "libvirt")
        assert "save" in pooled_vm.timings, pooled_vm.timings
        print("start state made:", pooled_vm.timings)

        pooled_vm.timings.clear()
        reference = await run_episode(TASK, pooled_vm, "reference", store, "libvirt")
        assert "restore" in pooled_vm.timings and "save" not in pooled_vm.timings
        listing = await pooled_vm.guest.run(["ls", "-la", "/home/user/Desktop"], 30)
        desktop_files = listing.stdout.decode(errors="replace")
        print("restored:", pooled_vm.timings)

        # The reference exported ~/Desktop/photo-flipped.png; after a restore it must
        # be gone (disk and memory come back from the saved state).
        second_null = await run_episode(TASK, pooled_vm, "null", store, "libvirt")

        async with LocalDesktop() as local:
            local_reference = await run_episode(TASK, local, "reference", store, "local")

        story = episode_story(store, reference) + "\n~/Desktop after it:\n" + desktop_files
        assert reference.end_reason == "done" and reference.score == 1.0, story
        assert first_null.score == 0.0 and second_null.score == 0.0, (
            episode_story(store, first_null),
            episode_story(store, second_null),
        )
        assert verdicts(store, reference) == verdicts(store, local_reference)
        assert reference.score == local_reference.score
