"""Score a task on a desktop's final state: gather files, run checks, walk the tree.

Scoring reads every file the task's checks name once, reads the assets from the task
folder, and hands plain bytes to the pure check functions (app.checks). A missing or
unreadable file is a failed check with the reason; nothing here raises because one
check could not run.

Where the reads come from is a `StateSource`: the desktop's guest channel
(`GuestSource`) at the end of an episode, or an episode's final-state archive when it
is re-scored (app.episode.archive, which also records the guest's reads as they are
made). Everything a check sees passes through this one seam.
"""

from __future__ import annotations

import asyncio
import hashlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from app.checks.base import CheckResult, CheckState, FileState, Probe, ProbeResult
from app.checks.registry import run_check
from app.checks.tree import CheckLeaf, EvalNode, evaluate, leaves
from app.core.errors import FileTooLarge, GuestError
from app.core.judgements import Judgement
from app.core.outcomes import CheckOutcome
from app.desktops.base import Guest
from app.episode.judge import JudgeContext, ask_judges
from app.probes import gather_probe
from app.tasks.loader import resolve_asset
from app.tasks.model import Task

MAX_FILE_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class ScoreResult:
    passed: bool
    score: float
    checks: list[CheckOutcome]
    judgements: list[Judgement] = field(default_factory=list)
    """What the model judge was asked and answered, for the store (app.episode.judge)."""


# The code whose behaviour a score depends on, beside the task file: the checks, the
# probers and the tree walk, and in this package the scorer and the model judge (its
# questions and the reading of its answers). Its hash is the evaluator's version.
_EVALUATOR_SOURCES = ("checks", "probes")
_EVALUATOR_MODULES = ("episode/scorer.py", "episode/judge.py")

# The libraries whose results become scores: SSIM values (scikit-image, over numpy and
# scipy), decoded pixels (Pillow), Kdenlive's XML (lxml), check and answer validation
# (pydantic, jsonschema). pyproject.toml pins each to the series the suite passes on;
# their versions are part of the evaluator's version, so two scores of one episode
# differ in version whenever they could differ in value.
SCORING_LIBRARIES = ("numpy", "scipy", "scikit-image", "pillow", "lxml", "pydantic", "jsonschema")


def scoring_library_versions() -> dict[str, str]:
    """The installed version of each library in SCORING_LIBRARIES ("absent" if none)."""
    from importlib import metadata

    versions: dict[str, str] = {}
    for name in SCORING_LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "absent"
    return versions


def evaluator_digest(files: list[Path], root: Path, libraries: dict[str, str]) -> str:
    """12 hex digits over the evaluator's source files (named relative to `root`) and
    the versions of the libraries that compute scores."""
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    for name, version in sorted(libraries.items()):
        digest.update(f"{name}=={version}".encode() + b"\0")
    return digest.hexdigest()[:12]


@cache
def evaluator_version() -> str:
    """`<DeskLoop version>+<12 hex digits>`: a hash of the evaluator's source (the checks,
    their readers, the probers and their guest scripts, this module, the scorer and the
    judge) and of the
    versions of the libraries that compute scores, so a rescore says exactly which
    code made it, even between releases."""
    from app import __version__

    app_dir = Path(__file__).resolve().parents[1]
    files = [Path(__file__).resolve(), *(app_dir / module for module in _EVALUATOR_MODULES)]
    for package in _EVALUATOR_SOURCES:
        files += sorted(p for p in (app_dir / package).rglob("*") if p.suffix == ".py")
    return f"{__version__}+{evaluator_digest(files, app_dir, scoring_library_versions())}"


class StateSource(ABC):
    """Where scoring reads a final state from: a live guest, or an archive."""

    @abstractmethod
    async def file(self, path: str) -> FileState:
        """The file at guest path `path` (as the task wrote it), or why there is none."""

    @abstractmethod
    async def probe(self, probe: Probe, answer: Any = None) -> ProbeResult:
        """The result of `probe` (`answer`: the agent's DONE answer, for probers that
        take it); a failure never raises."""


