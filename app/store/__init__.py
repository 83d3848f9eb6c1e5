"""The episode store: SQLite database (the system of record) and frame files.

The only writer of the database. Its interface is what this file exports: the
`Store`, the records it reads back (one per table; a check reads back as the
`app.core.outcomes.CheckOutcome` it was recorded from), and `frame_png` for the
frames it saves. The words it stores (statuses, kinds, sources...) are
`app.core.vocabulary`'s, a phase's trigger is `app.core.triggers`'s. May import only
`app.core`.
"""

from app.store.archive import ArchiveRecord, RescoreRecord
from app.store.base import LockWait
from app.store.frames import frame_png
from app.store.notes import normalize_tag
from app.store.records import (
    BatchRecord,
    EpisodeRecord,
    MessageRecord,
    PhaseRecord,
    StepRecord,
)
from app.store.store import Store

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
