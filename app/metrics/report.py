"""Reports over recorded episodes: tables, a self-contained HTML page, a JSONL export.

Episodes are grouped by app × level × interactive/standard × agent. Rates are over
*finished* episodes (the ones that were scored); episodes that ended in an error
are infrastructure failures and are counted in their own column, never as a
failed attempt. With a batch id, each slot of the batch counts once: its finished
episode (or its last try when none finished), not every retry.

The JSONL export writes one episode per line with the same keys and value types
on every line (nested values whose shape varies by action kind, such as an
action's parameters or an agent's step info, are JSON strings), so it loads with
`datasets.load_dataset("json", data_files=...)`.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.core.tables import render_table
from app.metrics.slots import batch_table
from app.store import EpisodeRecord, Store


@dataclass(frozen=True)
class GroupStats:
    app: str
    level: str
    mode: str
    """interactive | standard"""
    agent: str
    episodes: int
    finished: int
    errors: int
    success_rate: float | None
    mean_score: float | None
    mean_steps: float | None
    ask_rate: float | None
    """Share of finished episodes in which the agent asked at least once."""
    asks_per_episode: float | None

    @property
    def label(self) -> str:
        return f"{self.app} {self.level} {self.mode} · {self.agent}"


@dataclass(frozen=True)
class Report:
    batch_id: str | None
    generated_at: datetime
    groups: list[GroupStats]
    by_agent: list[GroupStats]
    """The same figures over every app and level, one row per agent."""


def report_episodes(store: Store, batch_id: str | None = None) -> list[EpisodeRecord]:
    """The episodes a report counts: a batch's final slots, or every ended episode."""
    if batch_id is not None:
        return [row.episode for row in batch_table(store, batch_id) if row.episode is not None]
    records = store.list_episodes(limit=None)
    return sorted((r for r in records if r.status != "running"), key=lambda r: r.id)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _stats(
    key: tuple[str, str, str, str], records: list[EpisodeRecord], asks: dict[int, int]
) -> GroupStats:
    finished = [r for r in records if r.status == "finished"]
    return GroupStats(
        app=key[0],
        level=key[1],
        mode=key[2],
        agent=key[3],
        episodes=len(records),
        finished=len(finished),
        errors=sum(1 for r in records if r.status == "error"),
        success_rate=_mean([1.0 if r.passed else 0.0 for r in finished]),
        mean_score=_mean([r.score or 0.0 for r in finished]),
        mean_steps=_mean([float(r.steps) for r in finished]),
        ask_rate=_mean([1.0 if asks.get(r.id, 0) else 0.0 for r in finished]),
        asks_per_episode=_mean([float(asks.get(r.id, 0)) for r in finished]),
    )


def count_asks(store: Store, records: Iterable[EpisodeRecord]) -> dict[int, int]:
    return {
        r.id: sum(1 for m in store.messages(r.id) if m.role == "agent" and m.kind == "question")
        for r in records
    }


def build_report(store: Store, batch_id: str | None = None) -> Report:
    records = report_episodes(store, batch_id)
    asks = count_asks(store, records)
    groups: dict[tuple[str, str, str, str], list[EpisodeRecord]] = {}
    agents: dict[tuple[str, str, str, str], list[EpisodeRecord]] = {}
    for record in records:
        mode = "interactive" if record.interactive else "standard"
        groups.setdefault((record.app, record.level, mode, record.agent), []).append(record)
        agents.setdefault(("all", "all", "all", record.agent), []).append(record)
    return Report(
        batch_id=batch_id,
        generated_at=datetime.now(UTC),
        groups=[_stats(k, v, asks) for k, v in sorted(groups.items())],
        by_agent=[_stats(k, v, asks) for k, v in sorted(agents.items())],
    )


# -- text -----------------------------------------------------------------------------

HEADERS = [
    "app",
    "level",
    "mode",
    "agent",
    "episodes",
    "errors",
    "success",
    "partial",
    "steps",
    "ask rate",
]
_NO_EPISODES = "(no episodes)"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _row(g: GroupStats) -> list[str]:
    return [
        g.app,
        g.level,
        g.mode,
        g.agent,
        str(g.episodes),
        str(g.errors),
        _pct(g.success_rate),
        _num(g.mean_score),
        _num(g.mean_steps, 1),
        _pct(g.ask_rate),
    ]


