"""The episode store: SQLite database (the system of record) and frame files.

The only writer of the database. Its interface is what this file exports: the
`Store`, the records it reads back (one per table; a check reads back as the
`app.core.outcomes.CheckOutcome` it was recorded from), and `frame_png` for the
frames it saves. The words it stores (statuses, kinds, sources...) are
`app.core.vocabulary`'s, a phase's trigger is `app.core.triggers`'s. May import only
`app.core`.
"""

import sys


def _import_sqlite_utils() -> None:
    """Import sqlite-utils without pandas. sqlite-utils imports pandas whenever it is
    installed (the lab's environment has it for other tools), only to map a pandas
    Timestamp to TEXT, which the store never writes; pandas took 0.25 s of CPU, more
    than the rest of the store, at every start of the TUI and of commands that read
    the store. A None in sys.modules makes its `import pandas` fail as if absent; the
    entry is removed afterwards, so pandas imports normally for anyone who wants it."""
    if "sqlite_utils" in sys.modules or "pandas" in sys.modules:
        return
    sys.modules["pandas"] = None  # type: ignore[assignment]
    try:
        import sqlite_utils  # noqa: F401
    finally:
        if sys.modules.get("pandas", 0) is None:
            del sys.modules["pandas"]


_import_sqlite_utils()

from app.store.archive import ArchiveRecord, RescoreRecord  # noqa: E402
from app.store.base import LockWait  # noqa: E402
from app.store.frames import frame_png  # noqa: E402
from app.store.notes import normalize_tag  # noqa: E402
from app.store.records import (  # noqa: E402
    BatchRecord,
    EpisodeRecord,
    MessageRecord,
    PhaseRecord,
    StepRecord,
)
from app.store.store import Store  # noqa: E402

__all__ = [
    "ArchiveRecord",
    "BatchRecord",
    "EpisodeRecord",
    "LockWait",
    "MessageRecord",
    "PhaseRecord",
    "RescoreRecord",
    "StepRecord",
    "Store",
    "frame_png",
    "normalize_tag",
]
