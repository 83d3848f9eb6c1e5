"""Load and validate task files; find tasks in the library.

Every error names the file, the field path and what was expected, e.g.
``tasks/gimp/x.yaml: phases[1].trigger: unknown trigger 'agent_dne'``. Asset paths
are resolved inside the task's folder and can never escape it.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import stat
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import ValidationError

from app.checks.tree import TreeError, leaves, parse_tree
from app.core.errors import TaskError
from app.core.validation import (
    Lines,
    located,
    parse_yaml_lines,
    read_file_bytes,
    validation_problems,
)
from app.tasks.model import APPS, SETUP_TAGS, OpenPageStep, Task, UploadStep

TASK_SUFFIXES = (".yaml", ".yml")


def _resolved_under(root: Path, pure: PurePosixPath) -> Path:
    """`(root / pure).resolve()` for a resolved `root` and a relative `pure` without
    '..': one lstat per part of `pure` instead of one per part of the whole path, when
    none of them is a symlink (the usual case); `resolve()` itself otherwise."""
    path = root
    for part in pure.parts:
        path = path / part
        try:
            if stat.S_ISLNK(os.lstat(path).st_mode):
                return (root / pure).resolve()
        except OSError:
            return (root / pure).resolve()
    return path


def resolve_asset(folder: Path, relative: str, field: str, *, root: Path | None = None) -> Path:
    """The asset's path inside `folder`; raises ValueError naming `field` otherwise.
    `root`: `folder.resolve()`, when the caller has it already."""
    pure = PurePosixPath(relative)
    if pure.is_absolute() or relative.startswith("~"):
        raise ValueError(f"{field}: asset path {relative!r} must be relative to the task folder")
    if ".." in pure.parts:
        raise ValueError(f"{field}: asset path {relative!r} must not contain '..'")
    root = folder.resolve() if root is None else root
    path = _resolved_under(root, pure)
    if not path.is_relative_to(root):
        raise ValueError(f"{field}: asset path {relative!r} escapes the task folder (symlink?)")
    if not path.is_file():
        raise ValueError(f"{field}: asset {relative!r} not found in {folder}")
    return path


MAX_SITE_FILES = 2000
MAX_SITE_BYTES = 64 * 1024 * 1024


def site_files(folder: Path, site: str, page: str, field: str) -> list[tuple[str, Path]]:
    """Every file of a web app's folder `site` (relative to the task folder `folder`),
    as (path relative to the site, real path), sorted; `page` must be one of them.

    Raises:
        ValueError: naming `field`: the folder or the page is missing, it or a file
            under it leads outside the task folder (a symlink), or it is too big.
    """
    pure = PurePosixPath(site)
    if pure.is_absolute() or site.startswith("~") or ".." in pure.parts:
        raise ValueError(f"{field}.site: {site!r} must be a folder inside the task folder")
    root = folder.resolve()
    base = (root / pure).resolve()
    if not base.is_relative_to(root):
        raise ValueError(f"{field}.site: {site!r} escapes the task folder (symlink?)")
    if not base.is_dir():
        raise ValueError(f"{field}.site: folder {site!r} not found in {folder}")
    found: list[tuple[str, Path]] = []
    total = 0
    for path in sorted(base.rglob("*")):
        real = _resolved_under(root, PurePosixPath(path.relative_to(root)))
        if not real.is_relative_to(root):
            rel = path.relative_to(base).as_posix()
            raise ValueError(f"{field}.site: {site}/{rel} leads outside the task folder")
        if real.is_file():
            total += real.stat().st_size
            found.append((path.relative_to(base).as_posix(), real))
        if len(found) > MAX_SITE_FILES or total > MAX_SITE_BYTES:
            raise ValueError(
                f"{field}.site: {site!r} is larger than a web app may be "
                f"({MAX_SITE_FILES} files, {MAX_SITE_BYTES // (1024 * 1024)} MiB)"
            )
    if page not in {rel for rel, _ in found}:
        raise ValueError(f"{field}.page: {page!r} is not a file of {site!r}")
    return found


class _Lookups:
    """The asset lookups that found their file, shared by the tasks of one `load_tasks`
    call. A library's tasks name the same files (every task on a web app names its
    folder, which is walked file by file: 69 tasks on 5 apps), and a library is read as
    one snapshot; the lookups were 40% of loading a cached task. A lookup that failed is
    not kept: it is made again, so that each task's error names its own field."""

    def __init__(self) -> None:
        self.roots: dict[Path, Path] = {}
        """A task folder → its resolved path."""
        self.assets: set[tuple[Path, str]] = set()
        """(resolved task folder, asset path) of the assets found."""
        self.sites: set[tuple[Path, str, str]] = set()
        """(task folder, site, page) of the web apps found whole."""

    def root(self, folder: Path) -> Path:
        root = self.roots.get(folder)
        if root is None:
            root = self.roots[folder] = folder.resolve()
        return root


