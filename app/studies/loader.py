"""Load and validate study files (`studies/<id>.yaml`).

As task files: unknown keys are refused and every problem is one line
``FILE:LINE: field.path: reason``. Beyond the format (`app.studies.model`) the loader
checks what needs the whole file or the disk: unique condition ids, task blocks that
fit the design, the consent file inside the study's folder, and, given a task
library, that every task id names a task in it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError

from app.core.errors import TaskError
from app.core.validation import located, read_yaml_lines, validation_problems
from app.studies.model import ENTRY_TAGS, Study
from app.tasks.loader import resolve_asset

STUDY_SUFFIXES = (".yaml", ".yml")


class StudyError(TaskError):
    """A study file that cannot be used, or a study command that cannot go on."""

    title = "Study error"


def load_study(path: Path | str, task_ids: Iterable[str] | None = None) -> Study:
    """The study in `path`; with `task_ids` (the library's), every task it names must
    be one of them.

    Raises:
        StudyError: one line per problem, each naming the file, the line and the field.
    """
    source = Path(path)
    raw, _, lines = read_yaml_lines(source, "study", StudyError)
    if not isinstance(raw, dict):
        got = "nothing" if raw is None else type(raw).__name__
        raise StudyError(f"{source}: a study file is a mapping of fields, got {got}")
    if "source" in raw:
        raise StudyError(
            located(source, ["source: unknown key (not part of the study format)"], lines)
        )
    try:
        study = Study.model_validate({**raw, "source": source})
    except ValidationError as exc:
        problems = validation_problems(exc, "study", Study, hidden=ENTRY_TAGS)
        raise StudyError(located(source, problems, lines)) from None
    problems = study_problems(study, task_ids)
    if problems:
        raise StudyError(located(source, problems, lines))
    return study


def study_problems(study: Study, task_ids: Iterable[str] | None = None) -> list[str]:
    """What the format alone does not refuse: `field.path: reason` for each."""
    problems: list[str] = []
    stem = study.source.stem
    if study.source.suffix in STUDY_SUFFIXES and study.id != stem:
        problems.append(f"id: {study.id!r} must equal the file name {stem!r}")
    seen: dict[str, int] = {}
    for n, condition in enumerate(study.conditions):
        if condition.id in seen:
            problems.append(
                f"conditions[{n}].id: {condition.id!r} is also conditions[{seen[condition.id]}]'s"
            )
        seen.setdefault(condition.id, n)
    blocks = study.tasks.blocks
    if study.design.participants == "within" and len(blocks) not in (1, len(study.conditions)):
        problems.append(
            f"tasks.blocks: {len(blocks)} blocks for {len(study.conditions)} conditions; "
            "within participants, give one block (every condition runs it) or one per "
            "condition position"
        )
    for b, block in enumerate(blocks):
        dupes = {task for task in block if block.count(task) > 1}
        problems += [f"tasks.blocks[{b}]: {task!r} is in the block twice" for task in sorted(dupes)]
    try:
        consent = resolve_asset(study.folder, study.consent, "consent")
    except ValueError as exc:
        problems.append(str(exc).replace("the task folder", "the study's folder"))
    else:
        if not consent.is_file():
            problems.append(f"consent: {study.consent!r} is not a file beside the study")
    if task_ids is not None:
        known = set(task_ids)
        if study.tasks.practice and study.tasks.practice not in known:
            problems.append(f"tasks.practice: no task {study.tasks.practice!r} in the library")
        for b, block in enumerate(blocks):
            problems += [
                f"tasks.blocks[{b}][{i}]: no task {task!r} in the library"
                for i, task in enumerate(block)
                if task not in known
            ]
    return problems


def consent_text(study: Study) -> str:
    """The consent Markdown (checked by `load_study`)."""
    return resolve_asset(study.folder, study.consent, "consent").read_text(encoding="utf-8")


def study_files(root: Path | str) -> list[Path]:
    """The study files under `root`, sorted."""
    folder = Path(root)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix in STUDY_SUFFIXES and p.is_file())


def find_study(ref: str, root: Path | str) -> Study:
    """A study by file path or by id in `root`.

    Raises:
        StudyError: no such study (the message lists those there are), or a bad file.
    """
    path = Path(ref)
    if path.suffix in STUDY_SUFFIXES or path.exists():
        return load_study(path)
    for candidate in study_files(root):
        if candidate.stem == ref:
            return load_study(candidate)
    there = ", ".join(p.stem for p in study_files(root)) or "none"
    raise StudyError(f"no study {ref!r} in {root} (there: {there})")
