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
(`app.episode.events`), which the TUI shows live. This module is the loop alone; the
runner's collaborators write the records (`records`), score the phases and the final
state (`scorer`), get the user's replies (`user_turns`) and run the person's
take-over (`takeover`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any, Literal

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
from app.episode.control import Aborted, EpisodeControl, RunOptions
from app.episode.events import (
    EndedEvent,
    EpisodeResult,
    MessageEvent,
    PhaseEvent,
    Reporter,
    RunnerEvent,
    StepEvent,
)
from app.episode.integrity import IntegrityWatch
from app.episode.prepare import PreparedStart, prepare_start
from app.episode.protocol import Outcome, PhaseSpec, Protocol
from app.episode.records import EpisodeRecorder
from app.episode.requests import follow_requests
from app.episode.scorer import EpisodeScorer
from app.episode.takeover import take_over
from app.episode.user_turns import UserTurns
from app.episode.waits import OffBudget
from app.store import Store
from app.tasks.loader import setup_key
from app.tasks.model import Task
from app.users.person import PersonUser
from app.users.simulated import User

log = logging.getLogger(__name__)


class EpisodeRunner:
    """Runs one episode.

    `progress` receives short status lines (CLI); `on_event` receives every
    `RunnerEvent` (TUI). Both are called on the event loop's thread and must not block.
    The runner owns its collaborators: the `EpisodeRecorder` that writes the episode
    to the store, the `EpisodeScorer` that scores it and the `UserTurns` that get the
    user's replies.
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
        self.report = Reporter(progress, on_event)
        self.records = EpisodeRecorder(store, self.options, self.report)
        self.turns = UserTurns(user, self.control, self.report)
        self.paused = OffBudget()
        """The seconds the episode stood paused between steps: off its time budget."""
        self._agent_started_at: float | None = None
        self._loop_started: float | None = None
        # What an episode that ends in an error keeps of the desktop's end: the
        # frame (path) and the windows a failed setup saw, the last step's frame.
        self._end_frame: str | None = None
        self._end_windows: WindowList | None = None
        self.episode_id: int | None = None
        self.protocol: Protocol | None = None
        self._integrity: IntegrityWatch | None = None
        self.scorer = EpisodeScorer(
            task,
            desktop,
            self.records,
            self.report,
            judge=self.options.judge,
            store_root=store.root,
        )

    def _elapsed(self, started: float, now: float | None = None) -> float:
        """The episode's time against its budget: since `started`, less the store's, the
        person's (person mode: the budget pauses while the episode waits for them) and
        the time it stood paused (`EpisodeControl.pause`: the agent takes no step)."""
        now = time.monotonic() if now is None else now
        off = self.records.store_seconds + self.turns.waits.seconds(now)
        return now - started - off - self.paused.seconds(now)

    def budget_seconds_used(self) -> float | None:
        """Seconds of the time budget spent so far; None before the agent's loop."""
        if self._loop_started is None:
            return None
        return self._elapsed(self._loop_started)

    async def run(self) -> EpisodeResult:
        result = await self._run()
        self.report.emit(EndedEvent(result))
        return result

    async def _run(self) -> EpisodeResult:
        task = self.task
        records = self.records
        episode_id = await records.start(
            task,
            agent=self.agent.name,
            user_mode=self.user.mode,
            backend=self.backend,
            config={
                "settle_timeout": self.options.settle_timeout,
                "settle_quiet": self.options.settle_quiet,
                "settle_adaptive": self.options.settle_adaptive,
                "budget_steps": task.budget.steps,
                "budget_seconds": task.budget.seconds,
                # A model agent's adapter, endpoint and coordinate contract.
                **(self.agent.record() if isinstance(self.agent, RecordsSettings) else {}),
                **self.options.extra_config,
            },
            batch_id=self.options.batch_id,
        )
        self.episode_id = episode_id
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
        requests = asyncio.ensure_future(
            follow_requests(self.store, episode_id, self.control, self.report.say)
        )
        try:
            final_frame = await self._play(protocol)
            stage = "scoring"
            self.report.say("scoring the final state")
            score, recording = await self.scorer.score_final(
                self._agent_started_at, protocol.returned
            )
        except asyncio.CancelledError:
            why = self.options.cancel_reason() if self.options.cancel_reason else None
            during = "during the episode" if stage == "episode" else "during scoring"
            protocol.end("error" if why else "aborted")
            error = f"{why} {during}" if why else f"aborted during {stage}"
            kind: ErrorKind = error_kind(why) if why else "aborted"
            await self._finish(protocol, "error", error, final_frame or self._end_frame, kind)
            raise
        except Aborted:
            protocol.end("aborted")
            reason = "aborted by the person in the loop"
            return await self._ended_in_error(protocol, reason, self._end_frame, "aborted")
        except Exception as exc:
            reason = describe_error(exc)
            if stage == "scoring":
                reason = f"scoring failed: {reason}"
            log.debug("episode %s failed", episode_id, exc_info=True)
            protocol.end("error")
            if isinstance(exc, DesktopDied) and self._end_frame is None:
                self._end_frame = records.last_frame_path  # the last screen the agent saw
            return await self._ended_in_error(protocol, reason, self._end_frame, error_kind(exc))
        finally:
            requests.cancel()
            await asyncio.wait({requests})
            await self.agent.close()
        await records.record_score(score)
        await records.archive(
            recording,
            protocol.returned,
            agent_started_at=self._agent_started_at,
            phase_reads=self.scorer.phase_reads,
        )
        if self._integrity is not None:
            await records.record_integrity(self._integrity, recording.recorded)
        await self._finish(protocol, "finished", None, final_frame)
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

    async def _finish(
        self,
        protocol: Protocol,
        status: Literal["finished", "error"],
        error: str | None,
        final_frame: str | None,
        kind: ErrorKind | None = None,
    ) -> None:
        await self.records.finish(
            protocol,
            status,
            error,
            final_frame,
            final_windows=self._end_windows,
            person_wait_seconds=round(self.turns.waits.total, 3),
            paused_seconds=round(self.paused.seconds(), 3),
            error_kind=kind,
        )

    async def _ended_in_error(
        self, protocol: Protocol, reason: str, final_frame: str | None, kind: ErrorKind
    ) -> EpisodeResult:
        """Record the episode as ended in an error (the protocol says how it ended)."""
        await self._finish(protocol, "error", reason, final_frame, kind)
        return EpisodeResult(
            self.records.episode_id,
            self.task.id,
            "error",
            protocol.ended or "error",
            None,
            None,
            protocol.steps,
            reason,
            error_kind=kind,
        )

    # -- the loop ---------------------------------------------------------------------

    async def _play(self, protocol: Protocol) -> str | None:
        """Reset, set up and run the agent loop; returns the final frame's path."""
        desktop = self.desktop
        prepared = self.prepared
        if prepared is None:
            prepared = await prepare_start(self.task, desktop, self.backend, say=self.report.say)
        else:
            self._check_prepared(prepared)
            self.report.say(f"desktop brought to its start state ahead ({prepared.seconds:.1f} s)")
        await self._take_start(prepared)
        await self.records.record_messages(protocol.conversation)
        started = time.monotonic()
        try:
            # Raced against the desktop's death: an agent thinking, or a person
            # pausing, would otherwise learn of it only at their next frame.
            return await while_alive(desktop, self._agent_loop(protocol))
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

    async def _take_start(self, prepared: PreparedStart) -> None:
        """Record how the desktop reached its start state, done now or ahead; when it
        failed, keep the last frame and windows the setup saw, and raise its error."""
        await self.records.record_setup(prepared.as_json())
        if prepared.error is None:
            return
        self._end_windows = prepared.seen.windows
        if prepared.seen.frame is not None:
            try:
                self._end_frame = await self.records.save_frame("setup-failed", prepared.seen.frame)
            except Exception:  # the setup's error is the one to report
                log.warning("episode %s: cannot save setup's last frame", self.records.episode_id)
        raise prepared.error

    async def _agent_loop(self, protocol: Protocol) -> str | None:
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
                keep_image=self.records.keep_image,
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
                await self._between_steps(protocol)
                if protocol.check_time(self._elapsed(started)) is not None:
                    break
                await self._step(protocol, started)
        finally:
            await self._integrity.stop()
        final = await self.desktop.frame()
        return await self.records.save_frame("final", final)

    async def _between_steps(self, protocol: Protocol) -> None:
        control = self.control
        await self._take_over(protocol)
        if control.paused:
            self.report.say("paused")
            # From here, not from the key press: the step in flight then was the
            # agent's time. The person's own actions while paused are not the agent's.
            self.paused.begin()
            try:
                while control.paused and not control.abort_requested:
                    await control.wait_while_paused_for_person()
                    await self._take_over(protocol)
            finally:
                self.paused.end()
            if not control.abort_requested:
                self.report.say("resumed")
        if control.abort_requested:
            raise Aborted
        for text, kind in control.take_injections():
            await self.records.record_messages([protocol.inject(text, kind, "person")])

    async def _take_over(self, protocol: Protocol) -> None:
        """The person's own actions from the live view, if they sent any."""
        await take_over(
            self.control, protocol, self.desktop, self.records, self.options, self.report
        )

    async def _step(self, protocol: Protocol, started: float) -> None:
        step = protocol.steps
        frame = await self.desktop.frame()
        # Written while the agent decides: the agent sees the screen without waiting
        # for its PNG (the longest part of the harness's own time per step), and the
        # step's record waits for the file.
        saving = asyncio.ensure_future(self.records.save_frame(f"{step:05d}", frame))
        try:
            await self._decide_and_act(protocol, started, step, frame, saving)
        finally:
            await saving

    async def _decide_and_act(
        self,
        protocol: Protocol,
        started: float,
        step: int,
        frame: Frame,
        saving: asyncio.Future[str | None],
    ) -> None:
        task = self.task
        observation = Observation(
            frame=frame,
            active_message=protocol.active_message,
            conversation=tuple(protocol.conversation),
            steps_taken=step,
        )
        active = protocol.active_message
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
                action = await self.control.unless_aborted(self.agent.decide(observation))
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
                    adaptive=self.options.settle_adaptive,
                )
                settle_seconds = time.monotonic() - t2
        elapsed = self._elapsed(started)
        if action is None:  # no action came of the answer: recorded as it was sent
            stored_action: dict[str, Any] = {"kind": "rejected", "raw": raw}
            kind, description = "rejected", "rejected answer"
        else:
            stored_action = action_to_dict(action)
            kind, description = action_kind(action), describe_action(action)
        if error is not None or action is None:
            outcome = protocol.on_rejected(elapsed)
        else:
            outcome = protocol.on_agent(action, elapsed)
        frame_path = await saving
        new_messages = await self.records.record_step(
            idx=step,
            action=stored_action,
            kind=kind,
            description=description,
            started_at=step_started,
            agent_seconds=agent_seconds,
            act_seconds=act_seconds,
            settle_seconds=settle_seconds,
            frame=frame_path,
            phase_index=phase_index,
            active=active,
            error=error,
            agent_info=self.agent.step_info(),
            messages=outcome.messages,
            delivered_phase=outcome.delivered_phase,
        )
        self.report.say(f"step {step}: {description}" + (f" — rejected: {error}" if error else ""))
        self.report.emit(
            StepEvent(step, action, description, agent_seconds, act_seconds, settle_seconds, error)
        )
        for message in new_messages:
            self.report.emit(MessageEvent(message))
        # What follows a step recorded with its messages and phase delivery: the
        # delivered phase's checks, then the user's reply, if the step called for one.
        await self._delivered(protocol, outcome)
        replied = await self.turns.reply(
            protocol, action, outcome, elapsed=lambda: self._elapsed(started)
        )
        if replied is not None:
            await self.records.record_messages(replied.messages, replied.delivered_phase)
            await self._delivered(protocol, replied)

    async def _delivered(self, protocol: Protocol, outcome: Outcome) -> None:
        """A phase delivered (by the script, or in the person's words): its checks."""
        if outcome.delivered_phase is not None:
            self.report.emit(PhaseEvent(outcome.delivered_phase, protocol.steps))
            self.report.say(f"phase {outcome.delivered_phase + 1} delivered")
            await self.scorer.score_phase(outcome.delivered_phase, self._agent_started_at)
