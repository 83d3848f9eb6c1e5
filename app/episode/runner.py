"""The episode runner: reset → setup → (observe, decide, act, protocol)* → score → store.

Every step is written to the store before the next one begins, in one transaction
with the messages and the phase delivery that came of it, so a crash loses at most
the step in flight and never leaves a step without its messages. An episode that
raises is stored with status `error` and the reason, never scored as a pass. Frames
are PNG-encoded in a worker thread and every store call runs on the store's own
thread (`Store.off_loop`), so the event loop (and a TUI or a batch on it) stays
responsive however slow the disk.

A person in the loop steers a running episode through its `EpisodeControl`
(inject a message at any moment, pause, resume, abort; `app.episode.control`, with
the `RunOptions`); everything that happens is also reported as `RunnerEvent`s
(`app.episode.events`), which the TUI shows live. This module is the loop alone.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from app.agents.base import (
    Agent,
    AgentContext,
    CallsEndpoint,
    GuestProbe,
    Observation,
    RecordsSettings,
)
from app.core.actions import (
    Action,
    action_kind,
    action_to_dict,
    describe_action,
    is_gui_action,
)
from app.core.errors import (
    ActionError,
    AgentUnavailable,
    DeskLoopError,
    MalformedAction,
    describe_error,
    error_kind,
)
from app.core.frames import Frame
from app.core.vocabulary import ErrorKind
from app.core.windows import WindowList
from app.desktops.base import Desktop
from app.desktops.liveness import DesktopDied, while_alive
from app.episode.archive import Recorded, RecordingSource
from app.episode.control import EpisodeControl, RunOptions
from app.episode.events import (
    EndedEvent,
    EpisodeResult,
    RunnerEvent,
    StatusEvent,
    StepEvent,
)
from app.episode.integrity import IntegrityWatch
from app.episode.prepare import PreparedStart, prepare_start
from app.episode.protocol import PhaseSpec, Protocol
from app.episode.records import jsonable
from app.episode.scoring import GuestSource, score_phase, score_task
from app.episode.takeover import TakeOverSteps
from app.episode.user_turns import Aborted as _Aborted
from app.episode.user_turns import UserTurns
from app.episode.waits import PersonWaits
from app.store import Store
from app.tasks.loader import setup_key
from app.tasks.model import Task
from app.users.person import PersonUser
from app.users.simulated import User

log = logging.getLogger(__name__)
T = TypeVar("T")


class EpisodeRunner(UserTurns, TakeOverSteps):
    """Runs one episode.

    `progress` receives short status lines (CLI); `on_event` receives every
    `RunnerEvent` (TUI). Both are called on the event loop's thread and must not block.
    """

    def __init__(
        self,
        task: Task,
        desktop: Desktop,
        agent: Agent,
        user: User,
        store: Store,
        *,
        backend: str,
        options: RunOptions | None = None,
        progress: Callable[[str], None] | None = None,
        on_event: Callable[[RunnerEvent], None] | None = None,
        control: EpisodeControl | None = None,
        prepared: PreparedStart | None = None,
    ) -> None:
        self.task = task
        self.desktop = desktop
        self.agent = agent
        self.user = user
        self.store = store
        self.backend = backend
        self.options = options or RunOptions()
        self.control = control or EpisodeControl()
        self.prepared = prepared
        """The desktop already brought to the task's start state (a batch's warm
        pool); None: the episode resets and sets it up itself."""
        self._progress = progress
        self._on_event = on_event
        self._message_ids: dict[int, int] = {}
        self._agent_started_at: float | None = None
        self._last_frame: tuple[Frame, str] | None = None
        self._store_seconds = 0.0
        """Seconds this episode has waited on the store (see `_stored`)."""
        self.waits = PersonWaits()
        """The time spent waiting for the person: off the budget, recorded apart."""
        self._loop_started: float | None = None
        # What an episode that ends in an error keeps of the desktop's end: the
        # frame (path) and the windows a failed setup saw, the last step's frame.
        self._end_frame: str | None = None
        self._end_windows: WindowList | None = None
        self.episode_id: int | None = None
        self.protocol: Protocol | None = None
        self._integrity: IntegrityWatch | None = None
        self._final_reads: Recorded | None = None
        self._phase_reads: dict[int, Recorded] = {}
        """What each delivered phase's checks read, archived with the final state."""

    def _elapsed(self, started: float, now: float | None = None) -> float:
        """The episode's time against its budget: since `started`, less the store's and
        the person's (person mode: the budget pauses while the episode waits for them)."""
        now = time.monotonic() if now is None else now
        return now - started - self._store_seconds - self.waits.seconds(now)

    def budget_seconds_used(self) -> float | None:
        """Seconds of the time budget spent so far; None before the agent's loop."""
        if self._loop_started is None:
            return None
        return self._elapsed(self._loop_started)

    def _emit(self, event: RunnerEvent) -> None:
        if self._on_event is not None:
            self._on_event(event)

    def _say(self, text: str) -> None:
        if self._progress is not None:
            self._progress(text)
        self._emit(StatusEvent(text))

    async def run(self) -> EpisodeResult:
        result = await self._run()
        self._emit(EndedEvent(result))
        return result

    async def _run(self) -> EpisodeResult:
        task = self.task
        store = self.store
        episode_id = await self._stored(
            store.start_episode,
            task_id=task.id,
            # Absolute: a rescore finds the episode's own file from any folder.
            task_path=str(task.source.resolve()),
            task_sha256=task.sha256,
            app=task.app,
            level=task.level,
            interactive=task.interactive,
            agent=self.agent.name,
            user_mode=self.user.mode,
            backend=self.backend,
            config={
                "settle_timeout": self.options.settle_timeout,
                "settle_quiet": self.options.settle_quiet,
                "budget_steps": task.budget.steps,
                "budget_seconds": task.budget.seconds,
                # A model agent's adapter, endpoint and coordinate contract.
                **(self.agent.record() if isinstance(self.agent, RecordsSettings) else {}),
                **self.options.extra_config,
            },
            batch_id=self.options.batch_id,
        )
        self.episode_id = episode_id
        await self._stored(store.init_phases, episode_id, task.phases)
        protocol = Protocol(
            instruction=task.instruction,
            phases=[PhaseSpec(p.message, p.trigger, p.kind) for p in task.phases],
            max_steps=task.budget.steps,
            max_seconds=task.budget.seconds,
            review_done=self.user.reviews_done,
            person_phases=isinstance(self.user, PersonUser),
        )
        self.protocol = protocol
        final_frame: str | None = None
        stage = "episode"
        try:
            final_frame = await self._play(episode_id, protocol)
            stage = "scoring"
            self._say("scoring the final state")
            # Read through a recorder, so the final-state archive holds what was read.
            recording = RecordingSource(GuestSource(self.desktop.guest))
            score = await score_task(
                task,
                recording,
                self._agent_started_at,
                recording.judged(self._judge_context()),
                answer=protocol.returned,
            )
        except asyncio.CancelledError:
            why = self.options.cancel_reason() if self.options.cancel_reason else None
            during = "during the episode" if stage == "episode" else "during scoring"
            protocol.end("error" if why else "aborted")
            error = f"{why} {during}" if why else f"aborted during {stage}"
            kind: ErrorKind = error_kind(why) if why else "aborted"
            await self._finish(
                episode_id, protocol, "error", error, final_frame or self._end_frame, kind
            )
            raise
        except _Aborted:
            protocol.end("aborted")
            reason = "aborted by the person in the loop"
            return await self._ended_in_error(
                episode_id, protocol, reason, self._end_frame, "aborted"
            )
        except Exception as exc:
            reason = describe_error(exc)
            if stage == "scoring":
                reason = f"scoring failed: {reason}"
            log.debug("episode %s failed", episode_id, exc_info=True)
            protocol.end("error")
            if isinstance(exc, DesktopDied) and self._end_frame is None and self._last_frame:
                self._end_frame = self._last_frame[1]  # the last screen the agent saw
            return await self._ended_in_error(
                episode_id, protocol, reason, self._end_frame, error_kind(exc)
            )
        finally:
            await self.agent.close()
        await self._record_score(episode_id, score)
        await self._archive(episode_id, recording, protocol.returned)
        self._final_reads = recording.recorded
        await self._record_integrity(episode_id)
        await self._finish(episode_id, protocol, "finished", None, final_frame)
        return EpisodeResult(
            episode_id,
            task.id,
            "finished",
            protocol.ended,
            score.passed,
            score.score,
            protocol.steps,
            None,
            score.checks,
        )

    # -- the loop ---------------------------------------------------------------------

    async def _play(self, episode_id: int, protocol: Protocol) -> str | None:
        """Reset, set up and run the agent loop; returns the final frame's path."""
        desktop = self.desktop
        prepared = self.prepared
        if prepared is None:
            prepared = await prepare_start(self.task, desktop, self.backend, say=self._say)
        else:
            self._check_prepared(prepared)
            self._say(f"desktop brought to its start state ahead ({prepared.seconds:.1f} s)")
        await self._take_start(episode_id, prepared)
        await self._record_messages(episode_id, protocol.conversation)
        started = time.monotonic()
        try:
            # Raced against the desktop's death: an agent thinking, or a person
            # pausing, would otherwise learn of it only at their next frame.
            return await while_alive(desktop, self._agent_loop(episode_id, protocol))
        except DesktopDied as exc:
            into = time.monotonic() - started
            raise DesktopDied(
                f"{exc} (during step {protocol.steps}, {into:.1f} s into the episode)"
            ) from exc

    def _check_prepared(self, prepared: PreparedStart) -> None:
        """A desktop prepared ahead serves only an episode of the task it was set up for."""
        if prepared.error is None and (prepared.task_id, prepared.setup_key) != (
            self.task.id,
            setup_key(self.task),
        ):
            raise DeskLoopError(
                f"the desktop was prepared for task {prepared.task_id}'s start state, "
                f"not {self.task.id}'s"
            )

    async def _take_start(self, episode_id: int, prepared: PreparedStart) -> None:
        """Record how the desktop reached its start state, done now or ahead; when it
        failed, keep the last frame and windows the setup saw, and raise its error."""
        await self._stored(self.store.record_setup, episode_id, prepared.as_json())
        if prepared.error is None:
            return
        self._end_windows = prepared.seen.windows
        if prepared.seen.frame is not None:
            try:
                self._end_frame = await self._save_frame(
                    episode_id, "setup-failed", prepared.seen.frame
                )
            except Exception:  # the setup's error is the one to report
                log.warning("episode %s: cannot save setup's last frame", episode_id)
        raise prepared.error

    async def _agent_loop(self, episode_id: int, protocol: Protocol) -> str | None:
        """The agent's turns until the protocol ends; returns the final frame's path."""
        task = self.task
        info = self.desktop.info()
        await self.agent.start(
            AgentContext(
                task.id,
                info.width,
                info.height,
                GuestProbe(self.desktop),
                info.time_scale,
                keep_image=lambda name, pixels: self._keep_image(episode_id, name, pixels),
            )
        )
        started = self._loop_started = time.monotonic()
        # Wall time the agent got control: "modified after start" checks compare to it,
        # so files written by setup never count as the agent's work.
        self._agent_started_at = time.time()
        # From the agent's first step to scoring: programs started, consoles opened.
        self._integrity = IntegrityWatch(task, self.desktop)
        self._integrity.start()
        try:
            while protocol.ended is None:
                await self._between_steps(episode_id, protocol)
                if protocol.check_time(self._elapsed(started)) is not None:
                    break
                await self._step(episode_id, protocol, started)
        finally:
            await self._integrity.stop()
        final = await self.desktop.frame()
        return await self._save_frame(episode_id, "final", final)

    async def _between_steps(self, episode_id: int, protocol: Protocol) -> None:
        control = self.control
        await self._person_steps(episode_id, protocol)
        if control.paused:
            self._say("paused")
            while control.paused and not control.abort_requested:
                await control.wait_while_paused_for_person()
                await self._person_steps(episode_id, protocol)
            if not control.abort_requested:
                self._say("resumed")
        if control.abort_requested:
            raise _Aborted
        for text, kind in control.take_injections():
            await self._record_messages(episode_id, [protocol.inject(text, kind, "person")])

    async def _step(self, episode_id: int, protocol: Protocol, started: float) -> None:
        task = self.task
        step = protocol.steps
        frame = await self.desktop.frame()
        frame_path = await self._save_frame(episode_id, f"{step:05d}", frame)
        observation = Observation(
            frame=frame,
            active_message=protocol.active_message,
            conversation=tuple(protocol.conversation),
            steps_taken=step,
        )
        active_id = self._message_ids.get(id(protocol.active_message))
        phase_index = protocol.pending_phase
        step_started = time.time()
        t0 = time.monotonic()
        remaining = task.budget.seconds - self._elapsed(started, t0)
        error: str | None = None
        action: Action | None = None
        raw: Any = None
        try:
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a
            # cancellation (Ctrl-C, SIGTERM) that lands as the agent answers.
            async with asyncio.timeout(remaining):
                action = await self.agent.decide(observation)
        except TimeoutError:
            # The budget bounds the agent's thinking, a slow model's included; but an
            # endpoint that was already failing in the call is why no answer came:
            # that is the infrastructure's error (a batch retries it), not a finish.
            if isinstance(self.agent, CallsEndpoint) and (failed := self.agent.endpoint_failed()):
                raise failed from None
            protocol.end("time_budget")
            return
        except MalformedAction as exc:
            error, raw = str(exc), exc.raw
        except AgentUnavailable:
            raise
        agent_seconds = time.monotonic() - t0
        act_seconds = settle_seconds = 0.0
        if action is not None and is_gui_action(action):
            t1 = time.monotonic()
            try:
                await self.desktop.act(action)  # type: ignore[arg-type]
            except ActionError as exc:
                error = str(exc)
            act_seconds = time.monotonic() - t1
            if error is None:
                t2 = time.monotonic()
                await self.desktop.settle(
                    timeout=self.options.settle_timeout,
                    quiet=self.options.settle_quiet,
                    change_wait=self.options.settle_change_wait,
                )
                settle_seconds = time.monotonic() - t2
        elapsed = self._elapsed(started)
        if error is not None or action is None:
            outcome = protocol.on_rejected(elapsed)
            stored_action = action_to_dict(action) if action else {"kind": "rejected", "raw": raw}
            kind, description = (
                (action_kind(action), describe_action(action))
                if action
                else (
                    "rejected",
                    "rejected answer",
                )
            )
        else:
            outcome = protocol.on_agent(action, elapsed)
            stored_action = action_to_dict(action)
            kind, description = action_kind(action), describe_action(action)
        new_messages = self._unrecorded(outcome.messages)
        message_ids = await self._stored(
            self.store.record_step,
            episode_id,
            idx=step,
            action=jsonable(stored_action),
            kind=kind,
            description=description,
            started_at=step_started,
            agent_seconds=agent_seconds,
            act_seconds=act_seconds,
            settle_seconds=settle_seconds,
            frame=frame_path,
            phase_index=phase_index,
            active_message_id=active_id,
            error=error,
            agent_info=self.agent.step_info(),
            messages=new_messages,
            delivered_phase=outcome.delivered_phase,
        )
        self._say(f"step {step}: {description}" + (f" — rejected: {error}" if error else ""))
        self._emit(
            StepEvent(step, action, description, agent_seconds, act_seconds, settle_seconds, error)
        )
        self._recorded(new_messages, message_ids)
        await self._apply_outcome(episode_id, protocol, action, outcome, started)

    async def _score_phase(self, episode_id: int, index: int) -> None:
        """Score a phase's optional checks on the state at its delivery; kept apart
        from the final score."""
        if self.task.phase_tree(index) is None:
            return
        self._say(f"scoring the checks of phase {index + 1}")
        # Through a recorder, like the final score: the archive keeps what they read.
        recording = RecordingSource(GuestSource(self.desktop.guest))
        result = await score_phase(
            self.task,
            index,
            recording,
            self._agent_started_at,
            recording.judged(self._judge_context()),
        )
        self._phase_reads[index] = recording.recorded
        if result is not None:
            await self._stored(self.store.record_judgements, episode_id, result.judgements)
            await self._stored(
                self.store.record_phase_checks,
                episode_id,
                index,
                result.checks,
                passed=result.passed,
                score=result.score,
            )

    async def _wait_for_user(self, waiting: Awaitable[T]) -> T:
        """Await the user's reply, unless the person aborts first."""
        reply = asyncio.ensure_future(waiting)
        abort = asyncio.ensure_future(self.control.until_abort())
        try:
            done, _ = await asyncio.wait({reply, abort}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            abort.cancel()
        if reply not in done:
            reply.cancel()
            raise _Aborted
        result: T = reply.result()
        return result
