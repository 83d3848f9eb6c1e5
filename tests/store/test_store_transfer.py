"""A whole episode out of one database and into another (a Ray node's episode coming
back to the driver): every row and frame, ids and frame paths remapped."""

from __future__ import annotations

from pathlib import Path

import sqlite_utils

from app.core.outcomes import CheckOutcome
from app.store import Store
from app.store.transfer import CHILD_TABLES, LINKING_TABLES
from tests.store.helpers import new_episode, phase, png_of, step


def test_an_episode_moves_whole_between_databases(tmp_path: Path) -> None:
    with Store(tmp_path / "node" / "node.db") as node, Store(tmp_path / "driver.db") as driver:
        new_episode(driver)  # the driver's ids are not the node's
        episode = new_episode(node, batch_id="b1")
        node.tag_batch_slot(episode, agent="reference", repeat=3, attempt=1)
        node.init_phases(episode, [phase("Also export a JPEG.", "agent_done")])
        node.record_setup(episode, {"warm": True, "seconds": 1.5, "lines": [[0.0, "reset"]]})
        first = node.record_message(
            episode, role="user", kind="instruction", text="Flip it.", step=0, source="task"
        )
        frames = [node.save_frame(episode, f"{i:05d}", png_of(10 * i + 1)) for i in range(2)]
        step(node, episode, 0, frame=frames[0], active_message_id=first)
        step(node, episode, 1, frame=frames[1], active_message_id=first)
        final = node.save_frame(episode, "final", png_of(99))
        node.record_score(
            episode,
            passed=True,
            score=1.0,
            checks=[CheckOutcome("all[0]", "file_exists", {}, 1.0, True, True, 1.0, "ok")],
        )
        node.finish_episode(
            episode, status="finished", end_reason="done", steps=2, final_frame=final
        )

        bundle = node.export_episode(episode)
        moved = driver.import_episode(bundle)

        assert moved != episode
        got, sent = driver.get_episode(moved), node.get_episode(episode)
        assert (got.status, got.passed, got.score, got.steps) == ("finished", True, 1.0, 2)
        assert (got.batch_id, got.batch_agent, got.batch_repeat, got.batch_attempt) == (
            "b1", "reference", 3, 1,
        )  # fmt: skip
        assert got.setup == sent.setup and got.config == sent.config
        assert [m.text for m in driver.messages(moved)] == ["Flip it."]
        (message,) = driver.messages(moved)
        steps = driver.steps(moved)
        assert [s.active_message_id for s in steps] == [message.id, message.id]
        assert [p.message for p in driver.phases(moved)] == ["Also export a JPEG."]
        assert [c.name for c in driver.checks(moved)] == ["file_exists"]
        # The frames are the driver's own files now, with the same bytes.
        for moved_frame, sent_frame in [
            *zip([s.frame for s in steps], frames, strict=True),
            (got.final_frame, final),
        ]:
            assert moved_frame is not None and moved_frame != sent_frame
            assert f"/{moved}/" in moved_frame
            assert driver.frame_path(moved_frame).read_bytes() == (
                node.frame_path(sent_frame).read_bytes()
            )


def test_every_table_of_an_episode_travels(tmp_path: Path) -> None:
    # A migration that adds a table keyed by episode_id must add it to CHILD_TABLES, or
    # a Ray node's episodes would come back without its rows.
    Store(tmp_path / "x.db").close()
    db = sqlite_utils.Database(tmp_path / "x.db")
    keyed = {table for table in db.table_names() if "episode_id" in db[table].columns_dict}
    assert keyed == set(CHILD_TABLES) | set(LINKING_TABLES)


def test_the_final_state_archive_travels_with_its_blobs(tmp_path: Path) -> None:
    with Store(tmp_path / "node" / "node.db") as node, Store(tmp_path / "driver.db") as driver:
        new_episode(driver)
        episode = new_episode(node)
        digest = node.save_blob(b"the exported picture")
        manifest = {"version": 1, "files": {"~/out.png": {"blob": digest, "size": 20}}}
        node.record_archive(
            episode,
            evaluator="test",
            manifest=manifest,
            kept_bytes=20,
            over_cap_bytes=0,
            cap_bytes=100,
        )
        node.record_rescore(
            episode, task_sha256="0" * 64, evaluator="test", passed=True, score=1.0, checks=[]
        )
        moved = driver.import_episode(node.export_episode(episode))
        archive = driver.get_archive(moved)
        assert archive is not None and archive.manifest == manifest
        assert driver.read_blob(digest) == b"the exported picture"
        assert [r.score for r in driver.rescores(moved)] == [1.0]
