"""Files written whole or not at all.

Every file DeskLoop writes that a reader may open while it is written, or that a
crash must not leave half-written (frames, proofs, reports, exports, caches, a
recording's snapshots), goes through `write_atomic`: the bytes go to a temporary file
beside the target, which is then renamed over it. A reader sees the old file or the
new one; a failure leaves neither a half-written target nor the temporary file.

No fsync: like the database (synchronous=NORMAL) this survives a killed process, not a
power cut, and an fsync per frame would cost more than the frame's write.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomic(target: Path, data: bytes, *, mode: int = 0o644) -> None:
    """Write `data` to `target` whole or not at all, with permissions `mode` (0o600 for
    what only its owner may read: caches, frames). The folder must exist."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            os.fchmod(file.fileno(), mode)
            file.write(data)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
