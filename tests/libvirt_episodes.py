"""Running one task's episodes on a given desktop, for the VM tests of each app."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator
from pathlib import Path

from app.agents.factory import make_agent
from app.desktops.base import Desktop
from app.desktops.libvirt import LibvirtConfig, LibvirtDesktop
from app.desktops.local import LocalDesktop
from app.episode.events import EpisodeResult
from app.episode.runner import EpisodeRunner
from app.store import Store
from app.tasks.loader import load_task
from app.users.simulated import SimulatedUser
from app.vmimages.builder import build_image
from tests.episode_story import episode_story


@contextlib.asynccontextmanager
async def ephemeral_vm(
    image: str, purpose: str, config: LibvirtConfig | None = None
) -> AsyncIterator[LibvirtDesktop]:
    """A throw-away VM of `image` (built first, or taken from the cache), removed after:
    what a module of VM tests shares across its tests."""
    await asyncio.to_thread(build_image, image, progress=print)
    desktop = LibvirtDesktop(
        name=f"test-{purpose}-{secrets.token_hex(3)}",
        image=image,
        config=config or LibvirtConfig(vcpus=2),
        ephemeral=True,
        progress=print,
    )
    try:
        yield desktop
    finally:
        await desktop.remove()


async def run_episode(
    task_path: Path, desktop: Desktop, agent: str, store: Store, backend: str
) -> EpisodeResult:
    """One episode of the task with `agent` ("null", "reference"); it must finish."""
    task = load_task(task_path)
    runner = EpisodeRunner(
        task, desktop, make_agent(agent, task), SimulatedUser(), store, backend=backend
    )
    result = await runner.run()
    assert result.status == "finished", episode_story(store, result)
    return result


def verdicts(store: Store, result: EpisodeResult) -> list[tuple[str, bool]]:
    """Each check's name and whether it passed, in the task's order."""
    return [(c.name, c.passed) for c in store.checks(result.episode_id)]


async def restored_runs_match_local(
    task: Path, vm: LibvirtDesktop, store: Store, first_null: EpisodeResult
) -> None:
    """The reference from a restored start state, a null from the next restore (so the
    reference's changes must be gone), and the reference on a local desktop: the VM's
    reference scores 1, both nulls 0, and its check verdicts are the local desktop's."""
    vm.timings.clear()
    reference = await run_episode(task, vm, "reference", store, "libvirt")
    assert "restore" in vm.timings and "cold_boot" not in vm.timings
    print("restored:", vm.timings)
    second_null = await run_episode(task, vm, "null", store, "libvirt")

    async with LocalDesktop() as local:
        local_reference = await run_episode(task, local, "reference", store, "local")

    story = episode_story(store, reference)
    assert reference.end_reason == "done" and reference.score == 1.0, story
    assert first_null.score == 0.0 and second_null.score == 0.0, (
        episode_story(store, first_null),
        episode_story(store, second_null),
    )
    assert verdicts(store, reference) == verdicts(store, local_reference)
