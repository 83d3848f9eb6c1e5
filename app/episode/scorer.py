"""An episode's scoring while it runs: its final state's, and each delivered phase's.

The runner says when to score (at a phase's delivery, at the end); this says how. Every
score reads the guest through a recorder (`RecordingSource`), so the final-state archive
holds what the checks read, each phase's reads kept beside it (`phase_reads`); a task's
`judge` checks ask the run's judge endpoint, with its answers cached beside the
database, about the desktop's frame. Apart from the runner, which is the loop alone,
so that what scoring reads and asks is in one place (`app.episode.scoring` is the
checks themselves, run on whatever state it is handed).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from app.desktops.base import Desktop
from app.episode.archive import Recorded, RecordingSource
from app.episode.events import Reporter
from app.episode.judge import JUDGE_CACHE, JudgeConfig, JudgeContext
from app.episode.records import EpisodeRecorder
from app.episode.scoring import GuestSource, ScoreResult, score_phase, score_task
from app.store.frames import frame_png
from app.tasks.model import Task


class EpisodeScorer:
    """Scores one episode of `task` on `desktop`: the phases' checks as they are
    delivered (recorded at once, through `records`) and the final state."""

    def __init__(
        self,
        task: Task,
        desktop: Desktop,
        records: EpisodeRecorder,
        report: Reporter,
        *,
        judge: JudgeConfig | None,
        store_root: Path,
    ) -> None:
        self.task = task
        self.desktop = desktop
        self.records = records
        self.report = report
        self.phase_reads: dict[int, Recorded] = {}
        """What each delivered phase's checks read, archived with the final state."""
        # What a task's `judge` checks need: the run's judge endpoint, the cache beside
        # the database, and the desktop's frame.
        self._judge = JudgeContext(judge, store_root / JUDGE_CACHE, self._frame_png)

    async def score_final(
        self, agent_started_at: float | None, answer: Any
    ) -> tuple[ScoreResult, RecordingSource]:
        """Score the final state; `answer` is the agent's returned value (DONE's answer).
        Returns the score and the recorder it read through, for the archive."""
        # Read through a recorder, so the final-state archive holds what was read.
        recording = RecordingSource(GuestSource(self.desktop.guest))
        score = await score_task(
            self.task,
            recording,
            agent_started_at,
            recording.judged(self._judge),
            answer=answer,
        )
        return score, recording

    async def score_phase(self, index: int, agent_started_at: float | None) -> None:
        """Score a phase's optional checks on the state at its delivery and record
        them, kept apart from the final score."""
        if self.task.phase_tree(index) is None:
            return
        self.report.say(f"scoring the checks of phase {index + 1}")
        # Through a recorder, like the final score: the archive keeps what they read.
        recording = RecordingSource(GuestSource(self.desktop.guest))
        result = await score_phase(
            self.task,
            index,
            recording,
            agent_started_at,
            recording.judged(self._judge),
        )
        self.phase_reads[index] = recording.recorded
        if result is not None:
            await self.records.record_phase_score(index, result)

    async def _frame_png(self) -> bytes:
        """The desktop's frame now as PNG: what a task's `judge` checks may show."""
        shot = await self.desktop.frame()
        return await asyncio.to_thread(frame_png, shot.pixels)
