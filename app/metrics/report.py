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
from dataclasses import asdict
from pathlib import Path
from typing import Any

from app.core.files import write_atomic
from app.metrics.slots import counted_episodes
from app.metrics.summary import (
    CHECK_COLUMNS,
    COLUMNS,
    PAIRED_COLUMNS,
    PHASE_COLUMNS,
    POLICY_NOTE,
    RELIABILITY_COLUMNS,
    RELIABILITY_NOTE,
    REPEAT_COLUMNS,
    Summary,
    cells,
    check_cells,
    num,
    outcome,
    paired_cells,
    phase_cells,
    reliability_cells,
    repeat_cells,
    token_usage,
)
from app.metrics.tables import render_table
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
    models = [g for g in summary.by_agent if g.token_attempts]
    if models:
        parts += [
            "",
            "Model tokens by agent (over the attempts that reported usage):",
            render_table(
                ["agent", "attempts", "tokens", "tokens/ep", "asks/ep"],
                [
                    [
                        g.agent,
                        str(g.token_attempts),
                        str(g.tokens),
                        num(g.tokens_per_episode, 0),
                        num(g.asks_per_episode, 1),
                    ]
                    for g in models
                ],
                empty=_NO_EPISODES,
            ),
        ]
    parts += ["", POLICY_NOTE]
    if summary.totals:
        parts += ["", *reliability_sections(summary), "", RELIABILITY_NOTE]
    return "\n".join(parts)


def reliability_sections(summary: Summary, *, groups: bool = True) -> list[str]:
    """The checkpoint and reliability tables, each under its title (empty ones left
    out); `groups=False` leaves out the first, the rates per group, for a screen
    that shows that one as a table of its own."""
    sections = [
        (
            "Reliability (95% intervals):",
            RELIABILITY_COLUMNS,
            [reliability_cells(g) for g in [*summary.groups, *summary.totals]],
        ),
        ("Checks (leaf success):", CHECK_COLUMNS, [check_cells(c) for c in summary.checks]),
        ("Phases:", PHASE_COLUMNS, [phase_cells(p) for p in summary.phases]),
        ("Repeats (pass@k, pass^k):", REPEAT_COLUMNS, [repeat_cells(r) for r in summary.repeats]),
        ("Paired agents:", PAIRED_COLUMNS, [paired_cells(p) for p in summary.paired]),
    ]
    parts: list[str] = []
    for title, columns, rows in sections if groups else sections[1:]:
        if rows:
            parts += [*([""] if parts else []), title, render_table(columns, rows, empty="")]
    return parts


# -- JSONL ----------------------------------------------------------------------------


def episode_json(store: Store, record: EpisodeRecord) -> dict[str, Any]:
    """One episode with its messages, steps (actions), checks and frame paths."""

    def frame(relative: str | None) -> str | None:
        return None if relative is None else str(store.frame_path(relative))

    messages = store.messages(record.id)
    tokens = token_usage(store, record.id)

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
        # The researcher's own words on it (`deskloop episodes note|tag`).
        "tags": list(record.tags),
        "note": record.note,
        # Per episode: the agent's questions, and its model calls' tokens (null: the
        # agent reported none, as agents without a model).
        "asks": sum(1 for m in messages if m.role == "agent" and m.kind == "question"),
        "prompt_tokens": None if tokens is None else tokens.prompt,
        "completion_tokens": None if tokens is None else tokens.completion,
        "total_tokens": None if tokens is None else tokens.total,
        # The setup's time (the reset and the task's setup), done as the episode's first
        # part or ahead on a warm desktop (then outside started_at..ended_at); None for
        # episodes recorded before it was.
        "setup_seconds": None if record.setup is None else float(record.setup["seconds"]),
        "setup_warm": None if record.setup is None else bool(record.setup["warm"]),
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
            for m in messages
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
        "phases": [
            {
                "idx": p.idx,
                "status": p.status,
                "delivered_step": p.delivered_step,
                "passed": p.passed,
                "score": None if p.score is None else float(p.score),
            }
            for p in store.phases(record.id)
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
        "judgements": [
            {
                "path": j.path,
                "phase": j.phase,
                "counts": j.counts,
                "model": j.model,
                "base_url": j.base_url,
                "temperature": float(j.temperature),
                "seed": j.seed,
                "prompt_json": json.dumps(j.prompt, ensure_ascii=False),
                "images_json": json.dumps([asdict(i) for i in j.images]),
                "request_key": j.request_key,
                "answer": j.answer,
                "passed": None if j.verdict is None else j.verdict.passed,
                "score": None if j.verdict is None else j.verdict.score,
                "reasons": None if j.verdict is None else j.verdict.reasons,
                "cached": j.cached,
                "error": j.error,
            }
            for j in store.judgements(record.id)
        ],
        # Flags beside the score (never changing it), and rescores beside it.
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
    """Write `text` to `path` whole or not at all (no half-written file is left, at
    `path` or beside it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text.encode("utf-8"))
