"""Frames and paths: lossless PNG frames shared within an episode, frame folders per
database, and bad paths named."""

from __future__ import annotations

import io
import re
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from app.core.errors import StoreError
from app.store import Store, frame_png
from tests.store.helpers import new_episode, old_database, png_of, step

# -- frames -----------------------------------------------------------------------


def test_frame_png_is_lossless() -> None:
    rng = np.random.default_rng(7)
    for shape in [(30, 40, 3), (30, 40, 4), (30, 40)]:
        pixels = rng.integers(0, 256, size=shape, dtype=np.uint8)
        with Image.open(io.BytesIO(frame_png(pixels))) as image:
            assert np.array_equal(np.asarray(image), pixels)
    with pytest.raises(StoreError, match="uint8"):
        frame_png(np.zeros((4, 4, 3), dtype=np.float32))
    with pytest.raises(StoreError, match="shape"):
        frame_png(np.zeros((4, 4, 2), dtype=np.uint8))


def test_identical_frames_share_a_file_within_an_episode(tmp_path: Path) -> None:
    with Store(tmp_path / "lab.db") as store:
        folder = store.frames.root.relative_to(tmp_path).as_posix()
        one, two = new_episode(store), new_episode(store)
        first = store.save_frame(one, 0, png_of(1))
        assert first == f"{folder}/{one}/0.png"
        assert store.save_frame(one, 1, png_of(1)) == first
        assert store.save_frame(one, 2, png_of(2)) == f"{folder}/{one}/2.png"
        assert store.save_frame(one, 3, png_of(1)) == first
        assert store.save_frame(one, "final", png_of(3)) == f"{folder}/{one}/final.png"
        assert store.save_frame(two, 0, png_of(1)) == f"{folder}/{two}/0.png"
        assert sorted(p.name for p in (tmp_path / folder / str(one)).iterdir()) == [
            "0.png",
            "2.png",
            "final.png",
        ]
        assert store.frame_path(first).read_bytes() == png_of(1)
        for bad in ["../x", "a/b", "", "final.png"]:
            with pytest.raises(StoreError, match="frame name"):
                store.save_frame(one, bad, png_of(1))


def test_memory_store_keeps_frames_in_a_temporary_directory() -> None:
    store = Store.memory()
    try:
        episode = new_episode(store)
        frame = store.save_frame(episode, 0, png_of(5))
        step(store, episode, 0, frame=frame)
        path = store.frame_path(store.steps(episode)[0].frame or "")
        assert path.read_bytes() == png_of(5)
    finally:
        store.close()
    assert not path.exists()
    with pytest.raises(StoreError, match="closed"):
        store.get_episode(episode)


# -- bad paths ------------------------------------------------------------------------


def test_a_directory_is_not_a_database(tmp_path: Path) -> None:
    with pytest.raises(StoreError) as err:
        Store(tmp_path)
    assert str(tmp_path) in str(err.value)


def test_unwritable_location_names_the_path(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where a directory should be")
    target = blocker / "lab.db"
    with pytest.raises(StoreError) as err:
        Store(target)
    assert str(target) in str(err.value)


def test_a_file_that_is_not_a_database_names_the_path(tmp_path: Path) -> None:
    target = tmp_path / "lab.db"
    target.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not a database") as err:
        Store(target)
    assert str(target) in str(err.value)


def test_unwritable_frames_directory_names_the_frame(tmp_path: Path) -> None:
    with Store(tmp_path / "lab.db") as store:
        episode = new_episode(store)
        (tmp_path / "frames").write_text("a file where the frames directory should be")
        with pytest.raises(StoreError, match="cannot write frame") as err:
            store.save_frame(episode, 0, png_of(1))
        assert str(store.frames.root / str(episode) / "0.png") in str(err.value)


def test_agent_info_round_trips_and_old_databases_migrate(tmp_path: Path) -> None:
    path = tmp_path / "lab.db"
    with Store(path) as store:
        episode = new_episode(store)
        step(store, episode, 0, agent_info={"tokens": {"prompt": 812, "completion": 40}})
        step(store, episode, 1)
        infos = [s.agent_info for s in store.steps(episode)]
        assert infos == [{"tokens": {"prompt": 812, "completion": 40}}, None]
        assert "0002_step_agent_info" in store.applied_migrations()
    # A database made before migration 0002 gains the column on open, rows intact.
    with Store(tmp_path / "v1.db") as store:
        episode = new_episode(store)
        step(store, episode, 0)
    with sqlite3.connect(tmp_path / "v1.db") as conn:
        conn.execute("ALTER TABLE steps DROP COLUMN agent_info")
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = '0002_step_agent_info'")
    with Store(tmp_path / "v1.db") as store:
        (only,) = store.steps(episode)
        assert only.agent_info is None and only.description == "key(ctrl+s)"


def test_two_databases_in_one_folder_keep_their_own_frames(tmp_path: Path) -> None:
    # Both databases' first episode has id 1: each must read back its own frames.
    with Store(tmp_path / "a.db") as a, Store(tmp_path / "b.db") as b:
        in_a, in_b = new_episode(a), new_episode(b)
        assert in_a == in_b
        frame_a, frame_b = a.save_frame(in_a, 0, png_of(10)), b.save_frame(in_b, 0, png_of(20))
        assert frame_a != frame_b
    with Store(tmp_path / "a.db") as a, Store(tmp_path / "b.db") as b:
        assert a.frame_path(frame_a).read_bytes() == png_of(10)
        assert b.frame_path(frame_b).read_bytes() == png_of(20)
        assert re.fullmatch(r"frames/[0-9a-f]{12}/1/0\.png", frame_a), frame_a


def test_an_older_database_keeps_its_frames_and_gets_a_folder_of_its_own(
    tmp_path: Path,
) -> None:
    db = old_database(tmp_path / "lab.db")
    legacy = tmp_path / "frames" / "1" / "0.png"  # where frames were written before 0006
    legacy.parent.mkdir(parents=True)
    legacy.write_bytes(png_of(5))
    with Store(db) as store:
        assert store.frame_path("frames/1/0.png").read_bytes() == png_of(5)
        episode = new_episode(store)
        frame = store.save_frame(episode, 0, png_of(6))
        assert not frame.startswith(f"frames/{episode}/")
        assert store.frame_path(frame).read_bytes() == png_of(6)
    assert legacy.read_bytes() == png_of(5)


def test_a_frames_folder_outside_the_database_folder_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    Store(db).close()
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE store_info SET value = '../elsewhere' WHERE key = 'frames_folder'")
    conn.close()
    with pytest.raises(StoreError, match=re.escape("frames_folder is '../elsewhere'")):
        Store(db)
