"""`DeskLoopEnv`: one task on one desktop as a `gymnasium.Env` (see `app.env`).

It is built on the same episode runner, protocol engine and store as every other
run, wired up by the same `app.episode.launch` (a desktop of the task's image), so
each episode is recorded (steps, frames, messages, score) and phases are delivered
by the task's triggers. The runner pulls actions from an agent; here
the agent is a bridge that hands each observation to `step`'s caller and waits
for the next action. The runner lives on an asyncio loop in a background thread;
`reset`, `step` and `close` are its synchronous facade.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine, Iterable
from pathlib import Path
from typing import Any, TypeVar

import gymnasium
import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from app.agents.base import AgentContext, Observation
from app.core.actions import Action, action_to_dict, parse_action, validate_action
from app.core.conversation import Message
from app.core.errors import ActionError, DeskLoopError, MalformedAction
from app.desktops.base import Desktop
from app.env.spaces import action_space, from_space, is_space_action, observation_space
from app.episode.control import RunOptions
from app.episode.events import EpisodeResult, RunnerEvent, StepEvent
from app.episode.launch import Episode, launch, task_desktop
from app.store import Store
from app.tasks.loader import find_task
from app.tasks.model import Task
from app.users.simulated import User

T = TypeVar("T")
Obs = dict[str, Any]


class _BridgeAgent:
    """The runner's agent: hands observations out, takes actions in."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.observations: asyncio.Queue[Observation] = asyncio.Queue()
        self.actions: asyncio.Queue[Any] = asyncio.Queue()

    async def start(self, context: AgentContext) -> None:
        return None

    async def decide(self, observation: Observation) -> Action:
        await self.observations.put(observation)
        raw = await self.actions.get()
        try:
            if isinstance(raw, Action):
                validate_action(raw, "env action")
                return raw
            if is_space_action(raw):
                return parse_action(from_space(raw, "env action"), "env action")
            return parse_action(raw, "env action")
        except ActionError as exc:
            raise MalformedAction(str(exc), raw) from None

    def step_info(self) -> dict[str, Any] | None:
        return None

    async def close(self) -> None:
        return None


def _message_dict(message: Message) -> dict[str, Any]:
    return {
        "role": message.role,
        "kind": message.kind,
        "text": message.text,
        "step": message.step,
        "source": message.source,
    }


