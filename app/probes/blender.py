"""`blender_scene`: a .blend file's scene as JSON, dumped by Blender itself in the guest.

The dump script (guest_scripts/blender_dump.py) is written into the guest at
scoring time under a random folder name in the guest's home, run with Blender in
background mode, and removed with its output afterwards: during the episode it
does not exist, so an agent can neither read nor change what scoring looks at.
`--disable-autoexec` keeps Python embedded in an agent-made .blend from running.

Result: the dump's JSON (see docs/checks-blender.md for its shape).
"""

from __future__ import annotations

import contextlib
import json
import secrets
from pathlib import Path

from app.checks.base import ProbeResult
from app.core.errors import GuestError
from app.desktops.base import Guest
from app.probes.registry import prober

DUMP_SCRIPT = Path(__file__).with_name("guest_scripts") / "blender_dump.py"
BLENDER = "blender"
DUMP_TIMEOUT = 120.0
"""Seconds for one dump: ~1 s warm, ~2 s cold, more on a loaded 2-core machine."""
MAX_DUMP_BYTES = 16 * 1024 * 1024


def dump_argv(blend: str, script: str, out: str) -> list[str]:
    """Blender's command line for a dump. Order matters: the file and
    `--python-exit-code` must come before `--python`, or a failing script exits 0."""
    return [
        BLENDER,
        "-b",
        "--factory-startup",
        "--disable-autoexec",
        blend,
        "--python-exit-code",
        "3",
        "--python",
        script,
        "--",
        out,
    ]


def _tail(data: bytes, limit: int = 400) -> str:
    text = data.decode("utf-8", "replace").strip()
    return text if len(text) <= limit else "…" + text[-limit:]


@prober("blender_scene")
async def blender_scene(guest: Guest, path: str) -> ProbeResult:
    if not await guest.exists(path):
        return ProbeResult.not_found()
    workdir = f"~/.cache/deskloop-probe-{secrets.token_hex(8)}"
    script = f"{workdir}/dump.py"
    out = f"{workdir}/scene.json"
    try:
        await guest.write_file(script, DUMP_SCRIPT.read_bytes())
        result = await guest.run(dump_argv(path, script, out), timeout=DUMP_TIMEOUT)
        if result.returncode == 1:
            # Blender's own exit code for a file it cannot load; the script never ran.
            return ProbeResult.failure(
                f"Blender could not open {path} as a .blend file: {_tail(result.stdout)}"
            )
        if not result.ok:
            return ProbeResult.failure(
                f"the Blender dump of {path} failed (exit {result.returncode}): "
                f"{_tail(result.stderr) or _tail(result.stdout)}"
            )
        if not await guest.exists(out):
            return ProbeResult.failure(f"the Blender dump of {path} wrote no output")
        raw = await guest.read_file(out, MAX_DUMP_BYTES)
        try:
            return ProbeResult(json.loads(raw))
        except json.JSONDecodeError as exc:
            return ProbeResult.failure(f"the Blender dump of {path} is not JSON: {exc}")
    except GuestError as exc:
        return ProbeResult.failure(f"the Blender dump of {path} could not run: {exc}")
    finally:
        # A leftover folder only costs disk; the score is already made.
        with contextlib.suppress(GuestError):
            await guest.run(["rm", "-rf", "--", workdir], timeout=30)
