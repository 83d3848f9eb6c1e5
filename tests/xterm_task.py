"""A tiny real task for tests about the runner's own logic: an xterm on a real
desktop, and a proof file the agent makes by typing a shell command into it.

The xterm sits at the top left (`-geometry 80x20+0+0`), so a test that clicks it to
give it the keys (through noVNC, say) knows where it is: the window manager centres a
window placed nowhere, and a click on the root beside it took the focus away."""

from __future__ import annotations

from pathlib import Path

from app.desktops.libvirt import LibvirtDesktop
from app.desktops.xwindows import wait_window

XTERM_TASK = """\
id: xterm-proof
app: gimp
level: L1
title: Make a proof file
instruction: Create the file ~/proof.txt.
setup:
  - launch: [xterm, -geometry, 80x20+0+0]
  - wait_window: {{class: XTerm, timeout: 60}}
budget: {{steps: {steps}, seconds: {seconds}}}
evaluate:
  all:
    - {{check: file_exists, path: ~/proof.txt}}
"""


REFERENCE = """\
kind: demonstration
steps:
  - type: "touch ~/proof.txt\\n"
  - done
"""


def write_xterm_task(
    root: Path, *, steps: int = 10, seconds: int = 120, reference: bool = False
) -> Path:
    """Write the task as `root/tasks/gimp/xterm-proof.yaml` and return its path; with
    `reference`, a reference script that solves it beside it (the TUI's start dialog
    then offers the reference agent first)."""
    folder = root / "tasks" / "gimp"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "xterm-proof.yaml"
    text = XTERM_TASK.format(steps=steps, seconds=seconds)
    if reference:
        text += "reference: xterm-proof-reference.yaml\n"
        (folder / "xterm-proof-reference.yaml").write_text(REFERENCE)
    path.write_text(text)
    return path


async def open_xterm(desktop: LibvirtDesktop) -> None:
    """Open the test xterm on a VM desktop: the setup of the VM tests' start state."""
    # allowTitleOps off: the guest's bash would retitle the window "user@deskloop: ~".
    await desktop.guest.launch(
        ["xterm", "-xrm", "*allowTitleOps: false", "-geometry", "80x20+100+100",
         "-title", "deskloop-term"]
    )  # fmt: skip
    await wait_window(desktop.guest, name="deskloop-term", timeout=120)
