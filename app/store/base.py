"""The open database under every part of the Store: its one connection, the lock that
serializes calls on it, the writer thread, the frame directory, and their lifecycle.

One connection, shared by every thread (check_same_thread=False) and guarded by one
re-entrant lock, because an in-memory database exists only inside its connection and
because SQLite admits one writer per database anyway. Callers on an asyncio loop (the
runner, and with it the TUI and batches) hand their calls to `off_loop`, which runs
them on the store's own thread: a write may wait up to BUSY_TIMEOUT_SECONDS for
another process's lock, or on a slow disk, and a loop that waited with it would
freeze a TUI or every episode of a batch.
"""

from __future__ import annotations

import asyncio
import functools
import shutil
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, ParamSpec, Self, TypeVar

from sqlite_utils import Database

from app.core.errors import StoreError
from app.store.frames import FRAMES_FOLDER, FrameDir
from app.store.schema import migrate

MEMORY = ":memory:"
# How long a write waits for another process's write lock (a TUI recovering
# episodes, a second runner) before failing.
BUSY_TIMEOUT_SECONDS = 5.0

P = ParamSpec("P")
T = TypeVar("T")


def _switch_to_wal(conn: sqlite3.Connection) -> str:
    """Set WAL journal mode and return the mode SQLite reports.

    Switching a fresh database to WAL needs an exclusive lock, and when two processes
    switch at once SQLite answers one of them "database is locked" at once, without
    waiting on the busy timeout (waiting could deadlock: each holds a shared lock the
    other needs gone). SQLite's advice for that answer is to try again, so we do,
    for as long as the busy timeout would have waited.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
    pause = 0.005
    while True:
        try:
            return str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode != sqlite3.SQLITE_BUSY or time.monotonic() > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def end_pending_phases(conn: sqlite3.Connection, episode_id: int) -> None:
    """An ended episode delivers nothing more: its pending phases never will be."""
    conn.execute(
        "UPDATE phases SET status = 'never_delivered' WHERE episode_id = ? AND status = 'pending'",
        (episode_id,),
    )


class StoreBase:
    """The database at `path` (or ':memory:') and its frames; see `Store`."""

    def __init__(self, path: Path | str) -> None:
        self.is_memory = str(path) == MEMORY
        self.path = MEMORY if self.is_memory else str(Path(path).expanduser())
        self._lock = threading.RLock()
        self._closed = False
        # Guards _closing and _writer apart from _lock: handing a call over must not
        # wait for the call the writer thread is running (it holds _lock meanwhile).
        self._handover = threading.Lock()
        self._closing = False
        self._writer: ThreadPoolExecutor | None = None
        self._tmp_root: Path | None = None
        if self.is_memory:
            self._tmp_root = Path(tempfile.mkdtemp(prefix="deskloop-frames-"))
            self.root = self._tmp_root
        else:
            db_path = Path(self.path)
            self.root = db_path.parent
            if db_path.is_dir():
                raise StoreError(f"{self.path}: is a directory, not a database file")
            try:
                self.root.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(
                    f"{self.path}: cannot create its directory {self.root}: {exc.strerror or exc}"
                ) from None
        self._conn: sqlite3.Connection | None = None
        try:
            self._conn = self._open()
            self.frames = FrameDir(self.root / self._frames_folder(self._conn), self.root)
        except BaseException:
            self.close()
            raise

    def _open(self) -> sqlite3.Connection:
        try:
            # isolation_level=None: no implicit transactions; every transaction in
            # the store is an explicit BEGIN IMMEDIATE ... COMMIT.
            conn = sqlite3.connect(
                self.path,
                isolation_level=None,
                check_same_thread=False,
                timeout=BUSY_TIMEOUT_SECONDS,
            )
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot open the database: {exc}") from None
        try:
            conn.execute("PRAGMA foreign_keys = ON")
            if not self.is_memory:
                mode = _switch_to_wal(conn)
                if mode != "wal":
                    raise StoreError(f"{self.path}: cannot use WAL journal mode (got {mode!r})")
            conn.execute("PRAGMA synchronous = NORMAL")
            migrate(Database(conn, execute_plugins=False))
        except sqlite3.Error as exc:
            conn.close()
            raise StoreError(f"{self.path}: cannot open the database: {exc}") from None
        except BaseException:
            conn.close()
            raise
        return conn

    def _frames_folder(self, conn: sqlite3.Connection) -> str:
        """This database's own frames folder, relative to its folder (migration 0006)."""
        row = conn.execute("SELECT value FROM store_info WHERE key = 'frames_folder'").fetchone()
        folder = row[0] if row else None
        # Checked, not trusted: the path comes from a file anyone may have edited, and a
        # frame must never be written outside the database's folder.
        if not isinstance(folder, str) or not FRAMES_FOLDER.fullmatch(folder):
            raise StoreError(
                f"{self.path}: store_info.frames_folder is {folder!r}; "
                "expected 'frames/' and 12 hex digits"
            )
        return folder

    # -- lifecycle -----------------------------------------------------------

    def close(self) -> None:
        """Close the database once the calls handed to `off_loop` are done."""
        with self._handover:
            self._closing = True  # off_loop takes no more calls
            writer = self._writer
        if writer is not None:
            # Outside the lock: the calls still queued need it to finish.
            writer.shutdown(wait=True)
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._conn is not None:
                self._conn.close()
            if self._tmp_root is not None:
                shutil.rmtree(self._tmp_root, ignore_errors=True)

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

    # -- calls from an asyncio loop ---------------------------------------------

    def off_loop(
        self, call: Callable[P, T], *args: P.args, **kwargs: P.kwargs
    ) -> asyncio.Future[T]:
        """Hand `call` (a method of this store, or a function of the store's methods) to
        the store's thread; await the future returned for its result. Call it on the
        event loop's thread.

        Calls run one at a time in the order they were handed over, which is the order
        of the `off_loop` calls, not of the awaits: a handler that cannot await (a
        runner's event callback) still hands over a write that lands before the
        writes after it. A call handed over runs to its end even when the awaiting
        task is cancelled meanwhile, so a cancelled episode's last step is still
        written before its end is.

        Raises:
            StoreError: the store is closing (at once, not when awaited).
        """
        with self._handover:
            if self._closing:
                raise StoreError(f"{self.path}: the store is closed")
            if self._writer is None:
                self._writer = ThreadPoolExecutor(1, thread_name_prefix="deskloop-store")
            future = self._writer.submit(functools.partial(call, *args, **kwargs))
        # shield: a cancelled await must not cancel a write not yet begun, or it would
        # be lost while the writes after it (the episode's end) are not.
        return asyncio.shield(asyncio.wrap_future(future))

    # -- serialized access -----------------------------------------------------

    @contextmanager
    def _op(self, doing: str) -> Iterator[sqlite3.Connection]:
        """Hold the lock and turn sqlite errors into a StoreError naming the database."""
        with self._lock:
            if self._closed or self._conn is None:
                raise StoreError(f"{self.path}: {doing}: the store is closed")
            try:
                yield self._conn
            except sqlite3.Error as exc:
                raise StoreError(f"{self.path}: {doing} failed: {exc}") from None

    @contextmanager
    def _write(self, doing: str) -> Iterator[sqlite3.Connection]:
        """One committed transaction; rolled back if anything in the block raises."""
        with self._op(doing) as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                if conn.in_transaction:
                    conn.rollback()
                raise
            conn.execute("COMMIT")

    def _rows(self, doing: str, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self._op(doing) as conn:
            cursor = conn.cursor()
            cursor.row_factory = sqlite3.Row
            return cursor.execute(sql, params).fetchall()
