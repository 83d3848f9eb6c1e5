"""The open database under every part of the Store: its one connection, the lock that
serializes calls on it, the writer thread, the frame directory, and their lifecycle.

One connection, shared by every thread (check_same_thread=False) and guarded by one
re-entrant lock, because an in-memory database exists only inside its connection and
because SQLite admits one writer per database anyway. Callers on an asyncio loop (the
runner, and with it the TUI and batches) hand their calls to `off_loop`, which runs
them on the store's own thread: a write may wait for another process's lock, or on a
slow disk, and a loop that waited with it would freeze a TUI or every episode of a
batch.

Another process's write lock (a second runner, a TUI recovering episodes, someone's
`sqlite3` shell in the middle of a transaction) never fails a write: a write waits
for the lock as long as it is held, because an episode's steps and its end must not
be lost to someone else's transaction. After LOCK_REPORT_SECONDS it reports the wait
(`on_lock_wait`: the database, what it is writing, how long, which pids hold the
lock) and again every LOCK_REPORT_EVERY_SECONDS. The only bound is `stop_waiting`,
for a process asked to stop: its waits give up then, the episode it ran stays
'running' while the process lives, and the next open after it exits marks it
interrupted (`liveness`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import shutil
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from sqlite_utils import Database

from app.core.errors import StoreError
from app.core.procfs import process_name, write_lock_holders, write_owner_file
from app.store.frames import FRAMES_FOLDER, FrameDir
from app.store.schema import migrate

MEMORY = ":memory:"
# How long SQLite itself waits for another process's lock (its busy timeout): what a
# read, opening and migrating wait before failing, and a write's first wait before
# it is reported and goes on waiting.
BUSY_TIMEOUT_SECONDS = 5.0
LOCK_REPORT_SECONDS = BUSY_TIMEOUT_SECONDS
"""A write that has waited this long for another process's lock says so."""
LOCK_REPORT_EVERY_SECONDS = 30.0
"""And then again this often while it still waits."""
LOCK_POLL_SECONDS = 0.25
"""Each try for the lock after the first waits this long, so that `stop_waiting` is
heard within it."""
# The WAL write lock is this byte of the -shm file (sqlite's WALINDEX_LOCK_OFFSET):
# whoever holds a write lock on it is in the middle of a write transaction.
WAL_WRITE_LOCK_BYTE = 120

log = logging.getLogger("app.store")

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


@dataclass(frozen=True)
class LockWait:
    """A write waiting for another process's lock on the database, as reported."""

    path: str
    doing: str
    """What the write is, e.g. 'recording step 3 of episode 7'."""
    waited: float
    """Seconds waited so far."""
    holders: tuple[int, ...]
    """The pids holding the write lock, where /proc/locks says (often it does)."""

    def describe(self) -> str:
        if self.holders:
            names = ", ".join(f"pid {pid} ({process_name(pid) or '?'})" for pid in self.holders)
            who = f"another process ({names})"
        else:
            who = "another process"
        return (
            f"{self.path}: {who} holds the database's write lock; {self.doing} has waited "
            f"{self.waited:.0f} s and waits on until it is released"
        )


def log_lock_wait(wait: LockWait) -> None:
    """The default report of a lock wait: a warning on the `app.store` logger (which,
    with logging not configured, Python prints on stderr)."""
    log.warning("%s", wait.describe())


def end_pending_phases(conn: sqlite3.Connection, episode_id: int) -> None:
    """An ended episode delivers nothing more: its pending phases never will be."""
    conn.execute(
        "UPDATE phases SET status = 'never_delivered' WHERE episode_id = ? AND status = 'pending'",
        (episode_id,),
    )


