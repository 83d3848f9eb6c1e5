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

import sqlite3
from dataclasses import dataclass, field
from typing import Any

from app.core.errors import StoreError
from app.store.base import StoreBase
from app.store.liveness import this_runner

CHILD_TABLES = ("phases", "messages", "steps", "checks")
"""The tables that hold an episode's rows (by `episode_id`), in the order they are
written: steps point at messages and phases."""


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


class Transfer(StoreBase):
    """`Store`'s export and import of whole episodes."""

    def export_episode(self, episode_id: int) -> EpisodeBundle:
        """Everything recorded of an episode, with its frame files' bytes.

        Raises:
            StoreError: no such episode, or a frame file cannot be read.
        """
        doing = f"exporting episode {episode_id}"
        found = self._rows(doing, "SELECT * FROM episodes WHERE id = ?", (episode_id,))
        if not found:
            raise StoreError(f"no episode {episode_id} in {self.path}")
        bundle = EpisodeBundle(dict(found[0]))
        for table in CHILD_TABLES:
            rows = self._rows(doing, f"SELECT * FROM {table} WHERE episode_id = ?", (episode_id,))
            bundle.rows[table] = [dict(row) for row in rows]
        folder = self.frames.root / str(episode_id)
        bundle.frames_prefix = folder.relative_to(self.frames.relative_to).as_posix() + "/"
        try:
            for path in sorted(folder.glob("*.png")) if folder.is_dir() else []:
                bundle.frames[path.stem] = path.read_bytes()
        except OSError as exc:
            raise StoreError(f"{doing}: cannot read its frames in {folder}: {exc}") from exc
        return bundle

    def import_episode(self, bundle: EpisodeBundle, **changes: Any) -> int:
        """Record an exported episode as a new one of this database, owned by this
        process (its pid, host and start: `liveness`); `changes` replace columns of
        its episodes row (a batch's slot, say). Returns its id here.

        Raises:
            StoreError: a row the schema refuses (nothing is written then).
        """
        episode = {k: v for k, v in bundle.episode.items() if k != "id"}
        runner = this_runner()
        episode.update(pid=runner.pid, hostname=runner.hostname, runner_start=runner.start)
        episode.update(changes)
        doing = f"importing an episode of {episode.get('task_id')}"
        with self._write(doing) as conn:
            new_id = _insert(conn, "episodes", episode)
            # The files are written before the rows that point at them; a refused row
            # leaves them behind, unreferenced, like the frames of a killed runner.
            paths = {
                bundle.frames_prefix + f"{name}.png": self.frames.save(new_id, name, png)
                for name, png in bundle.frames.items()
            }

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
                    if table == "steps" and row.get("active_message_id") is not None:
                        row["active_message_id"] = message_ids[row["active_message_id"]]
                    _insert(conn, table, row)
        self.frames.forget(new_id)
        return new_id


def _insert(conn: sqlite3.Connection, table: str, row: dict[str, Any]) -> int:
    columns = list(row)
    # The names are the source database's columns, read by SELECT *, never a caller's.
    sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})"
    cursor = conn.execute(sql, [row[c] for c in columns])
    assert cursor.lastrowid is not None
    return cursor.lastrowid
