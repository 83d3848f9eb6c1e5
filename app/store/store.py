"""The Store: the only writer of the SQLite database, and its reader.

Assembled from its parts, each a module of this package: `base` (the connection, its
lock, the writer thread behind `off_loop`, the frame directory), `writes`,
`queries`, `judgements` (the model judge's questions and answers), `liveness` (who
runs an episode; recovering those whose runner died) and `transfer` (a whole episode
out of one database and into another) and `notes` (a researcher's note and tags).
The dataclasses read back are `records`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from app.store.archive import Archives
from app.store.base import MEMORY, LockWait
from app.store.judgements import Judgements
from app.store.liveness import Liveness
from app.store.notes import Notes
from app.store.transfer import Transfer
from app.store.writes import Writes


class Store(Writes, Judgements, Liveness, Transfer, Archives, Notes):
    """The episode database at `path` and its frames under `<path's dir>/frames/<id>/`,
    a folder of this database's own (`id` is random, recorded in the database).

    `Store(':memory:')` (or `Store.memory()`) keeps the database in memory and its
    frames in a temporary directory removed by `close()`. A Store may be used from
    several threads; calls are serialized. Code on an asyncio loop awaits
    `store.off_loop(store.method, ...)` instead of calling `store.method(...)`, so
    that a slow write never stalls the loop.

    Opening marks the episodes of runners that died on this host as errors
    (`recover_interrupted`).

    A write waits for another process's write lock as long as it is held, calling
    `on_lock_wait` (default: a warning on the `app.store` logger) once it has waited
    LOCK_REPORT_SECONDS and then every LOCK_REPORT_EVERY_SECONDS; `stop_waiting`
    bounds the waits of a process asked to stop (see `app.store.base`).
    """

    def __init__(
        self, path: Path | str, *, on_lock_wait: Callable[[LockWait], None] | None = None
    ) -> None:
        super().__init__(path, on_lock_wait=on_lock_wait)
        try:
            self.recover_interrupted()
        except BaseException:
            self.close()
            raise

    @classmethod
    def memory(cls) -> Store:
        return cls(MEMORY)