def _asset_problems(task: Task, lookups: _Lookups | None = None) -> list[str]:
    problems: list[str] = []
    lookups = lookups or _Lookups()
    root = lookups.root(task.folder)

    def check(relative: str, field: str) -> None:
        if (root, relative) in lookups.assets:
            return
        try:
            resolve_asset(task.folder, relative, field, root=root)
        except ValueError as exc:
            problems.append(str(exc))
        else:
            lookups.assets.add((root, relative))

    for i, step in enumerate(task.setup):
        if isinstance(step, UploadStep):
            check(step.upload.src, f"setup[{i}].upload.src")
        elif isinstance(step, OpenPageStep):
            spec = step.open_page
            site = (task.folder, spec.site, spec.page)
            if site in lookups.sites:
                continue
            try:
                site_files(task.folder, spec.site, spec.page, f"setup[{i}].open_page")
            except ValueError as exc:
                problems.append(str(exc))
            else:
                lookups.sites.add(site)
    trees = [task.eval_tree] + [task.phase_tree(i) for i in range(len(task.phases))]
    for tree in trees:
        if tree is None:
            continue
        for leaf in leaves(tree):
            for name in leaf.spec.asset_fields:
                value = getattr(leaf.params, name)
                if value is not None:
                    check(str(value), f"{leaf.path}.{name}")
    if task.reference is not None:
        check(task.reference, "reference")
    return problems


def _with_parsed_checks(phase: Any, index: int, problems: list[str]) -> Any:
    """The raw phase with its check tree parsed, the one time it is: here, because the
    tree's nodes carry their full paths (phases[1].checks.all[0], what stored checks
    are keyed by) and a phase's own validator cannot know its index. A bad tree is left
    out of the phase and reported in `problems`; the model reports the phase's other
    fields."""
    if not isinstance(phase, dict) or phase.get("checks") is None:
        return phase
    where = f"phases[{index}].checks"
    try:
        return {**phase, "checks": parse_tree(phase["checks"], where)}
    except TreeError as exc:
        # Worded like the model's other field errors: the field, then the place inside
        # it ('phases[0].checks: all[1].widht: ...'), as `tasks validate` always printed.
        inner = exc.field_path.removeprefix(where).lstrip(".")
        problems.append(f"{where}: {inner + ': ' if inner else ''}{exc.detail}")
        return {**phase, "checks": None}


def parse_task(raw: Any, source: Path, data: bytes = b"", lines: Lines | None = None) -> Task:
    """Validate an already-parsed YAML document as the task stored at `source`; with
    `lines` (from `read_yaml_lines`) each problem names its field's line too."""
    task, problems = _build_task(raw, source, data, lines)
    return _checked_on_disk(task, problems, source, lines)


