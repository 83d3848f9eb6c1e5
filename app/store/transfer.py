"""Moving a whole episode from one database to another: `export_episode` makes an
`EpisodeBundle` (plain rows and frame bytes, picklable), `import_episode` writes it.

A batch spread over Ray nodes (`app.batch.ray_nodes`) runs each episode on a node,
recorded there in a throw-away database, and brings it back to the driver, whose
database stays the only one written for the batch. Rows are copied column by column
as the schema has them (both sides run the same code, so the same migrations), with
the ids remapped: the episode's id, its messages' ids (steps point at their active
message) and its frames' paths (`frames/<db>/<episode>/<name>.png` on each side).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from app.core.errors import StoreError
from app.store.archive import Archives
from app.store.base import Part, SharedConnection
from app.store.liveness import this_runner

CHILD_TABLES = (
    "phases",
    "messages",
    "steps",
    "checks",
    "judgements",
    "archives",
    "rescores",
    "integrity_flags",
    "episode_requests",
)
"""The tables that hold an episode's rows (by `episode_id`), in the order they are
written: steps point at messages and phases. A table keyed by `episode_id` that is not
here does not travel (tests/store/test_store_transfer.py fails when one is missing)."""
LINKING_TABLES = ("trial_tries",)
"""Tables that point at an episode without being part of it (a study's try names the
episode that recorded it): they stay in their database, and whoever moves an episode
links it again under its new id."""


@dataclass
class EpisodeBundle:
    """An episode's rows and frames, out of one database and into another."""

    episode: dict[str, Any]
    """The episodes row (its `id` is the source database's)."""
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Each child table's rows of the episode."""
    frames: dict[str, bytes] = field(default_factory=dict)
    """The episode's frame files by name (`00003`, `final`, `setup-failed`...)."""
    frames_prefix: str = ""
    """The folder its frame paths start with in the source database."""
    blobs: dict[str, bytes] = field(default_factory=dict)
    """The final-state archive's blobs by sha256 (its manifest names them)."""


class Transfer(Part):
    """`Store`'s export and import of whole episodes, with their archives' blobs."""

    def __init__(self, db: SharedConnection, archives: Archives) -> None:
        super().__init__(db)
        self.archives = archives

    def export_episode(self, episode_id: int, skip_frames: Collection[str] = ()) -> EpisodeBundle:
        """Everything recorded of an episode so far, with its frame files' bytes, but
        those named in `skip_frames` (sent with an earlier export).

        Raises:
            StoreError: no such episode, or a frame file cannot be read.
        """
        with self.db.lock:  # one consistent read: no step may land between two tables
            return self._export(episode_id, skip_frames)

    def _export(self, episode_id: int, skip_frames: Collection[str]) -> EpisodeBundle:
        doing = f"exporting episode {episode_id}"
        found = self.db.rows(doing, "SELECT * FROM episodes WHERE id = ?", (episode_id,))
        if not found:
            raise StoreError(f"no episode {episode_id} in {self.db.path}")
        bundle = EpisodeBundle(dict(found[0]))
        for table in CHILD_TABLES:
            rows = self.db.rows(doing, f"SELECT * FROM {table} WHERE episode_id = ?", (episode_id,))
            bundle.rows[table] = [dict(row) for row in rows]
        folder = self.db.frames.root / str(episode_id)
        bundle.frames_prefix = folder.relative_to(self.db.frames.relative_to).as_posix() + "/"
        try:
            for path in sorted(folder.glob("*.png")) if folder.is_dir() else []:
                if path.stem not in skip_frames:
                    bundle.frames[path.stem] = path.read_bytes()
        except OSError as exc:
            raise StoreError(f"{doing}: cannot read its frames in {folder}: {exc}") from exc
        for archive in bundle.rows["archives"]:
            for digest in _blob_names(json.loads(archive["manifest"])):
                bundle.blobs[digest] = self.archives.read_blob(digest)
        return bundle

    def import_episode(
        self,
        bundle: EpisodeBundle,
        *,
        into: int | None = None,
        paths: dict[str, str] | None = None,
    ) -> int:
        """Record an exported episode as a new one of this database, owned by this
        process (its pid, host and start: `liveness`), and return its id here.

        An episode streamed while it runs comes as several exports: the first is
        imported as a new episode, each later one `into` it, replacing its rows with
        the newer ones. `paths` carries the frames' paths from one import to the next
        (the earlier frames are not sent again); the caller keeps it.

        Raises:
            StoreError: a row the schema refuses (nothing is written then).
        """
        episode = {k: v for k, v in bundle.episode.items() if k != "id"}
        runner = this_runner()
        episode.update(pid=runner.pid, hostname=runner.hostname, runner_start=runner.start)
        paths = {} if paths is None else paths
        doing = f"importing an episode of {episode.get('task_id')}"
        with self.db.write(doing) as conn:
            if into is None:
                new_id = _insert(conn, "episodes", episode)
            else:
                new_id = into
                # Children first: steps point at messages and phases.
                for table in reversed(CHILD_TABLES):
                    conn.execute(f"DELETE FROM {table} WHERE episode_id = ?", (new_id,))
                sets = ", ".join(f"{column} = ?" for column in episode)
                conn.execute(
                    f"UPDATE episodes SET {sets} WHERE id = ?", [*episode.values(), new_id]
                )
            # The files are written before the rows that point at them; a refused row
            # leaves them behind, unreferenced, like the frames of a killed runner.
            for name, png in bundle.frames.items():
                paths[bundle.frames_prefix + f"{name}.png"] = self.db.frames.save(new_id, name, png)
            for data in bundle.blobs.values():
                self.archives.save_blob(data)  # content-addressed: the manifest's names stay right

            def remap(value: Any) -> Any:
                if isinstance(value, str) and bundle.frames_prefix in value:
                    for old, new in paths.items():
                        value = value.replace(old, new)
                return value

            conn.execute(
                "UPDATE episodes SET final_frame = ? WHERE id = ?",
                (remap(episode.get("final_frame")), new_id),
            )
            message_ids: dict[int, int] = {}
            for table in CHILD_TABLES:
                for row in bundle.rows.get(table, []):
                    row = {k: remap(v) for k, v in row.items()}
                    row["episode_id"] = new_id
                    if table == "messages":
                        old = row.pop("id")
                        message_ids[old] = _insert(conn, table, row)
                        continue
                    if table == "rescores":
                        row.pop("id")  # this database numbers its own rescores
                    if table == "steps" and row.get("active_message_id") is not None:
                        row["active_message_id"] = message_ids[row["active_message_id"]]
                    _insert(conn, table, row)
        if episode.get("status") != "running":
            self.db.frames.forget(new_id)
        return new_id


def _blob_names(manifest: dict[str, Any]) -> set[str]:
    """The blobs an archive's manifest names (app.episode.archive writes it)."""
    entries = [*manifest.get("files", {}).values(), *manifest.get("probes", [])]
    return {entry["blob"] for entry in entries if entry.get("blob")}


def _insert(conn: sqlite3.Connection, table: str, row: dict[str, Any]) -> int:
    columns = list(row)
    # The names are the source database's columns, read by SELECT *, never a caller's.
    sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})"
    cursor = conn.execute(sql, [row[c] for c in columns])
    assert cursor.lastrowid is not None
    return cursor.lastrowid
