"""Reports over recorded episodes as text and as a JSONL export (the HTML page is
`app.metrics.html_report`).

Every figure comes from `app.metrics.summary`, which documents the one policy
(what a success is, how errors, aborts and batch retries count); this module only
writes the figures down.

The JSONL export writes the episodes the figures count (one per batch slot), one
per line with the same keys and value types on every line (nested values whose
shape varies by action kind, such as an action's parameters or an agent's step
info, are JSON strings), so it loads with
`datasets.load_dataset("json", data_files=...)`. Each line's `outcome` is the
policy's word for the episode, so the figures can be recomputed from the file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from app.core.tables import render_table
from app.metrics.slots import counted_episodes
from app.metrics.summary import COLUMNS, POLICY_NOTE, Summary, cells, outcome
from app.store import EpisodeRecord, Store

# -- text -----------------------------------------------------------------------------

_NO_EPISODES = "(no episodes)"


def format_report(summary: Summary) -> str:
    title = f"batch {summary.batch_id}" if summary.batch_id else "all episodes"
    parts = [
        f"Report: {title}",
        "",
        render_table(COLUMNS, [cells(g) for g in summary.groups], empty=_NO_EPISODES),
    ]
    if summary.totals:
        parts += [
            "",
            "By agent:",
            render_table(COLUMNS, [cells(g) for g in summary.totals], empty=_NO_EPISODES),
        ]
    parts += ["", POLICY_NOTE]
    return "\n".join(parts)


# -- JSONL ----------------------------------------------------------------------------


def episode_json(store: Store, record: EpisodeRecord) -> dict[str, Any]:
    """One episode with its messages, steps (actions), checks and frame paths."""

    def frame(relative: str | None) -> str | None:
        return None if relative is None else str(store.frame_path(relative))

    return {
        "episode_id": record.id,
        "task_id": record.task_id,
        "task_sha256": record.task_sha256,
        "app": record.app,
        "level": record.level,
        "interactive": record.interactive,
        "agent": record.agent,
        "user_mode": record.user_mode,
        "backend": record.backend,
        "batch_id": record.batch_id,
        "batch_agent": record.batch_agent,
        "batch_repeat": record.batch_repeat,
        "status": record.status,
        "end_reason": record.end_reason,
        "error": record.error,
        "error_kind": record.error_kind,
        "outcome": outcome(record),
        "passed": record.passed,
        "score": record.score,
        "steps": record.steps,
        "started_at": record.started_at.isoformat(),
        "ended_at": None if record.ended_at is None else record.ended_at.isoformat(),
        "final_frame": frame(record.final_frame),
        "messages": [
            {
                "idx": m.idx,
                "role": m.role,
                "kind": m.kind,
                "text": m.text,
                "step": m.step,
                "source": m.source,
                "phase_index": m.phase_index,
            }
            for m in store.messages(record.id)
        ],
        "actions": [
            {
                "idx": s.idx,
                "kind": s.kind,
                "description": s.description,
                "action_json": json.dumps(s.action, ensure_ascii=False),
                "error": s.error,
                "frame": frame(s.frame),
                "agent_seconds": float(s.agent_seconds),
                "act_seconds": float(s.act_seconds),
                "settle_seconds": float(s.settle_seconds),
                "agent_info_json": None
                if s.agent_info is None
                else json.dumps(s.agent_info, ensure_ascii=False),
            }
            for s in store.steps(record.id)
        ],
        "checks": [
            {
                # The position in the recorded order, which is the stored idx: the
                # runner only appends checks (each phase's, then the final score's).
                "idx": idx,
                "path": c.path,
                "name": c.name,
                "params_json": json.dumps(c.params, ensure_ascii=False),
                "weight": float(c.weight),
                "required": c.required,
                "passed": c.passed,
                "score": float(c.score),
                "evidence": c.evidence,
            }
            for idx, c in enumerate(store.checks(record.id))
        ],
        # Issue 17: flags beside the score (never changing it), and rescores beside it.
        "integrity_flags": [
            {"kind": f.kind, "summary": f.summary, "evidence": list(f.evidence)}
            for f in store.flags(record.id)[0]
        ],
        "rescores": [
            {
                "id": r.id,
                "created_at": r.created_at.isoformat(),
                "task_sha256": r.task_sha256,
                "evaluator": r.evaluator,
                "passed": r.passed,
                "score": float(r.score),
            }
            for r in store.rescores(record.id)
        ],
    }


def write_jsonl(store: Store, path: Path | str, batch_id: str | None = None) -> int:
    """Export the episodes the figures count, one JSON object per line; returns how many."""
    records = counted_episodes(store, batch_id).episodes
    lines = [json.dumps(episode_json(store, r), ensure_ascii=False) for r in records]
    atomic_write(Path(path), "".join(line + "\n" for line in lines))
    return len(lines)


def atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