def format_report(report: Report) -> str:
    title = f"batch {report.batch_id}" if report.batch_id else "all episodes"
    parts = [
        f"Report: {title}",
        "",
        render_table(HEADERS, [_row(g) for g in report.groups], empty=_NO_EPISODES),
    ]
    if report.by_agent:
        parts += [
            "",
            "By agent:",
            render_table(HEADERS, [_row(g) for g in report.by_agent], empty=_NO_EPISODES),
        ]
    parts += [
        "",
        "success, partial credit, steps and ask rate are over finished episodes; "
        "errors are infrastructure failures and are not counted as attempts.",
    ]
    return "\n".join(parts)


# -- HTML -----------------------------------------------------------------------------


def _svg_bars(title: str, items: list[tuple[str, float | None]]) -> str:
    """A horizontal bar chart of values in [0, 1] as inline SVG."""
    label_w, bar_w, row_h = 330, 300, 22
    height = 30 + row_h * len(items)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + bar_w + 60}" '
        f'height="{height}" role="img" aria-label="{html.escape(title)}">',
        f'<text x="0" y="16" font-weight="bold">{html.escape(title)}</text>',
    ]
    for i, (label, value) in enumerate(items):
        y = 28 + i * row_h
        width = 0 if value is None else round(bar_w * max(0.0, min(1.0, value)))
        shown = "-" if value is None else f"{value:.2f}"
        out.append(
            f'<text x="{label_w - 6}" y="{y + 14}" text-anchor="end">{html.escape(label)}</text>'
        )
        out.append(f'<rect x="{label_w}" y="{y + 2}" width="{bar_w}" height="16" fill="#eee"/>')
        out.append(f'<rect x="{label_w}" y="{y + 2}" width="{width}" height="16" fill="#4a7bd0"/>')
        out.append(f'<text x="{label_w + bar_w + 6}" y="{y + 14}">{shown}</text>')
    out.append("</svg>")
    return "\n".join(out)


def _html_table(groups: list[GroupStats]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in HEADERS)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in _row(g)) + "</tr>" for g in groups
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_html(report: Report) -> str:
    title = f"DeskLoop report: batch {report.batch_id}" if report.batch_id else "DeskLoop report"
    charts = [
        _svg_bars("Success rate", [(g.label, g.success_rate) for g in report.groups]),
        _svg_bars("Mean partial credit", [(g.label, g.mean_score) for g in report.groups]),
        _svg_bars("Ask rate", [(g.label, g.ask_rate) for g in report.groups]),
    ]
    style = (
        "body{font-family:sans-serif;margin:2em;color:#222}"
        "table{border-collapse:collapse;margin:1em 0}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}"
        "th{background:#f3f3f3}svg{display:block;margin:1em 0;font-size:12px}"
    )
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f"<title>{html.escape(title)}</title><style>{style}</style></head><body>",
            f"<h1>{html.escape(title)}</h1>",
            f"<p>Generated {report.generated_at.isoformat(timespec='seconds')}. Rates are over "
            "finished episodes; errors are infrastructure failures.</p>",
            "<h2>By app, level, mode and agent</h2>",
            _html_table(report.groups),
            "<h2>By agent</h2>",
            _html_table(report.by_agent),
            "<h2>Plots</h2>",
            *charts,
            "</body></html>",
        ]
    )


def write_html(report: Report, path: Path | str) -> None:
    _atomic_write(Path(path), render_html(report))


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
                "idx": c.idx,
                "path": c.path,
                "name": c.name,
                "params_json": json.dumps(c.params, ensure_ascii=False),
                "weight": float(c.weight),
                "required": c.required,
                "passed": c.passed,
                "score": float(c.score),
                "evidence": c.evidence,
            }
            for c in store.checks(record.id)
        ],
    }


def write_jsonl(store: Store, path: Path | str, batch_id: str | None = None) -> int:
    """Export the report's episodes, one JSON object per line; returns how many."""
    records = report_episodes(store, batch_id)
    lines = [json.dumps(episode_json(store, r), ensure_ascii=False) for r in records]
    _atomic_write(Path(path), "".join(line + "\n" for line in lines))
    return len(lines)


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
