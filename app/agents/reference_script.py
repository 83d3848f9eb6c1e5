"""The reference-script format: the file the scripted agent plays, and what it runs.

A script is YAML (a list, or a mapping with ``steps:``) or JSONL (one entry per
line). Each entry is an action in the compact form of `app.core.actions.parse_action`
(``- click: [120, 40]``, ``- key: ctrl+shift+e``, ``- type: hello``, ``- done``,
``- done: {answer: 2}`` for a task that asks for a returned value, ``- ask: Which
size?``) or a guard the agent waits on before its next action:

- ``- wait_for: {window: REGEX, timeout: 30}`` — the focused window's title matches;
- ``- wait_for: {no_window: REGEX, timeout: 30}`` — the focused window's title does
  not match (a dialog closed);
- ``- wait_for: {file: ~/Desktop/out.png, timeout: 30}`` — a file exists;
- ``- wait_for: {anchor: {image: anchors/003.png, at: [412, 88]}, timeout: 30}`` — the
  screen shows the region at ``at`` (its top-left corner) looking like the image, a cut
  of a recorded frame (`app.agents.anchors`: ``tolerance`` per channel, default 24,
  and the ``match`` share of agreeing pixels, default 0.9); the image is a path inside
  the script's own folder. Compiled demonstrations guard clicks with these;
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
  the program's output. Like a guard it is not a GUI action and is not a step, and
  its timeout stretches by the desktop's time scale as a guard's does.

The file is a pydantic model (`Script`: optional ``kind``, demonstration or oracle,
and ``description``; its ``steps``), validated as it loads: unknown keys are refused
and each problem names the file and the field (``ref.yaml: steps[3].wait_for.timeout:
...``). `script_entries` turns the model into what the agent runs: actions, and the
`WaitFor`, `Expect` and `Oracle` entries that know their place in the file.

Apart from the agent that plays it (`app.agents.scripted`): authoring compiles a
demonstration into this format, verifying reads a reference's kind, and proving cuts
sub-goals out of a script; none of them needs the agent to do so.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Discriminator, Field, PlainValidator, Tag, model_validator

from app.agents import anchors
from app.core.actions import Action, GuiAction, parse_action
from app.core.errors import ActionError, AgentError
from app.core.validation import Lines, StrictModel, prefixed, read_yaml_lines, validate

DEFAULT_GUARD_TIMEOUT = 30.0
DEFAULT_ORACLE_TIMEOUT = 300.0
FORMAT_NAME = "reference script"
GuardKind = Literal["window", "no_window", "file", "anchor"]


# ---------------------------------------------------------------- the file format


def _positive_seconds(value: Any) -> float:
    # Stricter than pydantic's float: YAML's `true` and a quoted "30" are typos here,
    # not numbers of seconds.
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError(f"must be a positive number (seconds), got {value!r}")
    return float(value)


def _regex(value: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"not a valid regex: {exc}") from None
    return value


Seconds = Annotated[float, PlainValidator(_positive_seconds)]
Regex = Annotated[str, AfterValidator(_regex)]
NonEmptyRegex = Annotated[str, Field(min_length=1), AfterValidator(_regex)]


def _inside_folder(value: str) -> str:
    if value.startswith(("/", "~")) or ".." in Path(value).parts or "\\" in value:
        raise ValueError(f"must be a relative path inside the script's folder, got {value!r}")
    return value


class AnchorSpec(StrictModel):
    """``anchor:``: a region of the screen that must look like a recorded image."""

    image: Annotated[str, Field(min_length=1), AfterValidator(_inside_folder)]
    """A PNG relative to the script's folder."""
    at: tuple[int, int]
    """Where the image's top-left corner is on the screen, [left, top] in pixels."""
    tolerance: Annotated[int, Field(ge=0, le=255, strict=True)] = anchors.DEFAULT_TOLERANCE
    match: Annotated[float, Field(gt=0, le=1, strict=True)] = anchors.DEFAULT_MATCH


