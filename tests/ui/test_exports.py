"""Export from the Episodes screen (`x`): what the filter shows, as JSONL or a dataset,
and the highlighted episode as an MP4, written by a worker into `exports/`."""

from __future__ import annotations

import json
from pathlib import Path

from app.ui.app import DeskLoopApp
from app.ui.modals import ChoiceScreen
from app.ui.screens.episodes import EpisodesScreen
from tests.ui.helpers import fixture_db, wait_until, write_tasks


async def test_export_the_shown_episodes_and_one_as_video(tmp_path: Path) -> None:
    db = fixture_db(tmp_path / "db" / "deskloop.db")
    exports = db.parent / "exports"
    lab = DeskLoopApp(db=db, tasks_dir=write_tasks(tmp_path / "tasks"), start_mode="episodes")
    async with lab.run_test(size=(100, 30)) as pilot:
        screen = lab.screen
        assert isinstance(screen, EpisodesScreen)
        await wait_until(pilot, lambda: screen.loaded, 5, "the episodes")
        everything = len(screen.shown)
        await pilot.press("slash", *"gimp", "enter", "escape")

        def filtered() -> bool:
            return 0 < len(screen.shown) < everything

        await wait_until(pilot, filtered, 5, "the filter")
        assert all("gimp" in e.task_id for e in screen.shown)
        await pilot.press("x")
        await wait_until(pilot, lambda: isinstance(lab.screen, ChoiceScreen), 5, "the choice")
        await pilot.press("enter")  # JSONL, the first choice
        await wait_until(pilot, lambda: any(exports.glob("*.jsonl")), 20, "the JSONL")
        (jsonl,) = exports.glob("*.jsonl")
        rows = [json.loads(line) for line in jsonl.read_text().splitlines()]
        assert sorted(r["task_id"] for r in rows) == sorted(e.task_id for e in screen.shown)

        await pilot.press("x")
        await wait_until(pilot, lambda: isinstance(lab.screen, ChoiceScreen), 5, "the choice")
        await pilot.press("down", "down", "enter")  # the highlighted episode as MP4
        first = screen.shown[0].id
        await wait_until(pilot, lambda: any(exports.glob(f"episode-{first}-*.mp4")), 30, "the MP4")
        await wait_until(
            pilot,
            lambda: any("Exported" in n.message and ".mp4" in n.message
                        for n in lab._notifications),
            10, "the notice",
        )  # fmt: skip
        (video,) = exports.glob("*.mp4")
        assert video.stat().st_size > 0 and video.read_bytes()[4:8] == b"ftyp"
