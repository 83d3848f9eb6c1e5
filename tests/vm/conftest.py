"""The VMs the modules of tests/vm/ share: one per image per run (tests/vm/episodes.py).

A module says which image its tests run on with `VM_IMAGE` and takes the `pooled_vm`
fixture. tests/suite_plugin.py runs every module here on one worker, in the order the
images are built in the background.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from app.desktops.libvirt import LibvirtDesktop
from tests.vm.episodes import VmPool


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def vm_pool() -> AsyncIterator[VmPool]:
    pool = VmPool()
    try:
        yield pool
    finally:
        await pool.close()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def pooled_vm(
    request: pytest.FixtureRequest, vm_pool: VmPool
) -> AsyncIterator[LibvirtDesktop]:
    """The pool's VM of the module's `VM_IMAGE`; released after the module unless a
    later module of this run wants the same image."""
    image: str = request.module.VM_IMAGE
    yield await vm_pool.get(image)
    items = request.session.items
    mine = [i for i, item in enumerate(items) if getattr(item, "module", None) is request.module]
    later = items[mine[-1] + 1 :] if mine else []
    if not any(getattr(getattr(item, "module", None), "VM_IMAGE", None) == image for item in later):
        await vm_pool.release(image)
