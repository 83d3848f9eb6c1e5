"""What the store tests share: a phase, an episode and a step written with defaults, a PNG."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from app.core.actions import Key, action_to_dict
from app.core.vocabulary import (
    PhaseKind,
)
from app.store import Store, frame_png
from app.tasks.model import Phase

REPO = Path(__file__).resolve().parents[2]


def phase(message: str, trigger: Any, kind: PhaseKind | None = None) -> Phase:
    """A task's phase, its trigger read from the task file's form."""
    return Phase.model_validate({"message": message, "trigger": trigger, "kind": kind})


def new_episode(store: Store, **overrides: Any) -> int:
    fields: dict[str, Any] = {
        "task_id": "gimp-flip",
        "task_path": "tasks/gimp/gimp-flip.yaml",
        "task_sha256": "ab" * 32,
        "app": "gimp",
        "level": "L1",
        "interactive": True,
        "agent": "reference",
        "user_mode": "simulated",
        "backend": "local",
        "config": {"budget": {"steps": 50}},
    }
    fields.update(overrides)
    return store.start_episode(**fields)


def step(store: Store, episode_id: int, idx: int, **overrides: Any) -> list[int]:
    fields: dict[str, Any] = {
        "idx": idx,
        "action": action_to_dict(Key("ctrl+s")),
        "kind": "key",
        "description": "key(ctrl+s)",
        "started_at": datetime(2025, 1, 1, tzinfo=UTC) + timedelta(seconds=idx),
        "agent_seconds": 0.5,
        "act_seconds": 0.01,
        "settle_seconds": 0.2,
        "frame": None,
        "phase_index": None,
        "active_message_id": None,
    }
    fields.update(overrides)
    return store.record_step(episode_id, **fields)


def png_of(value: int, size: tuple[int, int] = (8, 12)) -> bytes:
    return frame_png(np.full((*size, 3), value, dtype=np.uint8))


# A database as the store made it before app.core.vocabulary existed.
OLD_DATABASE = REPO / "tests" / "data" / "store" / "deskloop-0004.sql"


def old_database(path: Path) -> Path:
    conn = sqlite3.connect(path)
    try:
        conn.executescript(OLD_DATABASE.read_text())
    finally:
        conn.close()
    return path
