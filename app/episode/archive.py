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

The manifest (JSON, version 1):
    {"version": 1, "started_at": float | null,
     "files": {"~/out.png": {"blob": sha256, "size": int}
                           | {"problem": "missing" | "too_large" | "unreadable",
                              "error": str, "size": int | null}
                           | {"over_cap": true, "sha256": str, "size": int}},
     "probes": [{"kind": str, "path": str, "blob": sha256 of the JSON data | null,
                 "error": str | null, "missing": bool, "over_cap"?: true, "size"?: int}]}
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from app.checks.base import FileState, Probe, ProbeResult
from app.core.errors import StoreError, TaskError
from app.episode.scoring import ScoreResult, StateSource, evaluator_version, score_task
from app.store import Store
from app.tasks.model import Task

MANIFEST_VERSION = 1
DEFAULT_CAP_BYTES = 256 * 1024 * 1024
"""Per episode. A Kdenlive render or a large .blend is tens of MiB; several exports
of one task fit, a runaway agent writing gigabytes does not."""


@dataclass
class _Recorded:
    files: dict[str, FileState] = field(default_factory=dict)
    probes: dict[Probe, ProbeResult] = field(default_factory=dict)


class RecordingSource(StateSource):
    """Reads through another source (the live guest) and remembers every answer."""

    def __init__(self, inner: StateSource) -> None:
        self.inner = inner
        self.recorded = _Recorded()

    async def file(self, path: str) -> FileState:
        state = await self.inner.file(path)
        self.recorded.files[path] = state
        return state

    async def probe(self, probe: Probe, answer: Any = None) -> ProbeResult:
        result = await self.inner.probe(probe, answer)
        self.recorded.probes[probe] = result
        return result


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


def keep(
    store: Store,
    episode_id: int,
    recorded: _Recorded,
    started_at: float | None,
    cap_bytes: int = DEFAULT_CAP_BYTES,
    answer: Any = None,
) -> Kept:
    """Write the recorded reads as blobs and record the manifest (blocking: call it on
    the store's thread). `answer` is the agent's DONE answer, which the answer checks
    read beside the files: a rescore sees the same one."""
    budget = cap_bytes
    kept = over = 0
    over_names: list[str] = []
    files: dict[str, Any] = {}
    for path, state in recorded.files.items():
        if state.data is None:
            files[path] = {"problem": state.problem, "error": state.error, "size": state.size}
            continue
        size = len(state.data)
        if size > budget:
            digest = hashlib.sha256(state.data).hexdigest()
            files[path] = {"over_cap": True, "sha256": digest, "size": size}
            over += size
            over_names.append(path)
            continue
        files[path] = {"blob": store.save_blob(state.data), "size": size}
        budget -= size
        kept += size
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
            if len(data) > budget:
                entry |= {"over_cap": True, "size": len(data)}
                over += len(data)
                over_names.append(f"{probe.kind}:{probe.path}")
            else:
                entry["blob"] = store.save_blob(data)
                budget -= len(data)
                kept += len(data)
        probes.append(entry)
    manifest = {
        "version": MANIFEST_VERSION,
        "started_at": started_at,
        "answer": answer,
        "files": files,
        "probes": probes,
    }
    store.record_archive(
        episode_id,
        evaluator=evaluator_version(),
        manifest=manifest,
        kept_bytes=kept,
        over_cap_bytes=over,
        cap_bytes=cap_bytes,
    )
    return Kept(kept, over, tuple(over_names))


class ArchiveSource(StateSource):
    """An episode's final state as its archive kept it."""

    def __init__(self, store: Store, episode_id: int, manifest: dict[str, Any]) -> None:
        if manifest.get("version") != MANIFEST_VERSION:
            raise StoreError(
                f"the archive of episode {episode_id} has manifest version "
                f"{manifest.get('version')!r}; this DeskLoop reads {MANIFEST_VERSION}"
            )
        self.store = store
        self.episode_id = episode_id
        self.files: dict[str, Any] = manifest.get("files", {})
        self.probes = {(p["kind"], p["path"]): p for p in manifest.get("probes", [])}
        self.started_at: float | None = manifest.get("started_at")
        self.answer: Any = manifest.get("answer")

    def _blob(self, digest: str) -> bytes:
        return self.store.read_blob(digest)

    async def file(self, path: str) -> FileState:
        entry = self.files.get(path)
        if entry is None:
            return FileState.unreadable(
                path, f"not in the archive of episode {self.episode_id} (not read at scoring)"
            )
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
                f"{probe.kind} of {probe.path} is not in the archive of episode "
                f"{self.episode_id} (not run at scoring)"
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


@dataclass(frozen=True)
class Rescored:
    rescore_id: int
    result: ScoreResult
    evaluator: str


async def rescore(store: Store, episode_id: int, task: Task) -> Rescored:
    """Run the current evaluator of `task` on the episode's archive and record the
    new score beside the original one.

    Raises:
        TaskError: `task` is not the episode's task.
        StoreError: the episode has no archive (it ended in an error, or was scored
            before archives were kept).
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
    source = ArchiveSource(store, episode_id, archive.manifest)
    result = await score_task(task, source, source.started_at, answer=source.answer)
    version = evaluator_version()
    rescore_id = await store.off_loop(
        store.record_rescore,
        episode_id,
        task_sha256=task.sha256,
        evaluator=version,
        passed=result.passed,
        score=result.score,
        checks=result.checks,
    )
    return Rescored(rescore_id, result, version)
