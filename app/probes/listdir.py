"""`listdir`: the entries of one guest folder, via the guest's `find`.

Result: {"entries": [{"name": str, "type": "file" | "dir" | "link" | "other",
"size": int}, ...]}, not recursive, at most MAX_ENTRIES (a folder with more is a failed
probe, so a check never counts a truncated listing).

As with `stat`, the folder is first asked through the guest's confined `exists`, so on
the local backend a folder outside the desktop's home is a failed probe.
"""

from __future__ import annotations

from app.checks.base import ProbeResult
from app.desktops.base import Guest
from app.probes.registry import prober

MAX_ENTRIES = 10_000
_TYPES = {"f": "file", "d": "dir", "l": "link"}


@prober("listdir")
async def list_folder(guest: Guest, path: str) -> ProbeResult:
    if not await guest.exists(path):
        return ProbeResult.not_found()
    # NUL-separated records: a file name may hold any byte but '/' and NUL.
    folder = path.rstrip("/") + "/"
    result = await guest.run(
        ["find", folder, "-mindepth", "1", "-maxdepth", "1", "-printf", r"%y %s %f\0"],
        timeout=30,
    )
    if not result.ok:
        message = result.stderr.decode("utf-8", "replace").strip()
        return ProbeResult.failure(f"find failed: {message or result.returncode}")
    records = [r for r in result.stdout.split(b"\0") if r]
    if len(records) > MAX_ENTRIES:
        return ProbeResult.failure(f"{path} holds {len(records)} entries, over {MAX_ENTRIES}")
    entries = []
    for record in records:
        kind, size, name = record.decode("utf-8", "replace").split(" ", 2)
        entries.append({"name": name, "type": _TYPES.get(kind, "other"), "size": int(size)})
    return ProbeResult({"entries": entries})
