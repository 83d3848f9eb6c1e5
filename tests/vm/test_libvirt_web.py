"""A web task end to end on a real VM of the `web` image: kiosk Chromium in the guest, its
DevTools pipe relayed over the guest's SSH channel (app/desktops/remote/ssh_web.py).

The VM is booted once for the run (tests/vm/episodes.py); the first episode opens the
task's page in Chromium and saves the start state with the browser in it; the next
episodes restore that state and reach the same page again through a new relay (a restore
kills the old one with the guest's TCP state). The image is built by the recipe when the
cache lacks it (the web layer takes a few minutes on a cached base).

On a quiet 2-core machine it takes about 110 s (cold boot 39 s, Chromium showing the
page in about 25 s, restores under 1.5 s); on one loaded by other work (load average
20-46) the guest starves, its boot or Chromium's network service time out, and it fails
(docs/backends.md, *Measured*). The relay alone is checked by tests/desktops/test_ssh_web.py.
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
    pytest.mark.timeout(1800),
]

TASK = ROOT / "tasks" / "web" / "web-kanban-approve.yaml"
VM_IMAGE = "web"


async def test_web_task_on_a_vm_scores_as_on_the_local_desktop(
    pooled_vm: LibvirtDesktop, tmp_path: Path
) -> None:
    with Store(tmp_path / "db.sqlite") as store:
        # From the boot state: opens the board in Chromium by the task's setup, saves
        # the start state.
        pooled_vm.timings.clear()
        first_null = await run_episode(TASK, pooled_vm, "null", store, "libvirt")
        assert "save" in pooled_vm.timings, pooled_vm.timings
        print("start state made:", pooled_vm.timings)

        # Nothing in the guest listens for the browser: DevTools goes over the relay.
        listening = await pooled_vm.guest.run(["ss", "-Hltnup"], 20.0)
        assert "chrom" not in listening.stdout_text(), listening.stdout_text()
        command_lines = await pooled_vm.guest.run(["pgrep", "-a", "chromium"], 20.0)
        assert "--remote-debugging-pipe" in command_lines.stdout_text()
        assert "--remote-debugging-port" not in command_lines.stdout_text()

        # The reference approved the card; the next restore brings back the board before it.
        await restored_runs_match_local(TASK, pooled_vm, store, first_null)