def _build_task(
    raw: Any, source: Path, data: bytes, lines: Lines | None
) -> tuple[Task | None, list[str]]:
    """The task and the problems found in the document and the file's path alone: what
    the task cache may keep (`app.tasks.cache`). The assets on disk are checked apart,
    by `_checked_on_disk`, on every load."""
    if raw is None:
        raise TaskError(f"{source}: the file is empty; a task file is a mapping of fields")
    if not isinstance(raw, dict):
        raise TaskError(f"{source}: a task file is a mapping of fields, got {type(raw).__name__}")
    fields = {key: value for key, value in raw.items() if isinstance(key, str)}
    problems: list[str] = [
        f"{key}: unknown key (keys are field names, got {type(key).__name__} {key!r})"
        for key in raw
        if not isinstance(key, str)
    ]
    problems += [
        f"{key}: unknown key (not part of the task format)"
        for key in ("folder", "source", "sha256")
        if key in fields
    ]
    # The check trees are parsed before the model is built (it holds the parsed nodes):
    # the evaluate tree here, each phase's in _with_parsed_checks.
    tree = None
    if "evaluate" in fields:
        try:
            tree = parse_tree(fields.pop("evaluate"), "evaluate")
        except TreeError as exc:
            problems.append(f"{exc.field_path}: {exc.detail}")
    else:
        problems.append("evaluate: required field is missing")
    fields["evaluate"] = tree
    if isinstance(fields.get("phases"), list):
        fields["phases"] = [
            _with_parsed_checks(p, i, problems) for i, p in enumerate(fields["phases"])
        ]
    fields["folder"] = source.parent
    fields["source"] = source
    fields["sha256"] = hashlib.sha256(data).hexdigest()
    task: Task | None = None
    try:
        task = Task.model_validate(fields)
    except ValidationError as exc:
        problems.extend(
            p
            for p in validation_problems(exc, "task", Task, hidden=SETUP_TAGS)
            if not (tree is None and p.startswith("evaluate"))
        )
    if task is not None:
        stem = source.stem
        if source.suffix in TASK_SUFFIXES and task.id != stem:
            problems.append(f"id: {task.id!r} must equal the file name {stem!r}")
        folder = source.parent.name
        if folder in APPS and task.app != folder:
            # The library is tasks/<app>/<id>.yaml: a blender task in gimp/ is misfiled.
            problems.append(f"app: {task.app!r} but the file is in the {folder!r} folder")
        task._lines.update(lines or {})
    return task, problems


def _checked_on_disk(
    task: Task | None,
    problems: list[str],
    source: Path,
    lines: Lines | None,
    lookups: _Lookups | None = None,
) -> Task:
    """`task` once its assets are found on disk; TaskError with every problem (those of
    `_build_task` first) otherwise."""
    if task is not None:
        problems = [*problems, *_asset_problems(task, lookups)]
    if problems:
        raise TaskError(located(source, problems, lines))
    assert task is not None
    return task


def load_task(path: Path | str, *, cache: bool = True) -> Task:
    """Read and validate one task file.

    What the file's bytes and path decide (the YAML, the model, the check trees) comes
    from the task cache when an entry for these bytes, this path and this code exists
    (`app.tasks.cache`; `cache=False` or DESKLOOP_TASK_CACHE=off skip it); the assets it
    names are looked up on disk every time. Errors read the same either way.

    Raises:
        TaskError: unreadable file, YAML syntax error, or any invalid field — one
            line per problem, each naming the file and the field path.
    """
    return _load_task(Path(path), cache, _Lookups())


def _load_task(source: Path, cache: bool, lookups: _Lookups) -> Task:
    from app.tasks import cache as task_cache

    data = read_file_bytes(source, "task")
    store = task_cache.default_cache() if cache else None
    task = store.get(source, data) if store is not None else None
    if task is not None:
        return _checked_on_disk(task, [], source, task.field_lines, lookups)
    raw, lines = parse_yaml_lines(source, data)
    task, problems = _build_task(raw, source, data, lines)
    if store is not None and task is not None and not problems:
        store.put(source, data, task)
    return _checked_on_disk(task, problems, source, lines, lookups)


MANUAL_MARK = "# MANUAL:"
"""A comment line a task file may carry (the DeskCraft importer writes it): a step a
person must still do before the task means what its source meant. `tasks validate`
warns for each."""


