"""`deskloop score`: an episode's scores (the original, its rescores), its final-state
archive and integrity flags; `--rescore` runs the current evaluator on the archive of
one episode, several, or a whole batch, and records the new score beside the original."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.cli.agent_options import add_judge_options, judge_config
from app.cli.common import open_store, run_async
from app.cli.episodes_cmd import print_checks, print_flags
from app.core.errors import DeskLoopError, StoreError
from app.core.outcomes import CheckOutcome

if TYPE_CHECKING:
    from app.store import EpisodeRecord, Store
    from app.tasks.model import Task


def _task_for(e: EpisodeRecord, args: argparse.Namespace) -> Task:
    """The task file to re-score with: `--task`, else the episode's own
    (app.episode.archive.episode_task)."""
    from app.episode.archive import episode_task
    from app.tasks.loader import load_task

    if args.task is not None:
        return load_task(args.task)
    return episode_task(e, [args.tasks_dir])


def _mib(n: int) -> str:
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n / (1024 * 1024):.1f} MiB"


def _differences(before: Sequence[CheckOutcome], after: Sequence[CheckOutcome]) -> list[str]:
    """What changed, check by check (a phase's checks named with their phase)."""
    old = {(c.phase, c.path): c for c in before}
    lines = []
    for c in after:
        was = old.get((c.phase, c.path))
        where = c.path if c.phase is None else f"phase {c.phase + 1} {c.path}"
        if was is None:
            lines.append(f"  new   {where} {c.name}: {'PASS' if c.passed else 'FAIL'}")
        elif (was.passed, was.score, was.params) != (c.passed, c.score, c.params):
            lines.append(
                f"  {where} {c.name}: {'PASS' if was.passed else 'FAIL'} {was.score:.2f}"
                f" -> {'PASS' if c.passed else 'FAIL'} {c.score:.2f}: {c.evidence}"
            )
    return lines


def _episode_ids(store: Store, args: argparse.Namespace) -> list[int]:
    ids = list(args.ids)
    if args.batch is not None:
        store.get_batch(args.batch)  # a clear error for an unknown batch
        batch = store.list_episodes(batch_id=args.batch, status="finished", limit=None)
        ids += sorted(e.id for e in batch)
    if not ids:
        raise StoreError("name an episode id, or a batch with --batch")
    return ids


def _show(store: Store, episode_id: int) -> bool:
    e = store.get_episode(episode_id)
    checks = store.checks(episode_id)
    archive = store.get_archive(episode_id)
    rescores = store.rescores(episode_id)
    flags, checked = store.flags(episode_id)
    print(f"episode {e.id} · task {e.task_id} · {e.status} ({e.end_reason})")
    if archive is None:
        print("no final-state archive: these are the checks recorded at the episode's end")
    else:
        over = f", {_mib(archive.over_cap_bytes)} over the cap" if archive.over_cap_bytes else ""
        print(
            f"final-state archive: {_mib(archive.kept_bytes)} kept of a "
            f"{_mib(archive.cap_bytes)} cap{over}; original score by evaluator "
            f"{archive.evaluator}, task sha256 {e.task_sha256[:12]}"
        )
    print_checks(checks, e)
    for r in rescores:
        print(
            f"\nrescore {r.id} ({r.created_at.isoformat(timespec='seconds')}): score "
            f"{r.score:.2f} · passed {'yes' if r.passed else 'no'} · evaluator {r.evaluator}"
            f" · task sha256 {r.task_sha256[:12]}"
        )
        print("\n".join(_differences(checks, r.checks)) or "  (every check as originally)")
        for index, (passed, score) in sorted(r.phases.items()):
            print(f"  phase {index + 1}: score {score:.2f} · passed {'yes' if passed else 'no'}")
        asked = [j for j in r.judgements if not j.cached and j.verdict is not None]
        if r.judgements:
            print(
                f"  judge: {len(r.judgements)} question(s), {len(asked)} asked anew, "
                f"{sum(j.cached for j in r.judgements)} from the cache"
            )
    print_flags(flags, checked)
    return bool(e.passed)


async def _rescore_all(store: Store, ids: list[int], args: argparse.Namespace) -> int:
    from app.episode.archive import rescore

    failures = 0
    rows: list[dict[str, Any]] = []
    for episode_id in ids:
        try:
            e = await store.off_loop(store.get_episode, episode_id)
            task = _task_for(e, args)
            done = await rescore(store, episode_id, task, judge_config(args))
        except DeskLoopError as exc:
            failures += 1
            if args.json:
                rows.append({"episode": episode_id, "error": str(exc)})
            else:
                print(f"episode {episode_id}: not re-scored: {exc}")
            continue
        checks = await store.off_loop(store.checks, episode_id)
        if args.json:
            rows.append(
                {
                    "episode": episode_id,
                    "rescore": done.rescore_id,
                    "original": {"passed": e.passed, "score": e.score},
                    "passed": done.result.passed,
                    "score": done.result.score,
                    "evaluator": done.evaluator,
                    "task_sha256": task.sha256,
                    "checks": [asdict(c) for c in done.result.checks],
                    "phases": {
                        str(i): {"passed": p.passed, "score": p.score, "checks": len(p.checks)}
                        for i, p in done.phases.items()
                    },
                    "not_rescored": list(done.not_rescored),
                }
            )
            continue
        original = "-" if e.score is None else f"{e.score:.2f}"
        print(
            f"episode {episode_id} ({e.task_id}): original {original} -> rescore "
            f"{done.rescore_id}: {done.result.score:.2f} · passed "
            f"{'yes' if done.result.passed else 'no'} (evaluator {done.evaluator})"
        )
        same = "  (every check as originally)"
        after = [*done.result.checks, *(c for p in done.phases.values() for c in p.checks)]
        print("\n".join(_differences(checks, after)) or same)
        for index, phase in sorted(done.phases.items()):
            print(
                f"  phase {index + 1}: score {phase.score:.2f} · passed "
                f"{'yes' if phase.passed else 'no'}"
            )
        for line in done.not_rescored:
            print(f"  {line}")
    if args.json:
        print(json.dumps(rows, indent=2))
    return 2 if failures else 0


def cmd_score(args: argparse.Namespace) -> int:
    with open_store(args.db) as store:
        ids = _episode_ids(store, args)
        if args.rescore:
            return run_async(_rescore_all(store, ids, args))
        passed = [_show(store, episode_id) for episode_id in ids]
    return 0 if all(passed) else 1


def register(sub: Any) -> None:
    score = sub.add_parser(
        "score",
        help="an episode's scores, archive and integrity flags; --rescore re-scores it",
        description=(
            "Print the scores recorded for episodes: the original one (made at the end "
            "of the episode), every rescore beside it, the final-state archive and the "
            "integrity flags. With --rescore, run the current evaluator on each "
            "episode's archive and record the new score beside the original."
        ),
    )
    score.add_argument("ids", type=int, nargs="*", metavar="ID", help="episode ids")
    score.add_argument("--batch", help="every finished episode of this batch as well")
    score.add_argument(
        "--rescore",
        action="store_true",
        help="run the current evaluator on the archives and record the new scores",
    )
    score.add_argument(
        "--task",
        type=Path,
        help="re-score with this task file (default: the file each episode ran, as it is "
        "now; for an episode recorded with a relative path, or whose file has gone, a "
        "file found from here or in --tasks-dir only if it is the one the episode ran)",
    )
    score.add_argument("--json", action="store_true", help="--rescore's results as JSON")
    # Without them, a rescore asks the judge the episode asked (its cache answers an
    # unchanged question without a request).
    add_judge_options(score)
    score.set_defaults(func=cmd_score)
