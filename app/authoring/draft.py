"""Turn a compiled recording into a task of the library and its reference.

What is written, for a task ``ID`` of app ``APP`` in the library ``tasks/``:

- ``tasks/APP/ID.yaml`` — the start state's setup (its uploads now from the task's own
  assets), the researcher's instruction, one phase per boundary (``agent_done`` unless
  told otherwise, the message drafted from the mark's note), the accepted checks (the
  whole task's, and each phase's own), level L3, a budget from the recording's size,
  and the recording's screen size (its clicks and anchors are pixels of that screen);
- ``tasks/APP/assets/ID/`` — the start state's files and any file a check compares with
  (an expected image);
- ``tasks/APP/references/ID.yaml`` and ``references/anchors/ID/`` — the compiled
  reference and its anchor images.

Everything is validated by the library's own loaders once written; when that fails,
what was written is removed again and the error names the field, so a draft never
leaves a half task in the library.
"""

from __future__ import annotations

import contextlib
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from app.agents.reference_script import load_script
from app.authoring.compile import CompiledReference, compile_recording
from app.authoring.proposed import weighted
from app.authoring.recording import Recording
from app.authoring.start_state import StartState
from app.core.errors import AgentError, TaskError
from app.tasks.loader import load_task, resolve_asset
from app.tasks.model import TASK_ID_PATTERN, UploadStep

TRIGGERS = ("agent_done", "agent_ask")
MIN_STEPS = 30
MIN_SECONDS = 600.0
MAX_SECONDS = 86_400.0


@dataclass(frozen=True)
class PhaseDraft:
    message: str
    trigger: Any = "agent_done"
    """A trigger as the task format writes it (``agent_done``, ``{step_count: 5}``...)."""
    kind: str | None = None
    checks: list[dict[str, Any]] = field(default_factory=list)
    """Checks that must hold when this phase is delivered (the sub-goal before it)."""


@dataclass
class TaskDraft:
    task_id: str
    app: str
    title: str
    instruction: str
    setup: list[dict[str, Any]]
    phases: list[PhaseDraft]
    checks: list[dict[str, Any]]
    reference: CompiledReference
    budget: dict[str, Any]
    screen: tuple[int, int] = (1280, 800)
    """The recording's screen size: the reference's clicks and anchors are its pixels."""
    files: dict[str, bytes] = field(default_factory=dict)
    """Files of the task, by path relative to its folder (``assets/ID/photo.png``, an
    expected image ``assets/ID/expected/Desktop/out.png``)."""
    level: str = "L3"

    def task_yaml(self) -> dict[str, Any]:
        raw: dict[str, Any] = {
            "id": self.task_id,
            "app": self.app,
            "level": self.level,
            "title": self.title,
            "instruction": self.instruction,
            "setup": self.setup,
        }
        if self.phases:
            raw["phases"] = [_phase_yaml(phase) for phase in self.phases]
        raw["budget"] = self.budget
        raw["screen"] = {"width": self.screen[0], "height": self.screen[1]}
        raw["evaluate"] = {"all": weighted(self.checks)}
        raw["reference"] = f"references/{self.task_id}.yaml"
        return raw


def _phase_yaml(phase: PhaseDraft) -> dict[str, Any]:
    raw: dict[str, Any] = {"message": phase.message, "trigger": phase.trigger}
    if phase.kind:
        raw["kind"] = phase.kind
    if phase.checks:
        raw["checks"] = {"all": phase.checks}
    return raw


def budget_for(compiled: CompiledReference, seconds: float) -> dict[str, Any]:
    """Room for an agent that explores: three times the author's actions and four
    times the author's time, never less than `MIN_STEPS` and `MIN_SECONDS`."""
    steps = max(MIN_STEPS, 3 * len(compiled.actions) + 10)
    wall = min(MAX_SECONDS, max(MIN_SECONDS, math.ceil(4 * seconds / 60) * 60))
    return {"steps": steps, "seconds": wall}


def draft_task(
    recording: Recording,
    start: StartState,
    *,
    task_id: str,
    title: str,
    instruction: str,
    phases: list[PhaseDraft],
    checks: list[dict[str, Any]],
    files: dict[str, bytes] | None = None,
) -> TaskDraft:
    """A draft of the task `recording` demonstrates, one phase per boundary.

    Raises:
        TaskError: a bad id, a phase count that is not the number of boundaries, no
            checks, an empty message, or a recording with nothing to compile.
    """
    problems = []
    if not TASK_ID_PATTERN.match(task_id):
        problems.append(f"id: {task_id!r} must be lowercase words joined by '-'")
    if len(phases) != len(recording.marks):
        problems.append(
            f"phases: {len(phases)} given, but the recording has {len(recording.marks)} "
            "boundaries (one phase each)"
        )
    for i, phase in enumerate(phases):
        if not phase.message.strip():
            problems.append(
                f"phases[{i}].message: empty (boundary {i + 1}'s mark had no note; give it "
                f"with --message {i + 1}=TEXT, or in the Author screen's review)"
            )
    if not checks:
        problems.append("evaluate: no check accepted; a task needs at least one")
    if not instruction.strip():
        problems.append("instruction: empty")
    if problems:
        raise TaskError(located_in(recording.folder, problems))
    compiled = compile_recording(
        recording, f"anchors/{task_id}", expected_messages=[p.message for p in phases]
    )
    seconds = recording.events[-1].t if recording.events else 0.0
    return TaskDraft(
        task_id=task_id,
        app=start.task.app,
        title=title,
        instruction=instruction,
        setup=_own_setup(start, task_id),
        phases=phases,
        checks=checks,
        reference=compiled,
        budget=budget_for(compiled, seconds),
        screen=(recording.meta.width, recording.meta.height),
        files={**_start_files(start, task_id), **(files or {})},
    )


