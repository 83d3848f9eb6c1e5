"""A batch's slots and the episode that stands for each: the one place that decides how
retries count.

A *slot* is one (task, agent spec, repeat index) of a batch's suite. A slot may have
several tries (infrastructure errors are retried); the slot's episode is its first
finished try, else its latest try, else none (never run). Reports, `batch status`
and the batch runner all read a batch through `batch_table`, and `counted_episodes`
applies the same choice to a whole database: the figures of `app.metrics.summary`
count each slot once, however often it was retried.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.store import EpisodeRecord, Store


@dataclass(frozen=True)
class Slot:
    task_id: str
    agent: str
    repeat: int

    def __str__(self) -> str:
        return f"{self.task_id} × {self.agent} #{self.repeat}"


@dataclass(frozen=True)
class SlotRow:
    slot: Slot
    episode: EpisodeRecord | None
    """The slot's finished episode, else its latest try, else None (never run)."""
    attempts: int

    @property
    def status(self) -> str:
        return "pending" if self.episode is None else self.episode.status

    def key(self) -> tuple[Any, ...]:
        """What must be equal between two runs of the same batch (no ids, no times)."""
        e = self.episode
        return (
            self.slot.task_id,
            self.slot.agent,
            self.slot.repeat,
            None if e is None else (e.status, e.end_reason, e.passed, e.score, e.steps),
        )


def suite_slots(suite: dict[str, Any]) -> list[Slot]:
    """The slots of a recorded suite, in run order (repeat, task, agent)."""
    return [
        Slot(task["id"], agent, repeat)
        for repeat in range(suite["repeats"])
        for task in suite["tasks"]
        for agent in suite["agents"]
    ]


def batch_table(store: Store, batch_id: str) -> list[SlotRow]:
    suite = store.get_batch(batch_id).suite
    by_slot: dict[Slot, list[EpisodeRecord]] = {}
    for record in store.list_episodes(batch_id=batch_id, limit=None):
        if record.batch_agent is None or record.batch_repeat is None:
            continue  # killed before it was tagged: an error try of an unknown slot
        slot = Slot(record.task_id, record.batch_agent, record.batch_repeat)
        by_slot.setdefault(slot, []).append(record)
    rows = []
    for slot in suite_slots(suite):
        tries = sorted(by_slot.get(slot, []), key=lambda r: r.id)
        finished = [r for r in tries if r.status == "finished"]
        chosen = finished[0] if finished else (tries[-1] if tries else None)
        rows.append(SlotRow(slot, chosen, len(tries)))
    return rows


@dataclass(frozen=True)
class Counted:
    """The ended episodes figures are taken over, and the retries they stand for."""

    episodes: list[EpisodeRecord]
    """Every ended episode outside a batch, and each batch slot's episode, by id."""
    retries: list[EpisodeRecord]
    """Ended tries of batch slots that their slot's episode replaced, by id."""


def counted_episodes(store: Store, batch_id: str | None = None) -> Counted:
    """One episode per batch slot, plus every episode outside a batch (all of them,
    or only the slots of `batch_id`). Running episodes are in neither list: a slot
    whose latest try still runs is not counted yet, and its earlier tries are retries.
    """
    batches = [batch_id] if batch_id is not None else [b.id for b in store.list_batches()]
    chosen = {
        row.episode.id
        for batch in batches
        for row in batch_table(store, batch)
        if row.episode is not None
    }
    known = set(batches)
    episodes: list[EpisodeRecord] = []
    retries: list[EpisodeRecord] = []
    for record in sorted(store.list_episodes(batch_id=batch_id, limit=None), key=lambda r: r.id):
        if record.status == "running":
            continue
        # An episode naming a batch that was never recorded has no slots to share:
        # it counts on its own, like an episode outside a batch.
        replaced = record.batch_id in known and record.id not in chosen
        (retries if replaced else episodes).append(record)
    return Counted(episodes, retries)


def table_json(rows: Sequence[SlotRow]) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        e = row.episode
        out.append(
            {
                "task": row.slot.task_id,
                "agent": row.slot.agent,
                "repeat": row.slot.repeat,
                "status": row.status,
                "episode": None if e is None else e.id,
                "end_reason": None if e is None else e.end_reason,
                "passed": None if e is None else e.passed,
                "score": None if e is None else e.score,
                "steps": None if e is None else e.steps,
                "attempts": row.attempts,
                "error": None if e is None else e.error,
                "libvirt_uri": None if e is None else e.config.get("libvirt_uri"),
            }
        )
    return out


def dumps_table(rows: Sequence[SlotRow]) -> str:
    return json.dumps(table_json(rows), indent=2)
