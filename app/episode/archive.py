"""The final-state archive: what an episode's checks read, kept so it can be re-scored.

At the end of an episode scoring reads through a `RecordingSource`, which passes
each read on to the live guest and remembers what came back. `keep` then writes
the bytes as content-addressed blobs beside the database (the store's
`archive/<id>/`) and records a manifest naming them. Re-scoring reads the same
paths and probes through an `ArchiveSource` made from that manifest, so the current
evaluator sees exactly what the original one saw: a threshold changed in a task or
a check fixed gives a new score from the old state. A file or probe the current
evaluator asks for that the archive does not hold reads as unreadable, with why.

The cap: an episode keeps at most `cap_bytes` of new data (64 MiB files and all).
What would pass the cap is recorded by size and sha256 and not kept; re-scored, it
reads as unreadable ("over the archive's cap"), never as missing.

Phase checks run when their phase is delivered, on the state then: each delivered
phase's reads are recorded the same way (`phases`), and a rescore re-runs every
phase's checks on its own reads. A judge's frame is kept too (`frame`), so a rescore
asks the judge about the same frame and files: an unchanged question is answered from
the judge's cache, a changed rubric is asked anew.

The manifest (JSON, version 1; `frame` and `phases` are absent from archives made
before they were kept, whose phase checks are then not re-run, said so):
    {"version": 1, "started_at": float | null, "answer": any,
     "files": {"~/out.png": {"blob": sha256, "size": int}
                           | {"problem": "missing" | "too_large" | "unreadable",
                              "error": str, "size": int | null}
                           | {"over_cap": true, "sha256": str, "size": int}},
     "probes": [{"kind": str, "path": str, "blob": sha256 of the JSON data | null,
                 "error": str | null, "missing": bool, "over_cap"?: true, "size"?: int}],
     "frame"?: {"blob": sha256, "size": int} | {"over_cap": true, "sha256", "size"},
     "phases"?: {"0": {"files": ..., "probes": ..., "frame"?: ...}, ...}}
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from app.checks.base import FileState, Probe, ProbeResult
from app.core.errors import StoreError, TaskError
from app.core.judgements import Judgement
from app.episode.judge import JUDGE_CACHE, JudgeConfig, JudgeContext
from app.episode.scoring import (
    ScoreResult,
    StateSource,
    evaluator_version,
    score_phase,
    score_task,
)
from app.store import EpisodeRecord, Store
from app.tasks.loader import load_task, task_files
from app.tasks.model import Task

MANIFEST_VERSION = 1
DEFAULT_CAP_BYTES = 256 * 1024 * 1024
"""Per episode. A Kdenlive render or a large .blend is tens of MiB; several exports
of one task fit, a runaway agent writing gigabytes does not."""


@dataclass
class Recorded:
    """What one scoring read (the final one, or a phase's), for `keep`."""

    files: dict[str, FileState] = field(default_factory=dict)
    probes: dict[Probe, ProbeResult] = field(default_factory=dict)
    frame: bytes | None = None
    """The desktop's frame a judge was shown (PNG), when a judge was shown one."""


class RecordingSource(StateSource):
    """Reads through another source (the live guest) and remembers every answer."""

    def __init__(self, inner: StateSource) -> None:
        self.inner = inner
        self.recorded = Recorded()

    async def file(self, path: str) -> FileState:
        state = await self.inner.file(path)
        self.recorded.files[path] = state
        return state

    async def probe(self, probe: Probe, answer: Any = None) -> ProbeResult:
        result = await self.inner.probe(probe, answer)
        self.recorded.probes[probe] = result
        return result

    def judged(self, context: JudgeContext) -> JudgeContext:
        """`context` whose frame is remembered too when a judge is shown it."""
        frame = context.frame
        if frame is None:
            return context

        async def kept_frame() -> bytes:
            data = await frame()
            self.recorded.frame = data
            return data

        return replace(context, frame=kept_frame)


@dataclass(frozen=True)
class Kept:
    """What `keep` recorded for one episode."""

    kept_bytes: int
    over_cap_bytes: int
    over_cap: tuple[str, ...]
    """The guest paths (and `kind:path` probes) not kept because of the cap."""


def _probe_json(result: ProbeResult) -> bytes | None:
    if result.data is None:
        return None
    # sort_keys: the same data gives the same blob, so it is kept once.
    return json.dumps(result.data, sort_keys=True).encode()


@dataclass
class _Keeper:
    """Writes recorded reads as blobs within one episode's cap."""

    store: Store
    budget: int
    kept: int = 0
    over: int = 0
    over_names: list[str] = field(default_factory=list)

    def blob(self, data: bytes, name: str) -> dict[str, Any]:
        """`{"blob", "size"}`, or `{"over_cap", "sha256", "size"}` past the cap."""
        size = len(data)
        if size > self.budget:
            self.over += size
            self.over_names.append(name)
            return {"over_cap": True, "sha256": hashlib.sha256(data).hexdigest(), "size": size}
        self.budget -= size
        self.kept += size
        return {"blob": self.store.save_blob(data), "size": size}

    def section(self, recorded: Recorded, label: str = "") -> dict[str, Any]:
        """The manifest's record of one scoring's reads (the final one, or a phase's)."""
        files: dict[str, Any] = {}
        for path, state in recorded.files.items():
            if state.data is None:
                files[path] = {"problem": state.problem, "error": state.error, "size": state.size}
            else:
                files[path] = self.blob(state.data, f"{label}{path}")
        probes: list[dict[str, Any]] = []
        for probe, result in recorded.probes.items():
            entry: dict[str, Any] = {
                "kind": probe.kind,
                "path": probe.path,
                "blob": None,
                "error": result.error,
                "missing": result.missing,
            }
            data = _probe_json(result)
            if data is not None:
                kept = self.blob(data, f"{label}{probe.kind}:{probe.path}")
                if kept.get("over_cap"):
                    entry |= {"over_cap": True, "size": kept["size"]}
                else:
                    entry["blob"] = kept["blob"]
            probes.append(entry)
        section: dict[str, Any] = {"files": files, "probes": probes}
        if recorded.frame is not None:
            section["frame"] = self.blob(recorded.frame, f"{label}the judged frame")
        return section


def keep(
    store: Store,
    episode_id: int,
    recorded: Recorded,
    started_at: float | None,
    cap_bytes: int = DEFAULT_CAP_BYTES,
    answer: Any = None,
    phases: Mapping[int, Recorded] | None = None,
) -> Kept:
    """Write the recorded reads as blobs and record the manifest (blocking: call it on
    the store's thread). `answer` is the agent's DONE answer, which the answer checks
    read beside the files: a rescore sees the same one. `phases`: what each delivered
    phase's checks read at its delivery, by phase index. The final state comes first
    under the cap, then the phases in order."""
    keeper = _Keeper(store, cap_bytes)
    manifest: dict[str, Any] = {
        "version": MANIFEST_VERSION,
        "started_at": started_at,
        "answer": answer,
        **keeper.section(recorded),
    }
    if phases:
        manifest["phases"] = {
            str(index): keeper.section(phases[index], f"phase {index + 1}: ")
            for index in sorted(phases)
        }
    store.record_archive(
        episode_id,
        evaluator=evaluator_version(),
        manifest=manifest,
        kept_bytes=keeper.kept,
        over_cap_bytes=keeper.over,
        cap_bytes=cap_bytes,
    )
    return Kept(keeper.kept, keeper.over, tuple(keeper.over_names))


class ArchiveSource(StateSource):
    """An episode's final state as its archive kept it, or with `phase`, the state
    phase `phase`'s checks read at its delivery."""

    def __init__(
        self, store: Store, episode_id: int, manifest: dict[str, Any], phase: int | None = None
    ) -> None:
        if manifest.get("version") != MANIFEST_VERSION:
            raise StoreError(
                f"the archive of episode {episode_id} has manifest version "
                f"{manifest.get('version')!r}; this DeskLoop reads {MANIFEST_VERSION}"
            )
        self.store = store
        self.episode_id = episode_id
        section = manifest if phase is None else manifest.get("phases", {}).get(str(phase))
        if section is None:
            raise StoreError(f"the archive of episode {episode_id} holds no phase {phase}")
        self.where = (
            f"the archive of episode {episode_id}"
            if phase is None
            else f"phase {phase + 1} of the archive of episode {episode_id}"
        )
        self.files: dict[str, Any] = section.get("files", {})
        self.probes = {(p["kind"], p["path"]): p for p in section.get("probes", [])}
        self.frame_entry: dict[str, Any] | None = section.get("frame")
        self.started_at: float | None = manifest.get("started_at")
        self.answer: Any = manifest.get("answer")

    def _blob(self, digest: str) -> bytes:
        return self.store.read_blob(digest)

    async def file(self, path: str) -> FileState:
        entry = self.files.get(path)
        if entry is None:
            return FileState.unreadable(path, f"not in {self.where} (not read at scoring)")
        if entry.get("over_cap"):
            return FileState.unreadable(
                path, f"{entry['size']} bytes, not kept: over the archive's cap"
            )
        if entry.get("blob") is None:
            problem = entry.get("problem")
            if problem == "missing":
                return FileState.missing(path)
            if problem == "too_large":
                return FileState(
                    path, None, entry["error"], problem="too_large", size=entry.get("size")
                )
            return FileState(path, None, entry.get("error") or "unreadable", problem="unreadable")
        try:
            return FileState.found(path, await asyncio.to_thread(self._blob, entry["blob"]))
        except StoreError as exc:
            return FileState.unreadable(path, str(exc))

    async def probe(self, probe: Probe, answer: Any = None) -> ProbeResult:
        # Recorded as the episode's own answer made it; a rescore replays that result.
        entry = self.probes.get((probe.kind, probe.path))
        if entry is None:
            return ProbeResult.failure(
                f"{probe.kind} of {probe.path} is not in {self.where} (not run at scoring)"
            )
        if entry.get("over_cap"):
            return ProbeResult.failure(
                f"{probe.kind} of {probe.path}: {entry['size']} bytes, not kept: over the "
                "archive's cap"
            )
        if entry.get("blob") is None:
            if entry.get("missing"):
                return ProbeResult.not_found()
            return ProbeResult.failure(entry.get("error") or "failed at scoring")
        try:
            return ProbeResult(json.loads(await asyncio.to_thread(self._blob, entry["blob"])))
        except StoreError as exc:
            return ProbeResult.failure(str(exc))

    def judge_context(self, config: JudgeConfig | None) -> JudgeContext:
        """What a rescore's judges see: the frame the archive kept (none when no
        judge was shown one, or it was over the cap), answers cached beside the
        database, so an unchanged question is answered from the cache."""
        entry = self.frame_entry
        frame = None
        if entry is not None and entry.get("blob") is not None:
            digest = entry["blob"]

            async def frame() -> bytes:
                return await asyncio.to_thread(self._blob, digest)

        return JudgeContext(config, self.store.root / JUDGE_CACHE, frame)


@dataclass(frozen=True)
class Rescored:
    rescore_id: int
    result: ScoreResult
    evaluator: str
    phases: dict[int, ScoreResult] = field(default_factory=dict)
    """Each phase whose checks were re-run on what its delivery archived."""
    not_rescored: tuple[str, ...] = ()
    """Phases with checks that could not be re-run, with why."""


def recorded_judge(judgements: Sequence[Judgement]) -> JudgeConfig | None:
    """The judge an episode asked (model, endpoint, sampling), so a rescore asks the
    same one and an unchanged question hits the cache; None when none was asked."""
    for j in judgements:
        if j.model != "(none)":
            return JudgeConfig(
                model=j.model, base_url=j.base_url, temperature=j.temperature, seed=j.seed
            )
    return None


def episode_task(episode: EpisodeRecord, roots: Sequence[Path | str] = ()) -> Task:
    """The task file to re-score an episode with: the one it ran.

    An episode records its task file's absolute path and sha256. At that path is the
    episode's own task, as it is now: edited since or not, it is taken (a rescore is the
    current task and evaluator on the old final state). An episode recorded with a
    relative path (before paths were absolute) or whose file has gone has no one place,
    so a file found for it (the recorded path from the working folder, or the task of
    its id under `roots`) is taken only if it hashes to what the episode ran: another
    folder's copy of a task may say something else.

    Raises:
        TaskError: nothing found; or what was found (each file named, with its hash)
            is not what the episode ran.
    """
    recorded = Path(episode.task_path)
    if recorded.is_absolute() and recorded.is_file():
        return load_task(recorded)
    found = [recorded] if not recorded.is_absolute() and recorded.is_file() else []
    for root in roots:
        if Path(root).exists():
            found += [p for p in task_files(root) if p.stem == episode.task_id]
    differ = []
    for path in dict.fromkeys(p.resolve() for p in found):
        try:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError as exc:
            differ.append(f"{path} (unreadable: {exc.strerror or exc})")
            continue
        if digest == episode.task_sha256:
            return load_task(path)
        differ.append(f"{path} (sha256 {digest[:12]})")
    ran = f"{episode.task_path} (sha256 {episode.task_sha256[:12]})"
    if differ:
        raise TaskError(
            f"the task file found is not what episode {episode.id} ran ({ran}): "
            f"{', '.join(differ)}; to re-score with it all the same, name it with --task FILE"
        )
    where = ", ".join(str(r) for r in roots) or "no task folder"
    raise TaskError(
        f"episode {episode.id} ran {ran}, which is not there now, and no task "
        f"{episode.task_id!r} is in {where}; name the file to re-score with, --task FILE"
    )


async def rescore(
    store: Store, episode_id: int, task: Task, judge: JudgeConfig | None = None
) -> Rescored:
    """Run the current evaluator of `task` on the episode's archive and record the
    new score beside the original one: the final checks on the final state, each
    phase's checks on what its delivery archived, the judges on the archived frame and
    files (`judge`, else the judge the episode asked; its cache answers an unchanged
    question without asking).

    Raises:
        TaskError: `task` is not the episode's task.
        StoreError: the episode has no archive (it ended in an error, or was scored
            before archives were kept).
        JudgeError, EndpointUnavailable, EndpointRefused: a judge that counts could
            not be asked.
    """
    episode = await store.off_loop(store.get_episode, episode_id)
    if episode.task_id != task.id:
        raise TaskError(f"episode {episode_id} ran task {episode.task_id!r}, not {task.id!r}")
    archive = await store.off_loop(store.get_archive, episode_id)
    if archive is None:
        raise StoreError(
            f"episode {episode_id} has no final-state archive (it "
            + ("ended in an error" if episode.status == "error" else "was not archived")
            + "), so it cannot be re-scored"
        )
    if judge is None:
        judge = recorded_judge(await store.off_loop(store.judgements, episode_id))
    source = ArchiveSource(store, episode_id, archive.manifest)
    result = await score_task(
        task, source, source.started_at, source.judge_context(judge), answer=source.answer
    )
    checks = list(result.checks)
    judgements = list(result.judgements)
    phases: dict[int, ScoreResult] = {}
    missed: list[str] = []
    kept_phases = archive.manifest.get("phases", {})
    for index in range(len(task.phases)):
        if task.phase_tree(index) is None:
            continue
        if str(index) not in kept_phases:
            missed.append(
                f"phase {index + 1}: not in the archive (not delivered, or archived before "
                "phases were kept)"
            )
            continue
        phase_source = ArchiveSource(store, episode_id, archive.manifest, index)
        phase = await score_phase(
            task, index, phase_source, source.started_at, phase_source.judge_context(judge)
        )
        if phase is not None:
            phases[index] = phase
            checks += phase.checks
            judgements += phase.judgements
    version = evaluator_version()
    rescore_id = await store.off_loop(
        store.record_rescore,
        episode_id,
        task_sha256=task.sha256,
        evaluator=version,
        passed=result.passed,
        score=result.score,
        checks=checks,
        phases={i: (p.passed, p.score) for i, p in phases.items()},
        judgements=judgements,
    )
    return Rescored(rescore_id, result, version, phases, tuple(missed))
