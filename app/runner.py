"""The episode runner: reset → setup → (observe, decide, act, protocol)* → score → store.

Every step is written to the store before the next one begins, so a crash loses
at most the step in flight. An episode that raises is stored with status `error`
and the reason, never scored as a pass. Frames are PNG-encoded in a worker thread
so the event loop (and a TUI on it) stays responsive.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from app.actions import Action, Ask, action_kind, action_to_dict, describe_action, is_gui_action
from app.agents.base import Agent, AgentContext, Observation
from app.desktops.base import Desktop, Frame
from app.desktops.xwindows import active_window_title
from app.errors import ActionError, DeskLoopError
from app.protocol import EndReason, Message, Outcome, PhaseSpec, Protocol
from app.scoring import ScoreResult, score_task
from app.setup import run_setup
from app.store import Store
from app.store.frames import encode_png
from app.tasks.model import Task
from app.tasks.triggers import trigger_to_raw
from app.users import User

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunOptions:
    settle_timeout: float = 3.0
    """Upper bound on waiting for the screen to settle after an action."""
    settle_quiet: float = 0.1
    """The screen must stay unchanged this long to count as settled."""
    settle_change_wait: float = 0.3
    """How long to wait for an action's first visible effect."""
    store_frames: bool = True
    batch_id: str | None = None


@dataclass
class EpisodeResult:
    episode_id: int
    task_id: str
    status: str
    end_reason: str | None
    passed: bool | None
    score: float | None
    steps: int
    error: str | None = None
    checks: list[dict[str, Any]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "episode": self.episode_id,
            "task": self.task_id,
            "status": self.status,
            "end_reason": self.end_reason,
            "passed": bool(self.passed),
            "score": self.score if self.score is not None else 0.0,
            "steps": self.steps,
            "error": self.error,
        }


class GuestProbe:
    """The privileged probe scripted agents use, answered through the guest channel."""

    def __init__(self, desktop: Desktop) -> None:
        self._desktop = desktop

    async def active_window_title(self) -> str:
        return await active_window_title(self._desktop.guest)

    async def file_exists(self, path: str) -> bool:
        return await self._desktop.guest.exists(path)