def manual_steps(path: Path) -> list[str]:
    """The `# MANUAL:` steps in the task file at `path`, in order ([] when unreadable:
    the loader reports that)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    return [
        line.strip()[len(MANUAL_MARK) :].strip()
        for line in text.splitlines()
        if line.strip().startswith(MANUAL_MARK)
    ]


def task_files(root: Path | str) -> list[Path]:
    """Task files under `root`: `root/<app>/<id>.yaml` (a file may also be given).

    Only files directly in an app folder count; subfolders such as `assets/` and
    `references/` hold other YAML.
    """
    base = Path(root)
    if base.is_file():
        return [base]
    if not base.is_dir():
        raise TaskError(f"{base}: no such task file or folder")
    found: list[Path] = []
    direct = [p for p in base.iterdir() if _is_task_entry(p)]
    if direct:
        found.extend(direct)
    else:
        for app_dir in sorted(p for p in base.iterdir() if p.is_dir()):
            found.extend(p for p in app_dir.iterdir() if _is_task_entry(p))
    return sorted(found)


def _is_task_entry(path: Path) -> bool:
    # Anything named like a task but a folder: a FIFO or a device named x.yaml is
    # listed, so that loading it refuses it by name instead of it being skipped silently.
    return path.suffix in TASK_SUFFIXES and not path.is_dir()


def duplicate_ids(tasks: Iterable[Task]) -> dict[str, list[Path]]:
    """Task ids that more than one file claims (`x.yaml` and `x.yml`, or one id in two
    app folders), with the files; a run could not tell which one is meant."""
    files: dict[str, list[Path]] = {}
    for task in tasks:
        files.setdefault(task.id, []).append(task.source)
    return {task_id: paths for task_id, paths in files.items() if len(paths) > 1}


def load_tasks(root: Path | str) -> tuple[list[Task], list[TaskError]]:
    """Every task under `root`, and the errors of those that failed to load."""
    tasks: list[Task] = []
    errors: list[TaskError] = []
    lookups = _Lookups()
    for path in task_files(root):
        try:
            tasks.append(_load_task(path, True, lookups))
        except TaskError as exc:
            errors.append(exc)
    return tasks, errors


def find_task(ref: str, roots: Iterable[Path | str]) -> Task:
    """A task by file path or by id (searched in `roots`), with 'did you mean'."""
    as_path = Path(ref)
    if as_path.suffix in TASK_SUFFIXES or as_path.is_file():
        return load_task(as_path)
    known: dict[str, list[Path]] = {}
    for root in roots:
        if Path(root).exists():
            for path in task_files(root):
                known.setdefault(path.stem, []).append(path)
    if ref in known:
        if len(known[ref]) > 1:
            files = ", ".join(str(path) for path in known[ref])
            raise TaskError(f"task id {ref!r} is claimed by more than one file: {files}")
        return load_task(known[ref][0])
    close = difflib.get_close_matches(ref, list(known), n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    listing = ", ".join(sorted(known)) or "none"
    raise TaskError(f"no task with id {ref!r}{hint} (known tasks: {listing})")


def setup_key(task: Task) -> str:
    """What a task's start state depends on: its setup steps and the bytes of the
    assets they upload (editing an asset makes a new start state). Backends that
    save start states (libvirt) key them by this.

    Raises:
        TaskError: an uploaded asset cannot be read.
    """
    parts = []
    for step in task.setup:
        parts.append(step.model_dump_json())
        if isinstance(step, UploadStep):
            try:
                src = resolve_asset(task.folder, step.upload.src, "upload.src")
                parts.append(hashlib.sha256(src.read_bytes()).hexdigest())
            except (ValueError, OSError) as exc:
                raise TaskError(f"{task.source}: {exc}") from exc
        elif isinstance(step, OpenPageStep):
            spec = step.open_page
            try:
                for rel, path in site_files(task.folder, spec.site, spec.page, "open_page"):
                    parts.append(f"{rel}:{hashlib.sha256(path.read_bytes()).hexdigest()}")
            except (ValueError, OSError) as exc:
                raise TaskError(f"{task.source}: {exc}") from exc
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()
