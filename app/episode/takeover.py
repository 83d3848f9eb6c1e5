"""The person's own steps: what they did on the desktop from the live view (take-over),
run and recorded as steps of the episode with `actor="person"`. Part of
`EpisodeRunner`, kept apart from its loop.
"""

from __future__ import annotations

import time

from app.core.actions import action_kind, action_to_dict, describe_action
from app.core.errors import ActionError
from app.episode.control import EpisodeControl
from app.episode.events import StepEvent
from app.episode.protocol import Protocol
from app.episode.records import EpisodeRecords, jsonable


class TakeOverSteps(EpisodeRecords):
    """The runner's take-over steps (a mixin of `EpisodeRunner`)."""

    control: EpisodeControl

    async def _person_steps(self, episode_id: int, protocol: Protocol) -> None:
        """Run and record the person's own actions (take-over from the live view)."""
        for action in self.control.take_person_actions():
            if protocol.ended is not None or self.control.abort_requested:
                return
            step = protocol.on_person()
            frame = await self.desktop.frame()
            frame_path = await self._save_frame(episode_id, f"{step:05d}", frame)
            step_started = time.time()
            error: str | None = None
            t1 = time.monotonic()
            try:
                await self.desktop.act(action)
            except ActionError as exc:
                error = str(exc)
            act_seconds = time.monotonic() - t1
            settle_seconds = 0.0
            if error is None:
                t2 = time.monotonic()
                await self.desktop.settle(
                    timeout=self.options.settle_timeout,
                    quiet=self.options.settle_quiet,
                    change_wait=self.options.settle_change_wait,
                )
                settle_seconds = time.monotonic() - t2
            description = describe_action(action)
            await self._stored(
                self.store.record_step,
                episode_id,
                idx=step,
                action=jsonable(action_to_dict(action)),
                kind=action_kind(action),
                description=description,
                started_at=step_started,
                agent_seconds=0.0,
                act_seconds=act_seconds,
                settle_seconds=settle_seconds,
                frame=frame_path,
                phase_index=protocol.pending_phase,
                active_message_id=self._message_ids.get(id(protocol.active_message)),
                error=error,
                actor="person",
            )
            self._say(f"step {step} (person): {description}")
            self._emit(
                StepEvent(
                    step, action, description, 0.0, act_seconds, settle_seconds, error, "person"
                )
            )