class WaitForSpec(StrictModel):
    """``wait_for:``: one condition on the desktop, waited for before the next step."""

    window: NonEmptyRegex | None = None
    """The focused window's title matches this regex."""
    no_window: NonEmptyRegex | None = None
    """The focused window's title does not match this regex (a dialog closed)."""
    file: Annotated[str, Field(min_length=1)] | None = None
    """This file exists in the desktop's session (``~/`` is its home)."""
    anchor: AnchorSpec | None = None
    """The screen shows this region looking as recorded."""
    timeout: Seconds = DEFAULT_GUARD_TIMEOUT
    """Seconds before the agent FAILs naming this step."""
    resend_every: Seconds | None = None
    """While the condition does not hold, send the GUI action just before this guard
    again every that many seconds (each resend is a recorded step)."""

    @model_validator(mode="after")
    def _one_condition(self) -> WaitForSpec:
        conditions = (self.window, self.no_window, self.file, self.anchor)
        if sum(v is not None for v in conditions) != 1:
            raise ValueError("needs exactly one of window, no_window, file, anchor")
        return self

    @property
    def condition(self) -> tuple[GuardKind, str]:
        if self.window is not None:
            return "window", self.window
        if self.no_window is not None:
            return "no_window", self.no_window
        if self.anchor is not None:
            return "anchor", self.anchor.image
        assert self.file is not None  # _one_condition
        return "file", self.file


class WaitForStep(StrictModel):
    wait_for: WaitForSpec


class ExpectSpec(StrictModel):
    """``expect:``: the active user message matches, else the agent FAILs."""

    message: Regex


class ExpectStep(StrictModel):
    expect: ExpectSpec


class OracleSpec(StrictModel):
    """``oracle:``: a program run in the guest; a non-zero exit FAILs the agent."""

    run: Annotated[list[str], Field(min_length=1)]
    """The argv (never a shell string); a leading ``~/`` is the guest's home."""
    timeout: Seconds = DEFAULT_ORACLE_TIMEOUT

    @model_validator(mode="before")
    @classmethod
    def _short_form(cls, raw: Any) -> Any:
        if isinstance(raw, str):
            raise ValueError("needs an argv list of strings, never a shell string")
        return {"run": raw} if isinstance(raw, list) else raw  # ``- oracle: [argv...]``


class OracleStep(StrictModel):
    oracle: OracleSpec


def _action(raw: Any) -> Action:
    # The step's place in the file comes from the error's location, so the action
    # parser is given no `where` of its own and its empty prefix is dropped.
    try:
        return parse_action(raw, "")
    except ActionError as exc:
        raise ValueError(str(exc).removeprefix(": ")) from None


_ENTRY_KEYS = ("wait_for", "expect", "oracle")
# Pydantic puts a union member's tag into an error's location, before the member's
# fields; the tags are named apart from the keys so error messages can leave them out.
STEP_TAGS = tuple(f"step:{key}" for key in (*_ENTRY_KEYS, "action"))


def _step_tag(raw: Any) -> str:
    if isinstance(raw, dict) and len(raw) == 1 and next(iter(raw)) in _ENTRY_KEYS:
        return f"step:{next(iter(raw))}"
    return "step:action"  # anything else is parsed (and its errors named) as an action


Step = Annotated[
    Annotated[WaitForStep, Tag("step:wait_for")]
    | Annotated[ExpectStep, Tag("step:expect")]
    | Annotated[OracleStep, Tag("step:oracle")]
    | Annotated[Action, PlainValidator(_action), Tag("step:action")],
    Discriminator(_step_tag),
]


class Script(StrictModel):
    """A script file: its steps, and what kind of reference solution it is."""

    kind: Literal["demonstration", "oracle"] = "demonstration"
    """A GUI demonstration, or an oracle (the app's own scripting makes the end state);
    shown by `deskloop tasks verify`."""
    description: str | None = None
    """What the script does, for people reading it."""
    steps: Annotated[list[Step], Field(min_length=1)]
    """Actions (`app.core.actions.parse_action`'s compact or explicit form), guards and
    oracles, in order."""

    @model_validator(mode="after")
    def _resend_follows_an_action(self) -> Script:
        for i, step in enumerate(self.steps):
            resends = isinstance(step, WaitForStep) and step.wait_for.resend_every is not None
            if resends and (i == 0 or not isinstance(self.steps[i - 1], GuiAction)):
                raise ValueError(
                    f"steps[{i}].wait_for.resend_every: needs a GUI action right "
                    "before it to send again"
                )
        return self


