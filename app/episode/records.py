"""What the episode runner writes besides its steps: the messages, the frames, the
end (finished or in error), the score and judgements, the final-state archive and
the integrity flags. Part of `EpisodeRunner` (a base of its mixins), kept apart from
its loop; every store call runs on the store's own thread through `_stored`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any, Literal, ParamSpec, TypeVar

import numpy as np
import numpy.typing as npt

from app.core.conversation import Message
from app.core.errors import StoreError
from app.core.frames import Frame
from app.core.vocabulary import ErrorKind
from app.core.windows import WindowList
from app.desktops.base import Desktop
from app.episode.archive import Recorded, RecordingSource, keep
from app.episode.control import RunOptions
from app.episode.events import EpisodeResult, MessageEvent, RunnerEvent
from app.episode.integrity import IntegrityWatch
from app.episode.judge import JUDGE_CACHE, JudgeContext
from app.episode.protocol import Protocol
from app.episode.scoring import ScoreResult
from app.episode.waits import PersonWaits
from app.store import Store
from app.store.frames import frame_png
from app.tasks.model import Task

log = logging.getLogger(__name__)
T = TypeVar("T")
P = ParamSpec("P")


class EpisodeRecords:
    """The runner's writes (a base of `EpisodeRunner`); the state is the runner's."""

    task: Task
    desktop: Desktop
    store: Store
    options: RunOptions
    waits: PersonWaits
    _store_seconds: float
    _message_ids: dict[int, int]
    _last_frame: tuple[Frame, str] | None
    _end_windows: WindowList | None
    _agent_started_at: float | None
    _integrity: IntegrityWatch | None
    _final_reads: Recorded | None
    _phase_reads: dict[int, Recorded]

    # Provided by EpisodeRunner.
    def _emit(self, event: RunnerEvent) -> None:
        raise NotImplementedError

    def _say(self, text: str) -> None:
        raise NotImplementedError

    async def _stored(self, call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """`call` (a store method) run on the store's thread and awaited. The time it
        takes is the store's, not the agent's: a write that waits for another
        process's lock on the database must not eat the episode's time budget."""
        begun = time.monotonic()
        try:
            return await self.store.off_loop(call, *args, **kwargs)
        finally:
            self._store_seconds += time.monotonic() - begun

    async def _record_messages(
        self, episode_id: int, messages: Iterable[Message], delivered: int | None = None
    ) -> None:
        """Record the messages not recorded yet (outside a step: the instruction, an
        injection, an answer or review), each in its own transaction; the one of phase
        `delivered` (a person's, in person mode) with that phase's delivery."""
        for message in self._unrecorded(messages):
            message_id = await self._stored(
                self.store.record_message,
                episode_id,
                role=message.role,
                kind=message.kind,
                text=message.text,
                step=message.step,
                phase_index=message.phase_index,
                source=message.source,
                origin=message.origin,
                scripted=message.scripted,
                wait_seconds=message.wait_seconds,
                delivers_phase=delivered is not None and message.phase_index == delivered,
            )
            self._recorded([message], [message_id])

    def _unrecorded(self, messages: Iterable[Message]) -> list[Message]:
        return [m for m in messages if id(m) not in self._message_ids]

    def _recorded(self, messages: list[Message], ids: list[int]) -> None:
        """Note the ids a step's active message points at, and show the messages."""
        for message, message_id in zip(messages, ids, strict=True):
            self._message_ids[id(message)] = message_id
            self._emit(MessageEvent(message))

    async def _keep_image(
        self, episode_id: int, name: str, pixels: npt.NDArray[np.uint8]
    ) -> str | None:
        """An agent's image kept with the episode's frames (its path), if frames are."""
        if not self.options.store_frames:
            return None
        png = await asyncio.to_thread(frame_png, pixels)
        return await self._stored(self.store.save_frame, episode_id, name, png)

    async def _save_frame(self, episode_id: int, name: str, frame: Frame) -> str | None:
        if not self.options.store_frames:
            return None
        # Many steps leave the screen unchanged: compare raw pixels (~1 ms) before
        # paying for PNG encoding (~40 ms at 1280×800) of a frame already stored.
        if self._last_frame is not None:
            last, last_path = self._last_frame
            if last.pixels.shape == frame.pixels.shape and np.array_equal(
                last.pixels, frame.pixels
            ):
                return last_path
        png = await asyncio.to_thread(frame_png, frame.pixels)
        path = await self._stored(self.store.save_frame, episode_id, name, png)
        self._last_frame = (frame, path)
        return path

    async def _finish(
        self,
        episode_id: int,
        protocol: Protocol,
        status: Literal["finished", "error"],
        error: str | None,
        final_frame: str | None,
        error_kind: ErrorKind | None = None,
    ) -> None:
        await self._stored(
            self.store.finish_episode,
            episode_id,
            status=status,
            end_reason=protocol.ended or "error",
            error=error,
            error_kind=error_kind,
            steps=protocol.steps,
            final_frame=final_frame,
            final_windows=self._end_windows,
            person_wait_seconds=round(self.waits.total, 3),
        )

    async def _ended_in_error(
        self,
        episode_id: int,
        protocol: Protocol,
        reason: str,
        final_frame: str | None,
        kind: ErrorKind,
    ) -> EpisodeResult:
        """Record the episode as ended in an error (the protocol says how it ended)."""
        await self._finish(episode_id, protocol, "error", reason, final_frame, kind)
        return EpisodeResult(
            episode_id,
            self.task.id,
            "error",
            protocol.ended or "error",
            None,
            None,
            protocol.steps,
            reason,
            error_kind=kind,
        )

    async def _archive(self, episode_id: int, recording: RecordingSource, answer: Any) -> None:
        """Keep what scoring read, so the episode can be re-scored. A failure to keep it
        is said and logged, not an error of the episode: its score is already made."""
        try:
            kept = await self._stored(
                keep,
                self.store,
                episode_id,
                recording.recorded,
                self._agent_started_at,
                self.options.archive_cap_bytes,
                answer,
                self._phase_reads,
            )
        except StoreError as exc:
            log.warning("episode %s: the final state was not archived: %s", episode_id, exc)
            self._say(f"the final state was not archived: {exc}")
            return
        if kept.over_cap:
            self._say(f"archive cap reached; not kept: {', '.join(kept.over_cap)}")

    async def _record_integrity(self, episode_id: int) -> None:
        """Record the integrity flags beside the score (they never change it)."""
        if self._integrity is None:
            return
        await self._integrity.collect()
        steps = await self._stored(self.store.steps, episode_id)
        typed = [(s.idx, str(s.action["text"])) for s in steps if s.action.get("kind") == "type"]
        probes = self._final_reads.probes if self._final_reads is not None else None
        flags, checked = await asyncio.to_thread(self._integrity.flags, typed, probes)
        await self._stored(self.store.record_flags, episode_id, flags, checked)
        if flags:
            self._say("integrity: " + "; ".join(f.summary for f in flags))

    async def _record_score(self, episode_id: int, score: ScoreResult) -> None:
        await self._stored(
            self.store.record_score,
            episode_id,
            passed=score.passed,
            score=score.score,
            checks=score.checks,
        )
        await self._stored(self.store.record_judgements, episode_id, score.judgements)

    def _judge_context(self) -> JudgeContext:
        """What a task's `judge` checks need: the run's judge endpoint, the cache
        beside the database, and the desktop's frame now as PNG."""

        async def frame() -> bytes:
            shot = await self.desktop.frame()
            return await asyncio.to_thread(frame_png, shot.pixels)

        return JudgeContext(self.options.judge, self.store.root / JUDGE_CACHE, frame)


def jsonable(value: Any) -> Any:
    """Raw agent answers may hold anything; keep what JSON can carry, repr the rest."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return repr(value)