class EpisodeRunner:
    """Runs one episode; `progress` receives short status lines (for CLI/TUI)."""

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
    ) -> None:
        self.task = task
        self.desktop = desktop
        self.agent = agent
        self.user = user
        self.store = store
        self.backend = backend
        self.options = options or RunOptions()
        self._progress = progress
        self._message_ids: dict[int, int] = {}
        self._last_frame_digest: bytes | None = None
        self._last_frame_path: str | None = None
        self.episode_id: int | None = None
        self.protocol: Protocol | None = None

    def _say(self, text: str) -> None:
        if self._progress is not None:
            self._progress(text)

    async def run(self) -> EpisodeResult:
        task = self.task
        episode_id = self.store.start_episode(
            task_id=task.id,
            task_path=str(task.source),
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
            },
            batch_id=self.options.batch_id,
        )
        self.episode_id = episode_id
        self.store.init_phases(
            episode_id,
            [
                {"message": p.message, "trigger": trigger_to_raw(p.parsed_trigger), "kind": p.kind}
                for p in task.phases
            ],
        )
        protocol = Protocol(
            instruction=task.instruction,
            phases=[PhaseSpec(p.message, p.parsed_trigger, p.kind) for p in task.phases],
            max_steps=task.budget.steps,
            max_seconds=task.budget.seconds,
        )
        self.protocol = protocol
        final_frame: str | None = None
        stage = "episode"
        try:
            final_frame = await self._play(episode_id, protocol)
            stage = "scoring"
            self._say("scoring the final state")
            score = await score_task(task, self.desktop.guest)
        except asyncio.CancelledError:
            protocol.end(EndReason.ABORTED)
            self._finish(episode_id, protocol, "error", f"aborted during {stage}", final_frame)
            raise
        except Exception as exc:
            reason = _describe_error(exc)
            if stage == "scoring":
                reason = f"scoring failed: {reason}"
            log.debug("episode %s failed", episode_id, exc_info=True)
            protocol.end(EndReason.ERROR)
            self._finish(episode_id, protocol, "error", reason, final_frame)
            return EpisodeResult(
                episode_id,
                task.id,
                "error",
                protocol.ended.value if protocol.ended else None,
                None,
                None,
                protocol.steps,
                reason,
            )
        finally:
            await self.agent.close()
        self._record_score(episode_id, score)
        self._finish(episode_id, protocol, "finished", None, final_frame)
        ended = protocol.ended.value if protocol.ended else None
        return EpisodeResult(
            episode_id,
            task.id,
            "finished",
            ended,
            score.passed,
            score.score,
            protocol.steps,
            None,
            [row.__dict__ for row in score.checks],
        )

    # -- the loop ---------------------------------------------------------------------

    async def _play(self, episode_id: int, protocol: Protocol) -> str | None:
        """Reset, set up and run the agent loop; returns the final frame's path."""
        task = self.task
        self._say(f"resetting the {self.backend} desktop")
        await self.desktop.reset()
        self._say("running setup")
        await run_setup(task, self.desktop, self._say)
        self._record_messages(episode_id, protocol.conversation)
        info = self.desktop.info()
        await self.agent.start(
            AgentContext(task.id, info.width, info.height, GuestProbe(self.desktop))
        )
        started = time.monotonic()
        while protocol.ended is None:
            if protocol.check_time(time.monotonic() - started) is not None:
                break
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
            remaining = task.budget.seconds - (t0 - started)
            try:
                action = await asyncio.wait_for(self.agent.decide(observation), remaining)
            except TimeoutError:
                protocol.end(EndReason.TIME_BUDGET)
                break
            agent_seconds = time.monotonic() - t0
            act_seconds = settle_seconds = 0.0
            error: str | None = None
            if is_gui_action(action):
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
            elapsed = time.monotonic() - started
            if error is not None:
                outcome = protocol.on_rejected(elapsed)
            else:
                outcome = protocol.on_agent(action, elapsed)
            self.store.record_step(
                episode_id,
                idx=step,
                action=action_to_dict(action),
                kind=action_kind(action),
                description=describe_action(action),
                started_at=step_started,
                agent_seconds=agent_seconds,
                act_seconds=act_seconds,
                settle_seconds=settle_seconds,
                frame=frame_path,
                phase_index=phase_index,
                active_message_id=active_id,
                error=error,
            )
            self._say(f"step {step}: {describe_action(action)}" + (f" — {error}" if error else ""))
            await self._apply_outcome(episode_id, protocol, action, outcome, started)
        final = await self.desktop.frame()
        return await self._save_frame(episode_id, "final", final)

    async def _apply_outcome(
        self,
        episode_id: int,
        protocol: Protocol,
        action: Action,
        outcome: Outcome,
        started: float,
    ) -> None:
        self._record_messages(episode_id, outcome.messages)
        if outcome.delivered_phase is not None:
            self.store.mark_phase_delivered(episode_id, outcome.delivered_phase, protocol.steps)
            self._say(f"phase {outcome.delivered_phase + 1} delivered")
        if outcome.needs_answer:
            assert isinstance(action, Ask)
            text, source = await self.user.answer(action.question)
            answered = protocol.answer(text, source, time.monotonic() - started)
            self._record_messages(episode_id, answered.messages)

    def _record_messages(self, episode_id: int, messages: Any) -> None:
        for message in messages:
            if id(message) in self._message_ids:
                continue
            self._message_ids[id(message)] = self._record_message(episode_id, message)

    def _record_message(self, episode_id: int, message: Message) -> int:
        return self.store.record_message(
            episode_id,
            role=message.role,
            kind=message.kind,
            text=message.text,
            step=message.step,
            phase_index=message.phase_index,
            source=message.source,
        )

    async def _save_frame(self, episode_id: int, name: str, frame: Frame) -> str | None:
        if not self.options.store_frames:
            return None
        png = await asyncio.to_thread(encode_png, frame.pixels)
        return self.store.save_frame(episode_id, name, png)

    def _finish(
        self,
        episode_id: int,
        protocol: Protocol,
        status: Literal["finished", "error"],
        error: str | None,
        final_frame: str | None,
    ) -> None:
        reason = (protocol.ended or EndReason.ERROR).value
        self.store.finish_episode(
            episode_id,
            status=status,
            end_reason=reason,  # type: ignore[arg-type]
            error=error,
            steps=protocol.steps,
            final_frame=final_frame,
        )

    def _record_score(self, episode_id: int, score: ScoreResult) -> None:
        self.store.record_score(
            episode_id,
            passed=score.passed,
            score=score.score,
            checks=[row.__dict__ for row in score.checks],
        )


def _describe_error(exc: BaseException) -> str:
    if isinstance(exc, DeskLoopError):
        return f"{exc.title}: {exc}"
    return f"{type(exc).__name__}: {exc}"
