"""The scripted agent: replays a list of actions; also the reference-solution format.

A script is YAML (a list, or a mapping with ``steps:``) or JSONL (one entry per
line). Each entry is an action in the compact form of `app.core.actions.parse_action`
(``- click: [120, 40]``, ``- key: ctrl+shift+e``, ``- type: hello``, ``- done``,
``- ask: Which size?``) or a guard the agent waits on before its next action:

- ``- wait_for: {window: REGEX, timeout: 30}`` — the focused window's title matches;
- ``- wait_for: {no_window: REGEX, timeout: 30}`` — the focused window's title does
  not match (a dialog closed);
- ``- wait_for: {file: ~/Desktop/out.png, timeout: 30}`` — a file exists;
- any ``wait_for`` may add ``resend_every: SECONDS``: while the condition does not
  hold, the GUI action just before the guard is sent again every that many seconds
  (for apps that drop input while busy, such as Kdenlive ignoring a key while a clip
  job runs); each resend is a recorded step;
- ``- expect: {message: REGEX}`` — the active user message matches, else the agent
  FAILs (a replay that lost sync with the task's phases says so instead of
  typing into the wrong dialog);
- ``- oracle: [argv...]`` or ``- oracle: {run: [argv...], timeout: 120}`` — runs a
  program in the guest (an app's own scripting making the expected end state, for
  references marked ``kind: oracle``); a non-zero exit makes the agent FAIL with
  the program's output. Like a guard it is not a GUI action and is not a step.

A guard that times out makes the agent FAIL with the reason, so a broken
reference solution shows up as a failed episode naming the step. When the script
runs out without DONE the agent FAILs ("script ended").
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from app.agents.base import AgentContext, CommandProbe, Observation, Probe
from app.core.actions import Action, Fail, GuiAction, parse_action
from app.core.errors import ActionError, AgentError, GuestError

GUARD_POLL_SECONDS = 0.1
DEFAULT_GUARD_TIMEOUT = 30.0
DEFAULT_ORACLE_TIMEOUT = 300.0


@dataclass(frozen=True)
class WaitFor:
    what: Literal["window", "no_window", "file"]
    value: str
    timeout: float
    where: str
    resend_every: float | None = None


@dataclass(frozen=True)
class Expect:
    message: str
    where: str


@dataclass(frozen=True)
class Oracle:
    argv: tuple[str, ...]
    timeout: float
    where: str


Entry = Action | WaitFor | Expect | Oracle


def _parse_oracle(raw: Any, where: str) -> Oracle:
    timeout: Any = DEFAULT_ORACLE_TIMEOUT
    if isinstance(raw, dict):
        unknown = set(raw) - {"run", "timeout"}
        if unknown or "run" not in raw:
            raise AgentError(f"{where}: oracle takes {{run: [argv...], timeout: seconds}}")
        timeout = raw.get("timeout", DEFAULT_ORACLE_TIMEOUT)
        raw = raw["run"]
    if not isinstance(raw, list) or not raw or not all(isinstance(a, str) for a in raw):
        raise AgentError(f"{where}: oracle needs an argv list of strings (never a shell string)")
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise AgentError(f"{where}: oracle.timeout must be a positive number")
    return Oracle(tuple(raw), float(timeout), where)


def _parse_guard(key: str, raw: Any, where: str) -> WaitFor | Expect:
    if not isinstance(raw, dict):
        raise AgentError(f"{where}: {key} expects a mapping, got {raw!r}")
    if key == "expect":
        if set(raw) != {"message"} or not isinstance(raw["message"], str):
            raise AgentError(f"{where}: expect takes exactly {{message: REGEX}}")
        try:
            re.compile(raw["message"])
        except re.error as exc:
            raise AgentError(f"{where}: expect.message is not a valid regex: {exc}") from None
        return Expect(raw["message"], where)
    allowed = {"window", "no_window", "file", "timeout", "resend_every"}
    unknown = set(raw) - allowed
    if unknown:
        raise AgentError(f"{where}: wait_for has unknown key(s) {', '.join(sorted(unknown))}")
    kinds = [k for k in ("window", "no_window", "file") if k in raw]
    if len(kinds) != 1:
        raise AgentError(f"{where}: wait_for needs exactly one of window, no_window, file")
    kind = kinds[0]
    value = raw[kind]
    if not isinstance(value, str) or not value:
        raise AgentError(f"{where}: wait_for.{kind} must be a non-empty string")
    if kind != "file":
        try:
            re.compile(value)
        except re.error as exc:
            raise AgentError(f"{where}: wait_for.{kind} is not a valid regex: {exc}") from None
    timeout = raw.get("timeout", DEFAULT_GUARD_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise AgentError(f"{where}: wait_for.timeout must be a positive number")
    resend = raw.get("resend_every")
    if resend is not None and (
        isinstance(resend, bool) or not isinstance(resend, int | float) or resend <= 0
    ):
        raise AgentError(f"{where}: wait_for.resend_every must be a positive number")
    return WaitFor(
        kind,  # type: ignore[arg-type]
        value,
        float(timeout),
        where,
        None if resend is None else float(resend),
    )


def parse_script(raw_entries: list[Any], source: str) -> list[Entry]:
    entries: list[Entry] = []
    for i, raw in enumerate(raw_entries):
        where = f"{source}: steps[{i}]"
        if isinstance(raw, dict) and len(raw) == 1:
            key = next(iter(raw))
            if key in ("wait_for", "expect"):
                guard = _parse_guard(key, raw[key], where)
                if isinstance(guard, WaitFor) and guard.resend_every is not None:
                    previous = entries[-1] if entries else None
                    if not isinstance(previous, GuiAction):
                        raise AgentError(
                            f"{where}: wait_for.resend_every needs a GUI action right "
                            f"before it to send again"
                        )
                entries.append(guard)
                continue
            if key == "oracle":
                entries.append(_parse_oracle(raw[key], where))
                continue
        try:
            entries.append(parse_action(raw, where))
        except ActionError as exc:
            raise AgentError(str(exc)) from None
    return entries


def load_script(path: Path) -> list[Entry]:
    """Read a script file (YAML or JSONL).

    Raises:
        AgentError: unreadable file or an invalid entry, naming the file and entry.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise AgentError(f"{path}: cannot read script: {exc.strerror or exc}") from None
    raw: Any
    if path.suffix == ".jsonl":
        raw = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    raw.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise AgentError(f"{path}: line {n}: invalid JSON: {exc.msg}") from None
    else:
        try:
            raw = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise AgentError(f"{path}: YAML syntax error: {exc}") from None
        if isinstance(raw, dict):
            extra = set(raw) - {"steps", "kind", "description"}
            if extra or "steps" not in raw:
                raise AgentError(
                    f"{path}: a script mapping has 'steps' (and optional 'kind', "
                    f"'description'); unknown: {', '.join(sorted(extra)) or 'steps missing'}"
                )
            raw = raw["steps"]
    if not isinstance(raw, list) or not raw:
        raise AgentError(f"{path}: a script is a non-empty list of steps")
    return parse_script(raw, str(path))


