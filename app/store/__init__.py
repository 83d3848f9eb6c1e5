"""The episode store: SQLite database (the system of record) and frame files.

The only writer of the database. May import only `app.core`.
"""

from app.store.frames import encode_png
from app.store.schema import (
    AgentMessageKind,
    EndReason,
    EpisodeStatus,
    MessageKind,
    MessageSource,
    PhaseKind,
    PhaseStatus,
    Role,
    UserMessageKind,
    UserMode,
)
from app.store.store import (
    CheckRecord,
    EpisodeRecord,
    MessageRecord,
    PhaseRecord,
    StepRecord,
    Store,
    now_utc,
)

__all__ = [
    "AgentMessageKind",
    "CheckRecord",
    "EndReason",
    "EpisodeRecord",
    "EpisodeStatus",
    "MessageKind",
    "MessageRecord",
    "MessageSource",
    "PhaseKind",
    "PhaseRecord",
    "PhaseStatus",
    "Role",
    "StepRecord",
    "Store",
    "UserMessageKind",
    "UserMode",
    "encode_png",
    "now_utc",
]
