"""Replay playback: space plays the steps in order and stops at the final state,
]/[ change the speed, space pauses, and playing again starts from the first step."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable

from app.store import StepRecord, Store
from app.ui.app import DeskLoopApp
from app.ui.screens.replay import SPEEDS, ReplayScreen
from tests.ui.helpers import fixture_db, wait_until, write_tasks


async def test_play_pause_and_speed(tmp_path: Path) -> None:
    db = fixture_db(tmp_path / "db" / "deskloop.db")
    with Store(db) as store:
        eid = max(store.list_episodes(limit=None), key=lambda e: e.steps).id
    lab = DeskLoopApp(db=db, tasks_dir=write_tasks(tmp_path / "tasks"), start_mode="episodes")
    async with lab.run_test(size=(100, 30)) as pilot:
        replay = ReplayScreen(eid)
        await lab.push_screen(replay)
        await wait_until(pilot, lambda: bool(replay.rows), 5, "the episode")
        table = replay.query_one("#replay-timeline", DataTable)
        assert str(table.border_title) == "timeline"

        await pilot.press("right_square_bracket", "right_square_bracket")
        assert SPEEDS[replay.speed] == 4.0 and "4×" in str(table.border_title)
        seen: list[int] = []

        def at_end() -> bool:
            seen.append(table.cursor_row)
            return table.cursor_row == len(replay.rows) - 1 and not replay.playing

        await pilot.press("space")
        assert replay.playing and "▶ 4×" in str(table.border_title)
        await wait_until(pilot, at_end, 10, "the playback to reach the final state")
        # It went forward through the steps, never back, and stopped there.
        visited = sorted(set(seen))
        assert seen == sorted(seen) and len(visited) >= 2
        steps = [i for i, (_k, item) in enumerate(replay.rows) if isinstance(item, StepRecord)]
        assert set(steps[1:]) <= set(visited)
        assert "▶" not in str(table.border_title)

        # Played to the end: space starts again from the first row; space pauses.
        await pilot.press("left_square_bracket", "left_square_bracket", "left_square_bracket")
        assert SPEEDS[replay.speed] == 0.5
        await pilot.press("space")
        assert replay.playing and table.cursor_row == 0
        await pilot.press("space")
        assert not replay.playing
        paused_at = table.cursor_row
        await pilot.pause(1.5)  # longer than a step at ½×: a paused replay stays
        assert table.cursor_row == paused_at


async def test_the_head_shows_error_windows_flags_and_tags_together(tmp_path: Path) -> None:
    from textual.widgets import Static

    from app.core.integrity import IntegrityFlag
    from app.core.windows import Window, WindowList

    db = tmp_path / "deskloop.db"
    with Store(db) as store:
        eid = store.start_episode(
            task_id="gimp-flip-export",
            task_path="tasks/gimp/gimp-flip-export.yaml",
            task_sha256="0" * 64,
            app="gimp",
            level="L1",
            interactive=False,
            agent="reference",
            user_mode="simulated",
            backend="local",
        )
        store.finish_episode(
            eid,
            status="error",
            end_reason="error",
            error="Desktop error: setup[2]: no visible window appeared within 90 s",
            steps=0,
            final_windows=WindowList((Window("0x400007", "GNU Image Manipulation", "Gimp"),), 0.0),
        )
        store.record_flags(
            eid, [IntegrityFlag("process", "xterm ran (started 3.0 s in)")], ["processes"]
        )
        store.annotate_episode(eid, note="Cursor drifted", add_tags=["pilot"])
    lab = DeskLoopApp(db=db, tasks_dir=write_tasks(tmp_path / "tasks"), start_mode="episodes")
    async with lab.run_test(size=(100, 30)) as pilot:
        replay = ReplayScreen(eid)
        await lab.push_screen(replay)
        await wait_until(pilot, lambda: bool(replay.rows), 5, "the episode")
        await pilot.pause()
        head = replay.query_one("#replay-head", Static)
        # Five lines of head (and a wrapped one): all in view, none cut at three.
        assert head.size.height >= 5 and head.virtual_size.height <= head.size.height
        text = str(head.render())
        for part in ("no visible window", "windows open at the end", "flagged: xterm", "#pilot"):
            assert part in text, part
