"""Replaying a recorded episode (`--agent replay:EPISODE`): its actions, in order, on a
fresh desktop, each after the screen has come to look as it did when it was recorded.

Before each action the agent compares the screen with the frame the recording saw
before that action: the share of pixels that differ by more than `PIXEL_TOLERANCE` in
some channel. Above `threshold`, it waits (reading the screen again, up to `wait`
seconds, stretched by the desktop's time scale) for the screen to catch up, as the
runner's settle waits do for the screen to be still; if it never does, that step
*diverged*, and the action is taken all the same. Every step's `agent_info` says
`recorded_step`, `screen_difference` and `diverged`; the first step that diverged is
`first_divergence`, on that step and on every later one, so the episode's last step
reports it. Rejected steps of the recording are skipped (they did nothing).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from PIL import Image

from app.agents.base import AgentContext, FrameProbe, Observation
from app.core.actions import Action, Fail, parse_action
from app.core.errors import ActionError, AgentError, DeskLoopError
from app.store import Store
from app.tasks.model import Task

PIXEL_TOLERANCE = 48
"""Levels (0-255) a channel may differ by before a pixel counts as changed."""
THRESHOLD = 0.01
"""Share of changed pixels above which the screen differs from the recording."""
WAIT = 5.0


@dataclass(frozen=True)
class RecordedStep:
    idx: int
    action: Action
    frame: Path | None
    """The screen the recording saw before this action (a PNG), if it was kept."""


def difference(now: npt.NDArray[np.uint8], then: npt.NDArray[np.uint8]) -> float:
    """The share of pixels that differ (1.0 when the sizes differ)."""
    if now.shape != then.shape:
        return 1.0
    changed = np.abs(now.astype(np.int16) - then.astype(np.int16)).max(axis=2) > PIXEL_TOLERANCE
    return float(changed.mean())


def recorded_steps(store: Store, episode_id: int, task: Task) -> list[RecordedStep]:
    """The actions of a recorded episode of `task`, with their frames.

    Raises:
        AgentError: no such episode, an episode of another task, or one without actions.
    """
    try:
        record = store.get_episode(episode_id)
    except DeskLoopError as exc:
        raise AgentError(f"replay:{episode_id}: {exc}") from None
    if record.task_id != task.id:
        raise AgentError(
            f"replay:{episode_id}: episode {episode_id} is of task {record.task_id}, not {task.id}"
        )
    steps = []
    for step in store.steps(episode_id):
        if step.kind == "rejected":
            continue
        try:
            action = parse_action(step.action, f"episode {episode_id} step {step.idx}")
        except ActionError as exc:
            raise AgentError(f"replay:{episode_id}: {exc}") from None
        frame = store.frame_path(step.frame) if step.frame else None
        steps.append(RecordedStep(step.idx, action, frame))
    if not steps:
        raise AgentError(f"replay:{episode_id}: the episode recorded no actions")
    return steps


def _load(path: Path) -> npt.NDArray[np.uint8] | None:
    try:
        with Image.open(path) as image:
            return np.asarray(image.convert("RGB"), dtype=np.uint8)
    except OSError:
        return None


class ReplayAgent:
    """An `Agent` that plays a recorded episode's actions back (see the module doc)."""

    def __init__(
        self,
        episode_id: int,
        steps: list[RecordedStep],
        *,
        threshold: float = THRESHOLD,
        wait: float = WAIT,
    ) -> None:
        self.name = f"replay:{episode_id}"
        self.episode_id = episode_id
        self.steps = steps
        self.threshold = threshold
        self.wait = wait
        self._next = 0
        self._context: AgentContext | None = None
        self._info: dict[str, Any] | None = None
        self.first_divergence: int | None = None

    def record(self) -> dict[str, Any]:
        settings = {"replay_of": self.episode_id, "threshold": self.threshold, "wait": self.wait}
        return {"agent_config": settings}

    async def start(self, context: AgentContext) -> None:
        self._context = context
        self._next = 0
        self.first_divergence = None

    async def close(self) -> None:
        return None

    def step_info(self) -> dict[str, Any] | None:
        return self._info

    async def decide(self, observation: Observation) -> Action:
        if self._context is None:
            raise AgentError("replay agent: decide() before start()")
        if self._next >= len(self.steps):
            self._info = {"replay_of": self.episode_id, "first_divergence": self.first_divergence}
            return Fail(f"the recording of episode {self.episode_id} has no more actions")
        step = self.steps[self._next]
        self._next += 1
        seen = await self._compare(step, observation.frame.pixels)
        diverged = seen is not None and seen > self.threshold
        if diverged and self.first_divergence is None:
            self.first_divergence = step.idx
        self._info = {
            "replay_of": self.episode_id,
            "recorded_step": step.idx,
            "screen_difference": None if seen is None else round(seen, 4),
            "diverged": diverged,
            "first_divergence": self.first_divergence,
        }
        return step.action

    async def _compare(self, step: RecordedStep, pixels: npt.NDArray[np.uint8]) -> float | None:
        """The screen's difference from the recording's, after waiting for it to come
        down below the threshold; None when the recording kept no frame."""
        assert self._context is not None
        if step.frame is None:
            return None
        then = await asyncio.to_thread(_load, step.frame)
        if then is None:
            return None
        seen = await asyncio.to_thread(difference, pixels, then)
        probe = self._context.probe
        deadline = time.monotonic() + self.wait * self._context.time_scale
        while seen > self.threshold and isinstance(probe, FrameProbe):
            if time.monotonic() >= deadline:
                break
            await asyncio.sleep(0.25)
            frame = await probe.frame()
            seen = await asyncio.to_thread(difference, frame.pixels, then)
        return seen
