"""The Store: the only writer of the SQLite database, and its reader.

Composed of parts, each a class of this package over the one connection they share
(`base.SharedConnection`: the connection, its lock, the writer thread behind
`off_loop`, the frame directory): `writes` (an episode's, from its start to its end,
and its batch's), `scores` (an episode's score and its phases' checks), `queries`,
`judgements` (the model judge's questions and answers), `liveness` (who runs an
episode; recovering those whose runner died), `archive` (blobs, archives, rescores,
integrity flags), `transfer` (a whole episode out of one database and into another)
`notes` (a researcher's note and tags) and `requests` (pause, resume, abort asked of a
running episode by another process). One part is reached by name instead:
`store.studies` (a study's plan, participants, trials and answers), whose records are
its own. The dataclasses read back are `records`;
the column values the parts write are made by `values`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Self

from app.store.archive import Archives
from app.store.base import MEMORY, LockWait, SharedConnection
from app.store.judgements import Judgements
from app.store.liveness import Liveness
from app.store.notes import Notes
from app.store.queries import Queries
from app.store.requests import Requests
from app.store.scores import Scores
from app.store.studies import Studies
from app.store.transfer import Transfer
from app.store.writes import Writes


class Store:
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
        db = self.db = SharedConnection(path, on_lock_wait=on_lock_wait)
        self.path = db.path
        self.root = db.root
        """The database's folder: its frames, archive and caches live under it."""
        self.frames = db.frames
        self.close = db.close
        self.stop_waiting = db.stop_waiting
        self.off_loop = db.off_loop
        # The parts' methods are the Store's, bound here: a caller says
        # `store.record_step(...)` without knowing which part owns it. One line each,
        # not a loop over names with setattr: these assignments are how mypy knows each
        # method's signature on a Store (and that it exists at all).
        writes = Writes(db)
        self.start_episode = writes.start_episode
        self.record_setup = writes.record_setup
        self.init_phases = writes.init_phases
        self.record_message = writes.record_message
        self.record_step = writes.record_step
        self.save_frame = writes.save_frame
        self.mark_phase_delivered = writes.mark_phase_delivered
        self.finish_episode = writes.finish_episode
        self.create_batch = writes.create_batch
        self.tag_batch_slot = writes.tag_batch_slot
        self.studies = Studies(db)
        """A study's plan, participants, trials and answers (`app.store.studies`)."""
        scores = Scores(db)
        self.record_score = scores.record_score
        self.record_phase_checks = scores.record_phase_checks
        queries = Queries(db)
        self.list_episodes = queries.list_episodes
        self.get_episode = queries.get_episode
        self.steps = queries.steps
        self.messages = queries.messages
        self.phases = queries.phases
        self.checks = queries.checks
        self.frame_path = queries.frame_path
        self.get_batch = queries.get_batch
        self.list_batches = queries.list_batches
        self.integrity_ok = queries.integrity_ok
        self.applied_migrations = queries.applied_migrations
        judgements = Judgements(db)
        self.record_judgements = judgements.record_judgements
        self.judgements = judgements.judgements
        self._archives = archives = Archives(db)
        self.save_blob = archives.save_blob
        self.read_blob = archives.read_blob
        self.record_archive = archives.record_archive
        self.get_archive = archives.get_archive
        self.record_rescore = archives.record_rescore
        self.rescores = archives.rescores
        self.latest_rescores = archives.latest_rescores
        self.record_flags = archives.record_flags
        self.flags = archives.flags
        self.flagged_episodes = archives.flagged_episodes
        transfer = Transfer(db, archives)
        self.export_episode = transfer.export_episode
        self.import_episode = transfer.import_episode
        self.annotate_episode = Notes(db).annotate_episode
        requests = Requests(db)
        self.request_episode = requests.request_episode
        self.episode_requests = requests.episode_requests
        self.recover_interrupted = Liveness(db).recover_interrupted
        try:
            self.recover_interrupted()
        except BaseException:
            self.close()
            raise

    @classmethod
    def memory(cls) -> Store:
        return cls(MEMORY)

    @property
    def archive_root(self) -> Path:
        """This database's blob folder: `archive/<id>/`, the id of its frames folder."""
        return self._archives.archive_root

    @property
    def gave_up(self) -> bool:
        """Whether a write gave up waiting for a lock (after `stop_waiting`)."""
        return self.db.gave_up

    @property
    def lock_waiting(self) -> bool:
        """Whether a write is waiting for another process's lock now."""
        return self.db.lock_waiting

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({self.path!r})"
