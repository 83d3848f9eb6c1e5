"""The episode store: SQLite database (the system of record) and frame files.

The only writer of the database. Its interface is what this file exports: the
`Store`, the records it reads back (one per table), and `encode_png` for the frames
it saves. The words it stores (statuses, kinds, sources...) are
`app.core.vocabulary`'s. May import only `app.core`.
"""

from app.store.frames import encode_png
from app.store.records import (
    BatchRecord,
    CheckRecord,
    EpisodeRecord,
    MessageRecord,
    PhaseRecord,
    StepRecord,
)
from app.store.store import Store

__all__ = [
    "BatchRecord",
    "CheckRecord",
    "EpisodeRecord",
    "MessageRecord",
    "PhaseRecord",
    "StepRecord",
    "Store",
    "encode_png",
]