def located_in(folder: Path, problems: list[str]) -> str:
    return "\n".join(f"{folder}: {p}" for p in problems)


def _own_setup(start: StartState, task_id: str) -> list[dict[str, Any]]:
    """The start state's setup with uploads from the task's own assets folder."""
    steps: list[dict[str, Any]] = []
    for step in start.task.setup:
        raw = step.model_dump(by_alias=True, exclude_defaults=True)
        if isinstance(step, UploadStep):
            name = Path(step.upload.src).name
            raw["upload"]["src"] = f"assets/{task_id}/{name}"
        steps.append(raw)
    return steps


def _start_files(start: StartState, task_id: str) -> dict[str, bytes]:
    files = {}
    for step in start.task.setup:
        if isinstance(step, UploadStep):
            path = resolve_asset(start.task.folder, step.upload.src, "upload.src")
            files[f"assets/{task_id}/{path.name}"] = path.read_bytes()
    return files


@dataclass(frozen=True)
class WrittenTask:
    task: Path
    reference: Path
    written: tuple[Path, ...]


def write_draft(draft: TaskDraft, library: Path, *, overwrite: bool = False) -> WrittenTask:
    """Write `draft` into the task library at `library` and validate it there.

    Raises:
        TaskError: the task exists (and not `overwrite`), or the written task or its
            reference does not validate (then nothing written is left behind).
    """
    app_folder = library / draft.app
    task_path = app_folder / f"{draft.task_id}.yaml"
    reference_path = app_folder / "references" / f"{draft.task_id}.yaml"
    if task_path.exists() and not overwrite:
        raise TaskError(f"{task_path}: a task of this id exists (--force replaces it)")
    written: list[Path] = []

    def put(path: Path, data: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        written.append(path)

    try:
        for name, data in draft.files.items():
            put(
                resolve_inside(app_folder / "assets" / draft.task_id, _under_assets(name, draft)),
                data,
            )
        for name in draft.reference.anchors:
            written.append(resolve_inside(app_folder / "references", name))
        draft.reference.write_anchors(app_folder / "references")
        script = draft.reference.script(f"Demonstration of {draft.task_id}, recorded by DeskLoop.")
        put(reference_path, _yaml(script).encode())
        put(task_path, _yaml(draft.task_yaml()).encode())
        load_task(task_path)
        load_script(reference_path)
    except (TaskError, AgentError, OSError, ValueError) as exc:
        for path in written:
            with contextlib.suppress(OSError):
                path.unlink()
        raise TaskError(f"the drafted task did not validate, nothing was kept: {exc}") from exc
    if overwrite:
        # A replaced draft's own files that this one did not write (an expected image
        # of a check no longer taken, an anchor of a click no longer made) would lie
        # in the library unused: remove them once the new draft has validated.
        kept = {path.resolve() for path in written}
        for folder in (
            app_folder / "assets" / draft.task_id,
            app_folder / "references" / "anchors" / draft.task_id,
        ):
            _remove_unwritten(folder, kept)
    return WrittenTask(task_path, reference_path, tuple(written))


def _remove_unwritten(folder: Path, kept: set[Path]) -> None:
    """Remove the files under `folder` not in `kept`, then its emptied folders."""
    if not folder.is_dir():
        return
    for path in sorted(folder.rglob("*"), reverse=True):  # children before parents
        if path.is_file() and path.resolve() not in kept:
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()


def _under_assets(name: str, draft: TaskDraft) -> str:
    """A task file's path below the task's own assets folder (refused elsewhere: a
    draft never writes over another task's files)."""
    prefix = f"assets/{draft.task_id}/"
    if not name.startswith(prefix):
        raise ValueError(f"{name!r}: a drafted task's files go under {prefix}")
    return name.removeprefix(prefix)


def resolve_inside(root: Path, name: str) -> Path:
    """`root / name`, refused when it would land outside `root`."""
    path = (root / name).resolve()
    if not path.is_relative_to(root.resolve()) or re.search(r"(^|/)\.\.(/|$)", name):
        raise ValueError(f"{name!r} is outside {root}")
    return path


class _Dumper(yaml.SafeDumper):
    """Block style for the structure, flow style for the leaves (``at: [76, 26]``,
    ``{check: file_exists, path: ~/a.png}``), as the library's hand-written files."""


def _is_leaf(value: Any) -> bool:
    if isinstance(value, list):
        return all(isinstance(v, str | int | float | bool) for v in value) and len(value) <= 8
    if isinstance(value, dict):
        return all(isinstance(v, str | int | float | bool) or _is_leaf(v) for v in value.values())
    return False


def _represent_dict(dumper: yaml.SafeDumper, data: dict[Any, Any]) -> yaml.Node:
    short = _is_leaf(data) and len(repr(data)) <= 70
    return dumper.represent_mapping("tag:yaml.org,2002:map", data, flow_style=short)


def _represent_list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=_is_leaf(data))


def _represent_float(dumper: yaml.SafeDumper, data: float) -> yaml.Node:
    if data.is_integer():
        return dumper.represent_int(int(data))
    return dumper.represent_float(data)


_Dumper.add_representer(dict, _represent_dict)
_Dumper.add_representer(list, _represent_list)
_Dumper.add_representer(float, _represent_float)


def _yaml(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=88)
