"""A researcher's note and tags on an episode (migration 0015): written here and
nowhere else, read back on `EpisodeRecord` (`note`, `tags`).

A tag is one word (letters, digits, `.`, `_`, `-`; at most 40 characters, lowercased)
so that the Episodes filter's `tag:WORD` and the command line can name it without
quoting. Notes and tags may be changed on a running episode too: they are the
researcher's, never the runner's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from app.core.errors import StoreError
from app.store.base import Part
from app.store.records import EpisodeRecord

TAG = re.compile(r"^[a-z0-9][a-z0-9._-]{0,39}$")
NOTE_MAX_CHARS = 10_000


def normalize_tag(text: str) -> str:
    """The tag `text` names, lowercased.

    Raises:
        StoreError: not one word of letters, digits, `.`, `_` or `-` (40 at most).
    """
    tag = text.strip().lower()
    if not TAG.match(tag):
        raise StoreError(
            f"tag {text!r}: a tag is one word of letters, digits, '.', '_' or '-' "
            "(starting with a letter or digit, at most 40 characters)"
        )
    return tag


class Notes(Part):
    """`Store`'s writes of notes and tags."""

    def annotate_episode(
        self,
        episode_id: int,
        *,
        note: str | None = None,
        add_tags: Iterable[str] = (),
        remove_tags: Iterable[str] = (),
    ) -> EpisodeRecord:
        """Set the episode's note (None: keep it; "": clear it), add and remove tags
        (removing one it does not have is no error), in one transaction; returns the
        episode as stored after.

        Raises:
            StoreError: no such episode, a malformed tag, or a note over
                NOTE_MAX_CHARS characters.
        """
        added = {normalize_tag(t) for t in add_tags}
        removed = {normalize_tag(t) for t in remove_tags}
        if note is not None and len(note) > NOTE_MAX_CHARS:
            raise StoreError(
                f"note of episode {episode_id}: {len(note)} characters, at most {NOTE_MAX_CHARS}"
            )
        doing = f"annotating episode {episode_id}"
        with self.db.write(doing) as conn:
            found = conn.execute(
                "SELECT note, tags FROM episodes WHERE id = ?", (episode_id,)
            ).fetchone()
            if found is None:
                raise StoreError(f"no episode {episode_id} in {self.db.path}")
            tags = (set(json.loads(found[1])) | added) - removed
            conn.execute(
                "UPDATE episodes SET note = ?, tags = ? WHERE id = ?",
                (found[0] if note is None else note.strip(), json.dumps(sorted(tags)), episode_id),
            )
        rows = self.db.rows(doing, "SELECT * FROM episodes WHERE id = ?", (episode_id,))
        return EpisodeRecord.from_row(rows[0])
