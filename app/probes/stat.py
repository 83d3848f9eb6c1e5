"""`stat`: a file's size and modification time, via the guest's `stat` command.

Result: {"size": int, "mtime": float (Unix time), "type": "regular file" | ...}.

The path is first asked through the guest's confined `exists`, so on the local
backend a path outside the desktop's home (or a symlink leading out of it) is a
failed probe that names the path, never a stat of the host's files.
"""

from __future__ import annotations

from app.checks.base import ProbeResult
from app.desktops.base import Guest
from app.probes.registry import prober


@prober("stat")
async def stat_file(guest: Guest, path: str) -> ProbeResult:
    if not await guest.exists(path):
        return ProbeResult.not_found()
    result = await guest.run(["stat", "--format=%s %.9Y %F", "--", path], timeout=15)
    if not result.ok:
        message = result.stderr.decode("utf-8", "replace").strip()
        if "No such file" in message:
            return ProbeResult.not_found()
        return ProbeResult.failure(f"stat failed: {message or result.returncode}")
    size, mtime, kind = result.stdout_text().strip().split(" ", 2)
    return ProbeResult({"size": int(size), "mtime": float(mtime), "type": kind})