class ScriptedAgent:
    def __init__(self, entries: list[Entry], name: str = "scripted") -> None:
        self.name = name
        self._entries = entries
        self._cursor = 0
        self._probe: Probe | None = None
        self._time_scale = 1.0
        self._last_action: GuiAction | None = None
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
        self._last_action = None
        self._guard_started = None

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
                outcome = await self._wait(entry)
                if isinstance(outcome, str):
                    self._guard_started = None
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
        while True:
            if guard.what == "file":
                if await self._probe.file_exists(guard.value):
                    return None
            else:
                last = await self._probe.active_window_title()
                found = re.search(guard.value, last) is not None
                if found == (guard.what == "window"):
                    return None
            if time.monotonic() >= deadline:
                seen = f"; the focused window was {last!r}" if guard.what != "file" else ""
                return (
                    f"{guard.where}: wait_for {guard.what} {guard.value!r} timed out "
                    f"after {timeout:g} s{seen}"
                )
            resend_due = resend_at is not None and time.monotonic() >= resend_at
            if resend_due and self._last_action is not None:
                return self._last_action
            await asyncio.sleep(GUARD_POLL_SECONDS)

    async def _oracle(self, oracle: Oracle) -> str | None:
        if not isinstance(self._probe, CommandProbe):
            return f"{oracle.where}: this desktop's probe cannot run oracle commands"
        try:
            result = await self._probe.run(list(oracle.argv), oracle.timeout)
        except GuestError as exc:
            return f"{oracle.where}: oracle {oracle.argv[0]!r} could not run: {exc}"
        if not result.ok:
            output = (result.stderr or result.stdout).decode("utf-8", "replace").strip()
            return (
                f"{oracle.where}: oracle {oracle.argv[0]!r} exited {result.returncode}: "
                f"{output[-500:]}"
            )
        return None

    def step_info(self) -> dict[str, Any] | None:
        return None

    async def close(self) -> None:
        return None
