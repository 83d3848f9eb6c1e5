"""What an episode leaves in the store: its start, setup and phases, its steps with their
messages, the frames, the end (finished or in error), the score and judgements, the
final-state archive and the integrity flags. The `EpisodeRecorder` writes them for the
runner that owns it; every store call runs on the store's own thread (`Store.off_loop`)
and its time is counted apart, because it is not the agent's.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, ParamSpec, TypeVar

import numpy as np
import numpy.typing as npt

from app.core.conversation import Message
from app.core.errors import StoreError
from app.core.frames import Frame
from app.core.integrity import ORACLE_INFO
from app.core.vocabulary import ErrorKind, StepActor, UserMode
from app.core.windows import WindowList
from app.episode.archive import Recorded, RecordingSource, keep
from app.episode.control import RunOptions
from app.episode.events import MessageEvent, Reporter
from app.episode.integrity import IntegrityWatch
from app.episode.protocol import Protocol
from app.episode.scoring import ScoreResult
from app.store import Store
from app.store.frames import frame_png
from app.tasks.model import Task

log = logging.getLogger(__name__)
T = TypeVar("T")
P = ParamSpec("P")


class EpisodeRecorder:
    """One episode's writes to `store`, from `start` to its end.

    It knows which of the conversation's messages it has recorded (by the number the
    protocol gave each) and under which id, so that a step names its active message,
    and it keeps the last frame saved, so that an unchanged screen is not saved twice.
    """

    def __init__(self, store: Store, options: RunOptions, report: Reporter) -> None:
        self.store = store
        self.options = options
        self.report = report
        self.store_seconds = 0.0
        """Seconds spent awaiting the store (see `_stored`)."""
        self._episode_id: int | None = None
        self._message_ids: dict[int, int] = {}
        """The id each recorded message has in the store, by its number."""
        self._last_frame: tuple[Frame, str] | None = None

    @property
    def episode_id(self) -> int:
        if self._episode_id is None:
            raise RuntimeError("the episode has not been started in the store")
        return self._episode_id

    @property
    def last_frame_path(self) -> str | None:
        """The path of the last frame saved (the last screen the agent saw), if any."""
        return None if self._last_frame is None else self._last_frame[1]

    async def _stored(self, call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """`call` (a store method) run on the store's thread and awaited. The time it
        takes is the store's, not the agent's: a write that waits for another
        process's lock on the database must not eat the episode's time budget."""
        begun = time.monotonic()
        try:
            return await self.store.off_loop(call, *args, **kwargs)
        finally:
            self.store_seconds += time.monotonic() - begun

    # -- the start ----------------------------------------------------------------------

    async def start(
        self,
        task: Task,
        *,
        agent: str,
        user_mode: UserMode,
        backend: str,
        config: Mapping[str, Any],
        batch_id: str | None,
    ) -> int:
        """Record the start of an episode of `task` and its phases, still to be
        delivered; returns the episode's id."""
        episode_id = await self._stored(
            self.store.start_episode,
            task_id=task.id,
            # Absolute: a rescore finds the episode's own file from any folder.
            task_path=str(task.source.resolve()),
            task_sha256=task.sha256,
            app=task.app,
            level=task.level,
            interactive=task.interactive,
            agent=agent,
            user_mode=user_mode,
            backend=backend,
            config=config,
            batch_id=batch_id,
        )
        self._episode_id = episode_id
        await self._stored(self.store.init_phases, episode_id, task.phases)
        return episode_id

    async def record_setup(self, setup: Mapping[str, Any]) -> None:
        await self._stored(self.store.record_setup, self.episode_id, setup)

    # -- messages and steps ---------------------------------------------------------------

    def _unrecorded(self, messages: Iterable[Message]) -> list[Message]:
        return [m for m in messages if _number(m) not in self._message_ids]

    def message_id(self, message: Message) -> int | None:
        """The store's id of a recorded message; None if it was not recorded."""
        return self._message_ids.get(_number(message))

    async def record_messages(
        self, messages: Iterable[Message], delivered: int | None = None
    ) -> None:
        """Record the messages not recorded yet (outside a step: the instruction, an
        injection, an answer or review), each in its own transaction, and show each;
        the one of phase `delivered` (a person's, in person mode) with that phase's
        delivery."""
        for message in self._unrecorded(messages):
            message_id = await self._stored(
                self.store.record_message,
                self.episode_id,
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
            self._message_ids[_number(message)] = message_id
            self.report.emit(MessageEvent(message))

    async def record_step(
        self,
        *,
        idx: int,
        action: Mapping[str, Any],
        kind: str,
        description: str,
        started_at: float,
        agent_seconds: float,
        act_seconds: float,
        settle_seconds: float,
        frame: str | None,
        phase_index: int | None,
        active: Message,
        error: str | None,
        agent_info: Mapping[str, Any] | None = None,
        messages: Iterable[Message] = (),
        delivered_phase: int | None = None,
        actor: StepActor = "agent",
    ) -> list[Message]:
        """Record a step with its messages not recorded yet and the phase it delivered,
        in one transaction (`Store.record_step`); `active` is the message active when
        it began. Returns those messages, not shown yet: whoever shows the step shows
        them after it."""
        new = self._unrecorded(messages)
        ids = await self._stored(
            self.store.record_step,
            self.episode_id,
            idx=idx,
            action=jsonable(action),
            kind=kind,
            description=description,
            started_at=started_at,
            agent_seconds=agent_seconds,
            act_seconds=act_seconds,
            settle_seconds=settle_seconds,
            frame=frame,
            phase_index=phase_index,
            active_message_id=self.message_id(active),
            error=error,
            agent_info=agent_info,
            messages=new,
            delivered_phase=delivered_phase,
            actor=actor,
        )
        for message, message_id in zip(new, ids, strict=True):
            self._message_ids[_number(message)] = message_id
        return new

    # -- frames -----------------------------------------------------------------------------

    async def keep_image(self, name: str, pixels: npt.NDArray[np.uint8]) -> str | None:
        """An agent's image kept with the episode's frames (its path), if frames are."""
        if not self.options.store_frames:
            return None
        png = await asyncio.to_thread(frame_png, pixels)
        return await self._stored(self.store.save_frame, self.episode_id, name, png)

    async def save_frame(self, name: str, frame: Frame) -> str | None:
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
        path = await self._stored(self.store.save_frame, self.episode_id, name, png)
        self._last_frame = (frame, path)
        return path

    # -- the end ----------------------------------------------------------------------------

    async def finish(
        self,
        protocol: Protocol,
        status: Literal["finished", "error"],
        error: str | None,
        final_frame: str | None,
        *,
        final_windows: WindowList | None,
        person_wait_seconds: float,
        paused_seconds: float,
        error_kind: ErrorKind | None = None,
    ) -> None:
        await self._stored(
            self.store.finish_episode,
            self.episode_id,
            status=status,
            end_reason=protocol.ended or "error",
            error=error,
            error_kind=error_kind,
            steps=protocol.steps,
            final_frame=final_frame,
            final_windows=final_windows,
            person_wait_seconds=person_wait_seconds,
            paused_seconds=paused_seconds,
        )

    async def record_score(self, score: ScoreResult) -> None:
        await self._stored(
            self.store.record_score,
            self.episode_id,
            passed=score.passed,
            score=score.score,
            checks=score.checks,
        )
        await self._stored(self.store.record_judgements, self.episode_id, score.judgements)

    async def record_phase_score(self, index: int, result: ScoreResult) -> None:
        """A delivered phase's checks, kept apart from the final score."""
        await self._stored(self.store.record_judgements, self.episode_id, result.judgements)
        await self._stored(
            self.store.record_phase_checks,
            self.episode_id,
            index,
            result.checks,
            passed=result.passed,
            score=result.score,
        )

    async def archive(
        self,
        recording: RecordingSource,
        answer: Any,
        *,
        agent_started_at: float | None,
        phase_reads: Mapping[int, Recorded],
    ) -> None:
        """Keep what scoring read, so the episode can be re-scored. A failure to keep it
        is said and logged, not an error of the episode: its score is already made."""
        episode_id = self.episode_id
        try:
            kept = await self._stored(
                keep,
                self.store,
                episode_id,
                recording.recorded,
                agent_started_at,
                self.options.archive_cap_bytes,
                answer,
                phase_reads,
            )
        except StoreError as exc:
            log.warning("episode %s: the final state was not archived: %s", episode_id, exc)
            self.report.say(f"the final state was not archived: {exc}")
            return
        if kept.over_cap:
            self.report.say(f"archive cap reached; not kept: {', '.join(kept.over_cap)}")

    async def record_integrity(self, integrity: IntegrityWatch, final: Recorded | None) -> None:
        """Record the integrity flags beside the score (they never change it)."""
        await integrity.collect()
        steps = await self._stored(self.store.steps, self.episode_id)
        typed = [(s.idx, str(s.action["text"])) for s in steps if s.action.get("kind") == "type"]
        probes = final.probes if final is not None else None
        ran = [
            (s.idx, str(command))
            for s in steps
            if isinstance(s.agent_info, dict)
            for command in s.agent_info.get(ORACLE_INFO) or []
        ]
        flags, checked = await asyncio.to_thread(integrity.flags, typed, probes, ran)
        await self._stored(self.store.record_flags, self.episode_id, flags, checked)
        if flags:
            self.report.say("integrity: " + "; ".join(f.summary for f in flags))


def _number(message: Message) -> int:
    """A message's number in the episode's conversation, which its record is known by."""
    if message.number is None:
        raise ValueError(f"a message the protocol did not number: {message}")
    return message.number


def jsonable(value: Any) -> Any:
    """Raw agent answers may hold anything; keep what JSON can carry, repr the rest."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return repr(value)