class GuestSource(StateSource):
    """The final state as the desktop's guest channel reads it now."""

    def __init__(self, guest: Guest) -> None:
        self.guest = guest

    async def file(self, path: str) -> FileState:
        guest = self.guest
        try:
            if not await guest.exists(path):
                return FileState.missing(path)
            return FileState.found(path, await guest.read_file(path, MAX_FILE_BYTES))
        except FileTooLarge as exc:
            return FileState.too_large(path, f"{exc.limit // (1024 * 1024)} MiB", exc.size)
        except GuestError as exc:
            return FileState.unreadable(path, str(exc))

    async def probe(self, probe: Probe, answer: Any = None) -> ProbeResult:
        return await gather_probe(self.guest, probe, answer)


def _source(where: Guest | StateSource) -> StateSource:
    return where if isinstance(where, StateSource) else GuestSource(where)


async def gather_state(
    task: Task,
    guest: Guest | StateSource,
    started_at: float | None = None,
    tree: EvalNode | None = None,
    answer: Any = None,
) -> CheckState:
    """Everything the checks of `tree` (default: the task's evaluate tree) need, each
    file and probe gathered once, from a guest or another `StateSource`; `answer` is
    what the agent returned with DONE."""
    source = _source(guest)
    files: dict[str, FileState] = {}
    assets: dict[str, bytes] = {}
    probes: dict[Probe, ProbeResult] = {}
    for leaf in leaves(task.eval_tree if tree is None else tree):
        for probe in leaf.spec.probes(leaf.params):
            if probe not in probes:
                probes[probe] = await source.probe(probe, answer)
        for path in leaf.spec.files(leaf.params):
            if path not in files:
                files[path] = await source.file(path)
        for rel in leaf.spec.assets(leaf.params):
            if rel not in assets:
                try:
                    asset = resolve_asset(task.folder, rel, f"{leaf.path}")
                    assets[rel] = await asyncio.to_thread(asset.read_bytes)
                except (ValueError, OSError):
                    # Left out: the check reports the missing asset as its failure.
                    continue
    return CheckState(
        files=files,
        assets=assets,
        probes=probes,
        started_at=started_at,
        answer=answer,
        answer_schema=task.answer_schema,
    )


def score_state(
    task: Task, state: CheckState, tree: EvalNode | None = None, phase: int | None = None
) -> ScoreResult:
    """Run every check of `tree` (default: the task's evaluate tree) on gathered state
    (pure). `phase` marks the outcomes of a phase's optional checks."""
    node = task.eval_tree if tree is None else tree
    results: dict[str, CheckResult] = {}
    tree_leaves: list[CheckLeaf] = list(leaves(node))
    for leaf in tree_leaves:
        results[leaf.path] = run_check(leaf.spec, state, leaf.params)
    outcome = evaluate(node, results)
    rows = [
        CheckOutcome(
            path=leaf.path,
            name=leaf.spec.name,
            params=leaf.params.model_dump(mode="json"),
            weight=leaf.weight,
            # A judge that does not count is recorded as not required: it is not.
            required=leaf.required and leaf.params.decides,
            passed=results[leaf.path].passed,
            score=results[leaf.path].score,
            evidence=results[leaf.path].evidence,
            phase=phase,
        )
        for leaf in tree_leaves
    ]
    return ScoreResult(passed=outcome.passed, score=outcome.score, checks=rows)


async def score_task(
    task: Task,
    guest: Guest | StateSource,
    started_at: float | None = None,
    judge: JudgeContext | None = None,
    answer: Any = None,
) -> ScoreResult:
    """Score the final state; `answer` is the agent's returned value (DONE's answer)."""
    state = await gather_state(task, guest, started_at, answer=answer)
    judgements = await ask_judges(task.eval_tree, state, judge)
    # Decoding and SSIM of large images take seconds: keep them off the event loop.
    result = await asyncio.to_thread(score_state, task, state)
    return replace(result, judgements=judgements)


async def score_phase(
    task: Task,
    index: int,
    guest: Guest | StateSource,
    started_at: float | None = None,
    judge: JudgeContext | None = None,
) -> ScoreResult | None:
    """Score phase `index`'s optional checks on the state right now (or as an archive
    kept it); None if it has none."""
    tree = task.phase_tree(index)
    if tree is None:
        return None
    state = await gather_state(task, guest, started_at, tree)
    judgements = await ask_judges(tree, state, judge, index)
    result = await asyncio.to_thread(score_state, task, state, tree, index)
    return replace(result, judgements=judgements)