class SharedConnection:
    """The database at `path` (or ':memory:') and its frames, which every part of the
    `Store` works over; see `Store`."""

    def __init__(
        self, path: Path | str, *, on_lock_wait: Callable[[LockWait], None] | None = None
    ) -> None:
        self.is_memory = str(path) == MEMORY
        # Called on the thread whose write waits (the store's, for `off_loop` calls).
        self.on_lock_wait = on_lock_wait or log_lock_wait
        # Monotonic time after which waits for a lock give up; None: never.
        self._give_up_at: float | None = None
        self.gave_up = False
        """Whether a write gave up waiting for a lock (after `stop_waiting`)."""
        self.lock_waiting = False
        """Whether a write is waiting for another process's lock now."""
        self.path = MEMORY if self.is_memory else str(Path(path).expanduser())
        self.lock = threading.RLock()
        self._closed = False
        # Guards _closing and _writer apart from lock: handing a call over must not
        # wait for the call the writer thread is running (it holds lock meanwhile).
        self._handover = threading.Lock()
        self._closing = False
        self._writer: ThreadPoolExecutor | None = None
        self._tmp_root: Path | None = None
        if self.is_memory:
            self._tmp_root = Path(tempfile.mkdtemp(prefix="deskloop-frames-"))
            # Removed on close; named as this process's for a crash that skips that.
            write_owner_file(self._tmp_root)
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
        with self.lock:
            if self._closed:
                return
            self._closed = True
            if self._conn is not None:
                self._conn.close()
            if self._tmp_root is not None:
                shutil.rmtree(self._tmp_root, ignore_errors=True)

    def stop_waiting(self, within: float = 0.0) -> None:
        """Let waits for another process's lock give up `within` seconds from now (a
        process asked to stop; callable from any thread, e.g. a signal handler).

        A write that gives up raises StoreError; the episode it was part of stays
        'running' until this process has exited and the database is opened again,
        which marks it interrupted. An earlier deadline is kept.
        """
        deadline = time.monotonic() + within
        current = self._give_up_at
        if current is None or deadline < current:
            self._give_up_at = deadline

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
        handed = asyncio.wrap_future(future)
        handed.add_done_callback(_retrieved)
        return asyncio.shield(handed)

    # -- serialized access -----------------------------------------------------

    @contextmanager
    def op(self, doing: str) -> Iterator[sqlite3.Connection]:
        """Hold the lock and turn sqlite errors into a StoreError naming the database."""
        with self.lock:
            if self._closed or self._conn is None:
                raise StoreError(f"{self.path}: {doing}: the store is closed")
            try:
                yield self._conn
            except sqlite3.Error as exc:
                raise StoreError(f"{self.path}: {doing} failed: {exc}") from None

    @contextmanager
    def write(self, doing: str) -> Iterator[sqlite3.Connection]:
        """One committed transaction; rolled back if anything in the block raises."""
        with self.op(doing) as conn:
            self._begin(conn, doing)
            try:
                yield conn
            except BaseException:
                if conn.in_transaction:
                    conn.rollback()
                raise
            conn.execute("COMMIT")

    def rows(self, doing: str, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self.op(doing) as conn:
            cursor = conn.cursor()
            cursor.row_factory = sqlite3.Row
            return cursor.execute(sql, params).fetchall()

    def _begin(self, conn: sqlite3.Connection, doing: str) -> None:
        """BEGIN IMMEDIATE, waiting for another process's write lock as long as it is
        held (reported through `on_lock_wait`), until `stop_waiting`'s deadline."""
        started = time.monotonic()
        report_at = started + LOCK_REPORT_SECONDS
        polling = False
        try:
            while True:
                give_up = self._give_up_at
                if give_up is not None or polling:
                    # Short tries from now on, so that a stop is heard within one.
                    left = LOCK_POLL_SECONDS if give_up is None else give_up - time.monotonic()
                    slice_ms = int(1000 * max(0.0, min(LOCK_POLL_SECONDS, left)))
                    conn.execute(f"PRAGMA busy_timeout = {slice_ms}")
                    polling = True
                tried = time.monotonic()
                try:
                    # The first try waits SQLite's own busy timeout, inside SQLite.
                    conn.execute("BEGIN IMMEDIATE")
                    return
                except sqlite3.OperationalError as exc:
                    if exc.sqlite_errorcode != sqlite3.SQLITE_BUSY:
                        raise
                polling = self.lock_waiting = True
                now = time.monotonic()
                if now - tried < LOCK_POLL_SECONDS / 2 and (give_up is None or now < give_up):
                    # SQLite answered busy without waiting: pause instead of spinning.
                    time.sleep(LOCK_POLL_SECONDS / 2)
                    now = time.monotonic()
                give_up = self._give_up_at
                if give_up is not None and now >= give_up:
                    self.gave_up = True
                    raise StoreError(
                        f"{self.path}: {doing}: gave up waiting {now - started:.0f} s for "
                        f"the write lock {self._holders_text()} holds: this process is "
                        "stopping"
                    )
                if now >= report_at:
                    report_at = now + LOCK_REPORT_EVERY_SECONDS
                    self._report(LockWait(self.path, doing, now - started, self._holders()))
        finally:
            self.lock_waiting = False
            if polling:
                conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")

    def _holders(self) -> tuple[int, ...]:
        if self.is_memory:
            return ()
        return tuple(write_lock_holders(self.path + "-shm", WAL_WRITE_LOCK_BYTE))

    def _holders_text(self) -> str:
        holders = self._holders()
        return "another process" if not holders else "pid " + ", ".join(map(str, holders))

    def _report(self, wait: LockWait) -> None:
        try:
            self.on_lock_wait(wait)
        except Exception:
            # A report that fails (a closed stderr) must not fail the write it is about.
            log.debug("reporting a lock wait failed", exc_info=True)


def _retrieved(future: asyncio.Future[Any]) -> None:
    """Mark a handed-over call's error as seen. When its awaiter was cancelled (the
    process is stopping) nobody awaits it any more; the store reports such a write
    itself (`gave_up`), and asyncio would otherwise log the error with a traceback."""
    if not future.cancelled():
        future.exception()


class Part:
    """A part of the `Store`: its methods over the connection all parts share."""

    def __init__(self, db: SharedConnection) -> None:
        self.db = db