class DeskLoopEnv(gymnasium.Env[Obs, Any]):
    """One task on one desktop, episode after episode (see `app.env`).

    `width` × `height` is the desktop's screen, and so the size of the screen in
    `observation_space` and of the points in `action_space`. `render_mode` is
    "rgb_array" (the default: `render` always returned the screen) or None.
    """

    # Frames come one per step, not at a rate; at 1 fps a recording (RecordVideo
    # needs some rate) plays an episode a step a second, about its own pace. Not the
    # ClassVar ruff asks for: gymnasium.Env declares metadata a plain attribute, and
    # mypy refuses a ClassVar over it.
    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 1}  # noqa: RUF012
    observation_space: spaces.Dict
    action_space: spaces.Dict

    def __init__(
        self,
        task: Task | str,
        *,
        backend: str = "local",
        store: Store | Path | str | None = None,
        user: User | None = None,
        tasks_dir: Path | str = "tasks",
        agent_name: str = "env",
        options: RunOptions | None = None,
        timeout: float = 900.0,
        width: int = 1280,
        height: int = 800,
        render_mode: str | None = "rgb_array",
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise DeskLoopError(
                f"render_mode {render_mode!r} is not supported; use 'rgb_array' or None"
            )
        self.task = task if isinstance(task, Task) else find_task(task, [tasks_dir])
        self.backend = backend
        self.render_mode = render_mode
        self.width, self.height = width, height
        self.observation_space = observation_space(width, height, self.task.budget.steps)
        self.action_space = action_space(width, height)
        self._owns_store = not isinstance(store, Store)
        if isinstance(store, Store):
            self.store = store
        else:
            self.store = Store(store) if store is not None else Store.memory()
        self._user = user
        self._agent_name = agent_name
        self._options = options or RunOptions()
        self._timeout = timeout
        """Most seconds one reset or step may take (setup, the action, scoring)."""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="deskloop-env", daemon=True
        )
        self._thread.start()
        self._desktop: Desktop | None = None
        self._launched: Episode | None = None
        self._episode: asyncio.Task[EpisodeResult] | None = None
        self._bridge: _BridgeAgent | None = None
        self._last_error: str | None = None
        self._last_screen: npt.NDArray[np.uint8] | None = None
        self._closed = False
        self.episode_id: int | None = None

    # -- the facade -----------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Obs, dict[str, Any]]:
        """End any running episode (recorded as aborted), reset the desktop, run the
        task's setup; return the first observation. `seed` seeds `np_random` and is
        recorded in `info` (the env draws nothing from it: tasks are deterministic);
        `options` is unused and accepted for the API."""
        super().reset(seed=seed)
        return self._call(self._reset())

    def step(self, action: Any) -> tuple[Obs, float, bool, bool, dict[str, Any]]:
        """One agent turn: an action in `action_space`'s form, an `app.core.actions`
        action, or its compact or explicit form."""
        return self._call(self._step(action))

    def render(self) -> npt.NDArray[np.uint8] | None:
        """A copy of the last screen seen (rgb_array); None before the first reset,
        or with render_mode None."""
        if self.render_mode is None or self._last_screen is None:
            return None
        return self._last_screen.copy()

    def close(self) -> None:
        """End a running episode (recorded as aborted) and release the desktop; a
        second call does nothing."""
        if self._closed:
            return
        try:
            self._call(self._close())
        finally:
            self._closed = True
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=30)
            self._loop.close()
            if self._owns_store:
                self.store.close()

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._closed:
            coro.close()
            raise DeskLoopError("the environment is closed")
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout=self._timeout)
        except TimeoutError:
            future.cancel()
            raise DeskLoopError(
                f"environment call took longer than {self._timeout:g} s; the episode was cancelled"
            ) from None

    # -- on the loop ----------------------------------------------------------------

    async def _stop_episode(self) -> None:
        episode, self._episode = self._episode, None
        if episode is not None and not episode.done():
            episode.cancel()  # the runner records the episode as aborted
            with contextlib.suppress(asyncio.CancelledError):
                await episode

    async def _reset(self) -> tuple[Obs, dict[str, Any]]:
        await self._stop_episode()
        if self._desktop is None:
            # Made once, for the task's image, and kept across resets (the runner
            # resets it): a VM's cold boot is paid once per environment.
            self._desktop = task_desktop(
                self.backend, self.task, width=self.width, height=self.height
            )
        bridge = _BridgeAgent(self._agent_name)
        self._bridge = bridge
        self._last_error = None

        def on_event(event: RunnerEvent) -> None:
            if isinstance(event, StepEvent):
                self._last_error = event.error

        launched = launch(
            self.task,
            self.store,
            backend=self.backend,
            agent=bridge,
            user=self._user or "simulated",
            desktop=self._desktop,
            options=self._options,
            on_event=on_event,
        )
        self._launched = launched
        self._episode = asyncio.ensure_future(launched.run())
        outcome = await self._next()
        self.episode_id = launched.episode_id
        if isinstance(outcome, EpisodeResult):
            raise DeskLoopError(
                f"reset failed: episode {outcome.episode_id} of {self.task.id} ended before "
                f"its first step: {outcome.error or outcome.status}"
            )
        shape = outcome.frame.pixels.shape
        if shape != (self.height, self.width, 3):
            # Checked once here, not per step: every observation would lie outside
            # observation_space, and RL libraries size their buffers by it.
            await self._stop_episode()
            raise DeskLoopError(
                f"the {self.backend} desktop's screen is {shape[1]}x{shape[0]}, but the "
                f"environment was made for {self.width}x{self.height}: pass its size as "
                "width and height"
            )
        return self._observation(outcome), {
            "episode_id": launched.episode_id,
            "task_id": self.task.id,
            "seed": self._np_random_seed,  # None until a reset is given a seed
        }

    async def _next(self) -> Observation | EpisodeResult:
        """The runner's next observation, or its result when the episode ended."""
        assert self._bridge is not None and self._episode is not None
        waiting = asyncio.ensure_future(self._bridge.observations.get())
        done, _ = await asyncio.wait({waiting, self._episode}, return_when=asyncio.FIRST_COMPLETED)
        if waiting in done:
            return waiting.result()
        waiting.cancel()
        return self._episode.result()

    async def _step(self, action: Any) -> tuple[Obs, float, bool, bool, dict[str, Any]]:
        if self._episode is None or self._bridge is None or self._episode.done():
            raise DeskLoopError("no running episode: call reset() first")
        shown = action_to_dict(action) if isinstance(action, Action) else action
        await self._bridge.actions.put(action)
        outcome = await self._next()
        if isinstance(outcome, Observation):
            info: dict[str, Any] = {"episode_id": self.episode_id}
            if self._last_error is not None:
                info["rejected"] = self._last_error
                info["action"] = shown
            return self._observation(outcome), 0.0, False, False, info
        return await self._final(outcome)

    async def _final(self, result: EpisodeResult) -> tuple[Obs, float, bool, bool, dict[str, Any]]:
        assert self._launched is not None and self._desktop is not None
        protocol = self._launched.runner.protocol
        try:
            frame = await self._desktop.frame()
            screen = frame.pixels
        except DeskLoopError:
            # The desktop died with the episode: the last screen seen, or a black one,
            # and a copy, so this observation shares no array with an earlier one.
            last = self._last_screen
            black = np.zeros((self.height, self.width, 3), np.uint8)
            screen = last.copy() if last is not None else black
        obs = self._obs(
            screen,
            protocol.active_message.text if protocol else self.task.instruction,
            protocol.conversation if protocol else [],
            result.steps,
        )
        terminated = result.status == "finished" and result.end_reason in ("done", "fail")
        truncated = not terminated
        info = {
            "episode_id": result.episode_id,
            "status": result.status,
            "end_reason": result.end_reason,
            "passed": result.passed,
            "score": result.score,
            "checks": result.checks,
            "error": result.error,
        }
        reward = float(result.score or 0.0)
        return obs, reward, terminated, truncated, info

    def _observation(self, observation: Observation) -> Obs:
        return self._obs(
            observation.frame.pixels,
            observation.active_message.text,
            observation.conversation,
            observation.steps_taken,
        )

    def _obs(
        self,
        screen: npt.NDArray[np.uint8],
        instruction: str,
        conversation: Iterable[Message],
        step: int,
    ) -> Obs:
        self._last_screen = screen
        return {
            "screen": screen,
            "instruction": instruction,
            # A tuple: what gymnasium's Sequence space holds.
            "messages": tuple(_message_dict(m) for m in conversation),
            "step": step,
        }

    async def _close(self) -> None:
        await self._stop_episode()
        if self._desktop is not None:
            await self._desktop.close()
            self._desktop = None


def make(task: str, **kwargs: Any) -> DeskLoopEnv:
    """An environment for a task id or file; unknown ids get "did you mean"."""
    return DeskLoopEnv(task, **kwargs)
