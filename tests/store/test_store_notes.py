"""A researcher's note and tags on an episode (app.store.notes, migration 0015)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from app.core.errors import StoreError
from app.store import Store
from tests.recorded_episodes import add_episode


def test_notes_and_tags_are_stored_and_read_back_after_a_reopen(tmp_path: Path) -> None:
    db = tmp_path / "d.db"
    with Store(db) as store:
        eid = add_episode(store)
        other = add_episode(store)
        fresh = store.get_episode(eid)
        assert (fresh.note, fresh.tags) == ("", ())
        back = store.annotate_episode(eid, note=" cursor drifted\n", add_tags=["Pilot", "b"])
        assert (back.note, back.tags) == ("cursor drifted", ("b", "pilot"))
        # Tags added again stay once; one it lacks is removed without complaint; the
        # note is kept when none is given.
        back = store.annotate_episode(eid, add_tags=["pilot", "a"], remove_tags=["b", "zz"])
        assert (back.note, back.tags) == ("cursor drifted", ("a", "pilot"))
    with Store(db) as store:
        assert store.get_episode(eid).tags == ("a", "pilot")
        assert store.get_episode(eid).note == "cursor drifted"
        assert store.get_episode(other).tags == ()  # only the episode named
        cleared = store.annotate_episode(eid, note="")
        assert cleared.note == "" and cleared.tags == ("a", "pilot")


def test_a_bad_tag_or_episode_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    with Store(tmp_path / "d.db") as store:
        eid = add_episode(store)
        store.annotate_episode(eid, add_tags=["keep"])
        with pytest.raises(StoreError, match="tag 'two words'"):
            store.annotate_episode(eid, note="lost", add_tags=["ok", "two words"])
        with pytest.raises(StoreError, match="tag '-x'"):
            store.annotate_episode(eid, remove_tags=["-x"])
        with pytest.raises(StoreError, match="no episode 99"):
            store.annotate_episode(99, note="x")
        with pytest.raises(StoreError, match="at most 10000"):
            store.annotate_episode(eid, note="x" * 10_001)
        after = store.get_episode(eid)
        assert (after.note, after.tags) == ("", ("keep",))


def test_the_schema_refuses_tags_that_are_not_a_list(tmp_path: Path) -> None:
    db = tmp_path / "d.db"
    with Store(db) as store:
        eid = add_episode(store)
    conn = sqlite3.connect(db)
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("UPDATE episodes SET tags = '\"pilot\"' WHERE id = ?", (eid,))
    conn.close()
