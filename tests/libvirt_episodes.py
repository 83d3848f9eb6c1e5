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
