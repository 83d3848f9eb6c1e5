"""The person's own steps: what they did on the desktop during the episode (take-over
from the live view, a viewer or noVNC on the recording proxy), run when not yet
delivered and recorded as steps of the episode with `actor="person"`.
"""

from __future__ import annotations

import time

from app.core.actions import action_kind, action_to_dict, describe_action
from app.core.errors import ActionError
from app.desktops.base import Desktop
from app.episode.control import EpisodeControl, RunOptions
from app.episode.events import Reporter, StepEvent
from app.episode.protocol import Protocol
from app.episode.records import EpisodeRecorder


async def take_over(
    control: EpisodeControl,
    protocol: Protocol,
    desktop: Desktop,
    recorder: EpisodeRecorder,
    options: RunOptions,
    report: Reporter,
) -> None:
    """Run and record the person's actions waiting in `control`, until the episode
    ends or the person aborts. Each takes a step number but no step of the agent's
    budget (`Protocol.on_person`)."""
    for taken in control.take_person_actions():
        if protocol.ended is not None or control.abort_requested:
            return
        action = taken.action
        step = protocol.on_person()
        # A delivered action's frame is the screen after it (its input came first).
        frame = await desktop.frame()
        frame_path = await recorder.save_frame(f"{step:05d}", frame)
        step_started = time.time()
        error: str | None = None
        t1 = time.monotonic()
        try:
            if not taken.delivered:
                await desktop.act(action)
        except ActionError as exc:
            error = str(exc)
        act_seconds = time.monotonic() - t1
        settle_seconds = 0.0
        if error is None:
            t2 = time.monotonic()
            await desktop.settle(
                timeout=options.settle_timeout,
                quiet=options.settle_quiet,
                change_wait=options.settle_change_wait,
            )
            settle_seconds = time.monotonic() - t2
        description = describe_action(action)
        await recorder.record_step(
            idx=step,
            action=action_to_dict(action),
            kind=action_kind(action),
            description=description,
            started_at=step_started,
            agent_seconds=0.0,
            act_seconds=act_seconds,
            settle_seconds=settle_seconds,
            frame=frame_path,
            phase_index=protocol.pending_phase,
            active=protocol.active_message,
            error=error,
            actor="person",
        )
        report.say(f"step {step} (person): {description}")
        report.emit(
            StepEvent(step, action, description, 0.0, act_seconds, settle_seconds, error, "person")
        )
