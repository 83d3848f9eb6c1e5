"""The scripted agent: plays a reference script's entries in order, one action a step.

What it plays is `app.agents.reference_script`'s (the file format, validated as it
loads, and the entries it becomes): actions are returned as they are; a guard
(``wait_for``) is polled on the desktop's probe until it holds, resending the action
before it where the script says so; an ``expect`` compares the active user message;
an ``oracle`` runs its program in the guest. Guards and oracles are not steps, and
their timeouts stretch by the desktop's time scale.

A guard that times out makes the agent FAIL with the reason, so a broken
reference solution shows up as a failed episode naming the step. When the script
runs out without DONE the agent FAILs ("script ended").
"""

from __future__ import annotations

import asyncio
import re
import shlex
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from app.agents import anchors
from app.agents.base import (
    AgentContext,
    CommandProbe,
    FrameProbe,
    KeepImage,
    Observation,
    Probe,
)
from app.agents.reference_script import Entry, Expect, Oracle, WaitFor, load_script
from app.core.actions import Action, Fail, GuiAction
from app.core.errors import AgentError, GuestError
from app.core.integrity import ORACLE_INFO

GUARD_POLL_SECONDS = 0.1
LENIENT_GUARD_SECONDS = 10.0


class ScriptedAgent:
    """Runs script entries in order (see the module doc).

    `lenient_guards`: a guard that times out is passed over instead of FAILing, after
    at most `LENIENT_GUARD_SECONDS`. Only skip replays use it (a reference with one
    sub-goal left out, `app.proving.prove`): the later sub-goals' guards may wait for
    what the skipped one would have made, and the replay must still reach the end so
    the checks, not a guard, tell whether the sub-goal happened.
    """

    def __init__(
        self, entries: list[Entry], name: str = "scripted", *, lenient_guards: bool = False
    ) -> None:
        self.name = name
        self._entries = entries
        self._lenient = lenient_guards
        self._cursor = 0
        self._probe: Probe | None = None
        self._keep_image: KeepImage | None = None
        self._time_scale = 1.0
        self._last_action: GuiAction | None = None
        self._oracles: list[str] = []
        """Programs run in the guest since the last step, for its record (step_info)."""
        # When the guard under the cursor started waiting; kept across a resend so the
        # guard's timeout counts from its first check, not from the latest resend.
        self._guard_started: float | None = None

    @classmethod
    def from_file(cls, path: Path, name: str | None = None) -> ScriptedAgent:
        return cls(load_script(path), name or f"scripted:{path}")

    async def start(self, context: AgentContext) -> None:
        self._cursor = 0
        self._probe = context.probe
        self._time_scale = context.time_scale
        self._keep_image = context.keep_image
        self._last_action = None
        self._guard_started = None
        self._oracles = []

    async def decide(self, observation: Observation) -> Action:
        while self._cursor < len(self._entries):
            entry = self._entries[self._cursor]
            self._cursor += 1
            if isinstance(entry, Expect):
                active = observation.active_message.text
                if not re.search(entry.message, active):
                    return Fail(
                        f"{entry.where}: expected the active message to match "
                        f"{entry.message!r}, but it is {active!r}"
                    )
                continue
            if isinstance(entry, WaitFor):
                if self._lenient:
                    entry = replace(entry, timeout=min(entry.timeout, LENIENT_GUARD_SECONDS))
                outcome = await self._wait(entry)
                if isinstance(outcome, str):
                    self._guard_started = None
                    if self._lenient:
                        continue
                    return Fail(outcome)
                if outcome is not None:
                    self._cursor -= 1  # resent: come back to this guard next step
                    return outcome
                self._guard_started = None
                continue
            if isinstance(entry, Oracle):
                problem = await self._oracle(entry)
                if problem is not None:
                    return Fail(problem)
                continue
            if isinstance(entry, GuiAction):
                self._last_action = entry
            return entry
        return Fail("script ended without DONE")

    async def _wait(self, guard: WaitFor) -> str | GuiAction | None:
        """None when the condition holds, the action to resend, or why it timed out."""
        if self._probe is None:
            raise AgentError("scripted agent used before start()")
        now = time.monotonic()
        if self._guard_started is None:
            self._guard_started = now
        timeout = guard.timeout * self._time_scale
        deadline = self._guard_started + timeout
        resend_at = (
            None if guard.resend_every is None else now + guard.resend_every * self._time_scale
        )
        last = ""
        last_screen: npt.NDArray[np.uint8] | None = None
        while True:
            if guard.what == "file":
                if await self._probe.file_exists(guard.value):
                    return None
            elif guard.anchor is not None:
                if not isinstance(self._probe, FrameProbe):
                    return f"{guard.where}: this desktop's probe cannot read the screen"
                frame = await self._probe.frame()
                share = anchors.agreement(frame.pixels, guard.anchor)
                if share >= guard.anchor.match:
                    return None
                last = f"{share:.0%} of its pixels agreed, {guard.anchor.match:.0%} needed"
                last_screen = frame.pixels
            else:
                last = await self._probe.active_window_title()
                found = re.search(guard.value, last) is not None
                if found == (guard.what == "window"):
                    return None
            if time.monotonic() >= deadline:
                if guard.anchor is not None and last_screen is not None:
                    last += await self._keep_anchor_miss(guard, guard.anchor, last_screen)
                seen = {
                    "file": "",
                    "anchor": f"; {last}",
                }.get(guard.what, f"; the focused window was {last!r}")
                return (
                    f"{guard.where}: wait_for {guard.what} {guard.value!r} timed out "
                    f"after {timeout:g} s{seen}"
                )
            resend_due = resend_at is not None and time.monotonic() >= resend_at
            if resend_due and self._last_action is not None:
                return self._last_action
            await asyncio.sleep(GUARD_POLL_SECONDS)

    async def _keep_anchor_miss(
        self, guard: WaitFor, anchor: anchors.Anchor, screen: npt.NDArray[np.uint8]
    ) -> str:
        """Keep the recorded region, the live one and their difference with the episode;
        the words that say where they are ('' when the episode keeps no images)."""
        if self._keep_image is None:
            return ""
        live = anchors.region(screen, anchor)
        if live is None:
            return "; the region is off this screen (another screen size?)"
        step = guard.where.rsplit("steps[", 1)[-1].rstrip("]")
        kept = [
            await self._keep_image(f"anchor-{step}-{what}", pixels)
            for what, pixels in (
                ("recorded", anchor.pixels),
                ("live", live),
                ("difference", anchors.difference(live, anchor)),
            )
        ]
        paths = [path for path in kept if path is not None]
        if len(paths) != len(kept):
            return ""
        return f"; kept the recorded region, the live one and their difference: {', '.join(paths)}"

    async def _oracle(self, oracle: Oracle) -> str | None:
        if not isinstance(self._probe, CommandProbe):
            return f"{oracle.where}: this desktop's probe cannot run oracle commands"
        try:
            # The program runs in the guest, so a slower desktop (a VM under software
            # emulation renders several times slower) gets proportionally longer.
            timeout = oracle.timeout * self._time_scale
            result = await self._probe.run(list(oracle.argv), timeout)
        except GuestError as exc:
            return f"{oracle.where}: oracle {oracle.argv[0]!r} could not run: {exc}"
        # Not through the GUI, and not through the desktop's program watch either (the
        # probe is DeskLoop's own channel): the next step's record says it ran, and the
        # episode's integrity flags name it.
        self._oracles.append(f"{shlex.join(oracle.argv)} (exit {result.returncode})")
        if not result.ok:
            output = (result.stderr or result.stdout).decode("utf-8", "replace").strip()
            return (
                f"{oracle.where}: oracle {oracle.argv[0]!r} exited {result.returncode}: "
                f"{output[-500:]}"
            )
        return None

    def step_info(self) -> dict[str, Any] | None:
        """The oracle programs run before this step, if any (``{"oracle": [...]}``)."""
        if not self._oracles:
            return None
        ran, self._oracles = self._oracles, []
        return {ORACLE_INFO: ran}

    async def close(self) -> None:
        return None