# ---------------------------------------------------------------- what the agent runs


@dataclass(frozen=True)
class WaitFor:
    what: GuardKind
    value: str
    timeout: float
    where: str
    resend_every: float | None = None
    anchor: anchors.Anchor | None = None
    """The loaded image of an ``anchor`` guard."""


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


def script_entries(script: Script, source: str, folder: Path | None = None) -> list[Entry]:
    """What the agent runs for `script`, each guard and oracle knowing its place in
    `source` for the reasons it FAILs with; anchor images are read from `folder`, the
    script file's own (None: the script came from no file and may not have anchors).

    Raises:
        AgentError: an anchor image that is missing, unreadable or outside `folder`.
    """
    entries: list[Entry] = []
    for i, step in enumerate(script.steps):
        where = f"{source}: steps[{i}]"
        if isinstance(step, WaitForStep):
            what, value = step.wait_for.condition
            spec = step.wait_for
            anchor = None if spec.anchor is None else _load_anchor(spec.anchor, folder, where)
            entries.append(WaitFor(what, value, spec.timeout, where, spec.resend_every, anchor))
        elif isinstance(step, ExpectStep):
            entries.append(Expect(step.expect.message, where))
        elif isinstance(step, OracleStep):
            entries.append(Oracle(tuple(step.oracle.run), step.oracle.timeout, where))
        else:
            entries.append(step)
    return entries


def _load_anchor(spec: AnchorSpec, folder: Path | None, where: str) -> anchors.Anchor:
    where = f"{where}.wait_for.anchor.image"
    if folder is None:
        raise AgentError(f"{where}: anchors need a script file to be relative to")
    root = folder.resolve()
    path = (root / spec.image).resolve()
    if not path.is_relative_to(root):
        raise AgentError(f"{where}: {spec.image!r} resolves outside the script's folder {root}")
    try:
        pixels = anchors.load_anchor_image(path)
    except ValueError as exc:
        raise AgentError(f"{where}: {exc}") from None
    left, top = spec.at
    return anchors.Anchor(pixels, left, top, spec.tolerance, spec.match, spec.image)


def parse_script(raw_entries: list[Any], source: str) -> list[Entry]:
    """A list of steps as read from a script file named `source`.

    Raises:
        AgentError: one line per invalid step, ``SOURCE: steps[i].field: problem``.
    """
    script = validate(
        Script, {"steps": raw_entries}, source, FORMAT_NAME, error=AgentError, hidden=STEP_TAGS
    )
    return script_entries(script, source)


def read_script(path: Path) -> Script:
    """Read and validate a script file: YAML (a list of steps, or a mapping with
    ``steps:`` and optional ``kind`` and ``description``) or JSONL (a step a line).

    Raises:
        AgentError: unreadable file or invalid content, naming the file and the field.
    """
    raw: Any
    lines: Lines | None = None
    if path.suffix == ".jsonl":
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise AgentError(f"{path}: cannot read script: {exc.strerror or exc}") from None
        steps = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    steps.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise AgentError(f"{path}: line {n}: invalid JSON: {exc.msg}") from None
        raw = {"steps": steps}
    else:
        raw, _, lines = read_yaml_lines(path, "script", AgentError)
        if isinstance(raw, list):
            raw, lines = {"steps": raw}, prefixed(lines, "steps")
        elif not isinstance(raw, dict):
            raise AgentError(
                f"{path}: a script is a list of steps, or a mapping with 'steps' (and "
                "optional 'kind', 'description')"
            )
    return validate(Script, raw, path, FORMAT_NAME, error=AgentError, hidden=STEP_TAGS, lines=lines)


def load_script(path: Path) -> list[Entry]:
    """What the agent runs for the script file at `path` (see `read_script`).

    Raises:
        AgentError: unreadable file or an invalid entry, naming the file and entry.
    """
    return script_entries(read_script(path), str(path), path.parent)
