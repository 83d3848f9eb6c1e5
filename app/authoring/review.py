"""Reviewing a recorded demonstration and drafting its task: what `deskloop author
compile|draft` and the TUI's Author screen both do, written once.

- `load_review` reads a recording and compiles it (`Review`: its sub-goals, actions,
  boundaries and what each sub-goal changed in the home);
- `proposals` gives the checks proposed from its state diff, each a `CheckItem` the
  researcher accepts, edits or drops; `parse_check` reads a check typed by hand,
  validated like a task's evaluate tree;
- `write_task` drafts the task from the review and the researcher's `DraftForm`
  (instruction, phase messages, the accepted checks) and writes it into the library.

All of it blocks (files, compiling): the TUI calls it in a thread.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from app.authoring.compile import CompiledReference, compile_recording
from app.authoring.draft import PhaseDraft, WrittenTask, draft_task, write_draft
from app.authoring.propose import propose_recording, subgoal_diffs
from app.authoring.recording import Recording, RecordingError, read_recording
from app.authoring.start_state import StartState, read_start_state
from app.checks.tree import parse_tree
from app.core.actions import describe_action
from app.core.errors import TaskError


@dataclass
class Review:
    """A recording compiled, for the researcher to review before drafting."""

    folder: Path
    recording: Recording
    start: StartState
    compiled: CompiledReference
    changed: list[str] = field(default_factory=list)
    """What each sub-goal changed in the home (the state diff), in sub-goal order;
    empty when the recording has no snapshots."""

    def subgoals(self) -> list[tuple[list[str], str | None]]:
        """Each sub-goal's actions (``12.30 s  click(...)``) and the note of the
        boundary that ends it (None for the last sub-goal, which no boundary ends)."""
        out: list[tuple[list[str], str | None]] = []
        marks, actions = self.compiled.boundaries, self.compiled.actions
        for n, span in enumerate(self.compiled.subgoals):
            lines = [
                f"{actions[i].started:7.2f} s  {describe_action(actions[i].action)}" for i in span
            ]
            out.append((lines, marks[n].note if n < len(marks) else None))
        return out

    @property
    def summary(self) -> str:
        recording, compiled = self.recording, self.compiled
        state = "ended normally" if recording.ended else "cut off (a crash or a kill)"
        return (
            f"{self.folder}: {len(recording.events)} events, {state}; "
            f"{len(compiled.actions)} actions, {len(compiled.boundaries)} boundaries, "
            f"{len(compiled.steps)} reference steps, {len(compiled.anchors)} anchors"
        )


def load_review(folder: Path) -> Review:
    """Read and compile the recording in `folder` (blocking: call it in a thread).

    Raises:
        RecordingError / StartStateError / TaskError: not a recording, no start state,
            or nothing to compile; the message names the file.
    """
    recording = read_recording(folder)
    start = read_start_state(folder)
    compiled = compile_recording(recording, "anchors/preview")
    try:
        changed = [d.words() for d in subgoal_diffs(folder)]
    except RecordingError:
        changed = []  # unreadable snapshots: the review goes on without them
    return Review(folder, recording, start, compiled, changed)


@dataclass(frozen=True)
class Proposal:
    """A check proposed for the task: an entry of its evaluate tree (or of phase
    `phase`'s checks), why it is proposed, and files it needs copied into the task
    (path relative to the task's folder → source)."""

    check: dict[str, Any]
    why: str
    files: dict[str, Path] = field(default_factory=dict)
    phase: int | None = None
    """1-based: a check of the phase delivered at that boundary; None: the task's."""


def proposals(folder: Path, task_id: str) -> list[Proposal]:
    """The checks proposed from the recording's state diff (`app.authoring.propose`):
    the task's (start → end), then each phase's (its sub-goal's diff); expected files
    named under the task's own ``assets/TASK_ID/expected``. Blocking: call it in a
    thread. A recording without state snapshots proposes nothing.
    """
    try:
        found = propose_recording(folder, f"assets/{task_id}/expected")
    except RecordingError:
        return []
    marks = len(read_recording(folder).marks)
    cut = "" if found.cut_at is None else f"(cut off: as of {found.cut_at}) "
    out = [Proposal(p.entry, f"{cut}{p.why}", dict(p.assets)) for p in found.final]
    for n, phase in enumerate(found.phases[:marks], 1):
        out += [Proposal(p.entry, f"phase {n}: {p.why}", dict(p.assets), n) for p in phase]
    return out


def retarget(value: Any, old: str, new: str) -> Any:
    """`value` with task-relative paths under ``assets/OLD/`` moved to ``assets/NEW/``
    (the id was changed in the review after the checks were proposed)."""
    if old == new:
        return value
    if isinstance(value, str) and value.startswith(f"assets/{old}/"):
        return f"assets/{new}/" + value.removeprefix(f"assets/{old}/")
    if isinstance(value, dict):
        return {k: retarget(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [retarget(v, old, new) for v in value]
    return value


def unpinned_track(item: CheckItem, said: list[str]) -> dict[str, Any]:
    """`item`'s check, without the track a proposed `kdenlive_clips` pinned when the
    instruction and the phase messages (`said`) never name that track: the author's
    clips landed on V1, but an agent that puts them on V2 did what was asked. A check
    edited or written by hand is kept as it is."""
    check = item.check
    track = check.get("track")
    if check.get("check") != "kdenlive_clips" or not isinstance(track, str):
        return check
    if item.as_proposed is None or check != item.as_proposed:
        return check
    words = [re.escape(track)]
    if track[:1] in "VA" and track[1:].isdigit():  # V2 is also "video track 2"
        kind = "video" if track[0] == "V" else "audio"
        words.append(rf"(?:{kind} )?track {track[1:]}")
    if any(re.search(rf"\b(?:{'|'.join(words)})\b", text, re.I) for text in said):
        return check
    return {k: v for k, v in check.items() if k != "track"}


def _renamed(value: Any, names: dict[str, str]) -> Any:
    """`value` with each string that is a key of `names` replaced by its value."""
    if isinstance(value, str):
        return names.get(value, value)
    if isinstance(value, dict):
        return {k: _renamed(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, names) for v in value]
    return value


CheckState = Literal["proposed", "accepted", "dropped"]


@dataclass
class CheckItem:
    """One check in the review: proposed (not yet accepted), accepted or dropped."""

    check: dict[str, Any]
    why: str
    state: CheckState = "proposed"
    files: dict[str, Path] = field(default_factory=dict)
    phase: int | None = None
    """1-based: a check of the phase delivered at that boundary; None: the task's."""
    as_proposed: dict[str, Any] | None = None
    """The check as it was proposed (None: written by hand); a check still equal to it
    is the proposal's, which the draft may loosen (`unpinned_tracks`)."""

    @classmethod
    def proposed(cls, proposal: Proposal) -> CheckItem:
        return cls(
            dict(proposal.check),
            proposal.why,
            "proposed",
            dict(proposal.files),
            proposal.phase,
            dict(proposal.check),
        )

    @property
    def text(self) -> str:
        """The check as YAML, one flow mapping (what an edit starts from)."""
        return yaml.safe_dump(self.check, default_flow_style=True, sort_keys=False).strip()


def parse_check(text: str, where: str = "check") -> dict[str, Any]:
    """A check entry typed as YAML (``{check: file_exists, path: ~/a.png}``, or a
    group with ``all``/``any``), validated like a task's evaluate tree.

    Raises:
        TaskError: not YAML, or not a valid check; the message names the field
            (``check.path: file_exists needs this parameter``).
    """
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise TaskError(f"{where}: not YAML ({exc})".replace("\n", " ")) from None
    parse_tree(value, where)  # TreeError (a TaskError) names the field
    assert isinstance(value, dict)  # parse_tree refuses anything but a mapping
    return value


@dataclass
class DraftForm:
    """What the researcher typed in the review."""

    task_id: str
    title: str
    instruction: str
    messages: list[str]
    """One phase message per boundary."""
    checks: list[CheckItem]
    overwrite: bool = False
    proposed_for: str = ""
    """The task id the checks were proposed for (their expected files' folder)."""

    @property
    def accepted(self) -> list[CheckItem]:
        return [c for c in self.checks if c.state == "accepted"]


def write_task(review: Review, form: DraftForm, tasks_dir: Path) -> WrittenTask:
    """Draft the task from the reviewed recording and write it into `tasks_dir`
    (blocking: call it in a thread). Only accepted checks go in.

    Raises:
        TaskError: the draft or the written task does not validate (the message names
            the field); then nothing is left in the library.
    """
    task_id = form.task_id.strip()
    proposed_for = form.proposed_for or task_id
    files: dict[str, bytes] = {}
    first_of: dict[str, str] = {}  # a file's content digest → the name it is stored under
    same_as: dict[str, str] = {}  # a later name of content already stored → that name
    for item in form.accepted:
        for name, source in item.files.items():
            name = retarget(name, proposed_for, task_id)
            try:
                data = source.read_bytes()
            except OSError as exc:
                raise TaskError(f"{source}: cannot read the file a check needs: {exc}") from None
            # A file a phase and the end both produced (unchanged since) is stored once.
            first = first_of.setdefault(hashlib.sha256(data).hexdigest(), name)
            if first == name:
                files[name] = data
            else:
                same_as[name] = first

    said = [form.instruction, *form.messages]

    def checks_of(phase: int | None) -> list[dict[str, Any]]:
        return [
            _renamed(retarget(unpinned_track(item, said), proposed_for, task_id), same_as)
            for item in form.accepted
            if item.phase == phase
        ]

    draft = draft_task(
        review.recording,
        review.start,
        task_id=task_id,
        title=form.title.strip() or task_id,
        instruction=form.instruction,
        phases=[
            PhaseDraft(message, checks=checks_of(n)) for n, message in enumerate(form.messages, 1)
        ],
        checks=checks_of(None),
        files=files,
    )
    return write_draft(draft, tasks_dir, overwrite=form.overwrite)
