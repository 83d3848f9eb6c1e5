"""The store's writes of an episode, from its start to its end, and of its batch.

Each method is one committed transaction, so a runner killed at any moment loses at
most the write in flight, and what it wrote before is whole: `record_step` writes a
step together with the messages and the phase delivery that came of it. The column
values come from `app.store.values` (timestamps, JSON, the cap on an agent's raw
words); the episode's score is `app.store.scores`'s.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from app.core.conversation import Message
from app.core.errors import StoreError
from app.core.triggers import Trigger, trigger_to_raw
from app.core.vocabulary import (
    EndReason,
    EpisodeStatus,
    ErrorKind,
    MessageKind,
    MessageOrigin,
    PhaseKind,
    Role,
    Source,
    StepActor,
    UserMode,
)
from app.core.windows import WindowList
from app.store.base import Part, end_pending_phases
from app.store.liveness import this_runner
from app.store.values import Timestamp, cap_raw, capped_json, iso_text, json_text


class PhaseScript(Protocol):
    """What the store records of a task's phase (app.tasks.model.Phase has it)."""

    @property
    def message(self) -> str: ...
    @property
    def trigger(self) -> Trigger: ...
    @property
    def kind(self) -> PhaseKind | None: ...


class Writes(Part):
    """The writes of `Store`: the runner's, from an episode's start to its end, and
    app.batch's."""

    # -- an episode (the runner) ---------------------------------------------

    def start_episode(
        self,
        *,
        task_id: str,
        task_path: str | Path,
        task_sha256: str,
        app: str,
        level: str,
        interactive: bool,
        agent: str,
        user_mode: UserMode,
        backend: str,
        config: Mapping[str, Any] | None = None,
        batch_id: str | None = None,
        started_at: Timestamp | None = None,
    ) -> int:
        """Record a new running episode owned by this process; return its id."""
        config_json = json_text(dict(config or {}), f"config of the {task_id} episode")
        runner = this_runner()
        with self.db.write(f"starting an episode of {task_id}") as conn:
            cursor = conn.execute(
                """INSERT INTO episodes (task_id, task_path, task_sha256, app, level,
                       interactive, agent, user_mode, backend, started_at, pid, hostname,
                       runner_start, config, batch_id)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                (
                    task_id,
                    str(task_path),
                    task_sha256,
                    app,
                    level,
                    int(interactive),
                    agent,
                    user_mode,
                    backend,
                    iso_text(started_at),
                    runner.pid,
                    runner.hostname,
                    runner.start,
                    config_json,
                    batch_id,
                ),
            )
            assert cursor.lastrowid is not None
            return cursor.lastrowid

    def record_setup(self, episode_id: int, setup: Mapping[str, Any]) -> None:
        """Record how the episode's desktop was brought to its start state (JSON:
        app.episode.prepare's `PreparedStart.as_json`)."""
        text = json_text(dict(setup), f"setup of episode {episode_id}")
        with self.db.write(f"recording the setup of episode {episode_id}") as conn:
            cursor = conn.execute(
                "UPDATE episodes SET setup = ? WHERE id = ? AND status = 'running'",
                (text, episode_id),
            )
            if cursor.rowcount != 1:
                raise StoreError(f"{self.db.path}: episode {episode_id} is not running")

    def init_phases(self, episode_id: int, phases: Sequence[PhaseScript]) -> None:
        """Record the task's phases (app.tasks.model.Phase values), all pending."""
        rows = []
        for idx, phase in enumerate(phases):
            # The trigger's JSON is its task-file form, made here and nowhere else.
            trigger = trigger_to_raw(phase.trigger)
            what = f"trigger of phase {idx} of episode {episode_id}"
            rows.append((episode_id, idx, phase.message, json_text(trigger, what), phase.kind))
        with self.db.write(f"recording the phases of episode {episode_id}") as conn:
            conn.executemany(
                "INSERT INTO phases (episode_id, idx, message, trigger, kind)"
                " VALUES (?, ?, ?, ?, ?)",
                rows,
            )

    def record_message(
        self,
        episode_id: int,
        *,
        role: Role,
        kind: MessageKind,
        text: str,
        step: int,
        phase_index: int | None = None,
        source: Source,
        created_at: Timestamp | None = None,
        origin: MessageOrigin | None = None,
        scripted: str | None = None,
        wait_seconds: float | None = None,
        delivers_phase: bool = False,
    ) -> int:
        """Append a message to the episode's conversation; return its id. A person's
        message may say how it came about (`origin`, the script's `scripted` draft)
        and how long the episode waited for it (see app.core.conversation.Message);
        `delivers_phase`: it is phase `phase_index`'s delivery (person mode), marked
        in the same transaction."""
        message = Message(
            role, kind, text, step, source, phase_index, origin, scripted, wait_seconds
        )
        at = iso_text(created_at)
        with self.db.write(f"recording a {role} {kind} message in episode {episode_id}") as conn:
            message_id = _insert_message(conn, episode_id, message, at)
            if delivers_phase and phase_index is not None:
                self._deliver_phase(conn, episode_id, phase_index, step, at)
            return message_id

    def record_step(
        self,
        episode_id: int,
        *,
        idx: int,
        action: Mapping[str, Any],
        kind: str,
        description: str,
        started_at: Timestamp,
        agent_seconds: float,
        act_seconds: float,
        settle_seconds: float,
        frame: str | None,
        phase_index: int | None,
        active_message_id: int | None,
        error: str | None = None,
        agent_info: Mapping[str, Any] | None = None,
        messages: Sequence[Message] = (),
        delivered_phase: int | None = None,
        actor: StepActor = "agent",
    ) -> list[int]:
        """Record one step and what came of it, all in one transaction.

        `action` is app.core.actions.action_to_dict's form (or, for a rejected action,
        whatever the agent sent); `frame` is save_frame's path; `agent_info` is what
        the agent reported about the step (JSON). Its texts, a rejected action's and
        `error` are capped (`cap_raw`). `messages` are the conversation's
        new entries after the step (the agent's ASK / DONE / FAIL, a phase's message),
        appended in order; `delivered_phase` is the pending phase the step delivered,
        at step `idx + 1` (the step is complete then, as its messages' step says).
        Either all of it is written or, when any part is refused, none of it.
        Returns the messages' ids, in order.
        """
        where = f"step {idx} of episode {episode_id}"
        # A rejected action is whatever the agent sent; an action that was carried out
        # is kept whole, as it was done.
        action_json = (
            capped_json(action, f"action of {where}")
            if kind == "rejected"
            else json_text(dict(action), f"action of {where}")
        )
        info_json = (
            None if agent_info is None else capped_json(agent_info, f"agent_info of {where}")
        )
        error = None if error is None else cap_raw(error)
        now = iso_text(None)
        with self.db.write(f"recording {where}") as conn:
            conn.execute(
                """INSERT INTO steps (episode_id, idx, action, kind, description, started_at,
                       agent_seconds, act_seconds, settle_seconds, frame, phase_index,
                       active_message_id, error, agent_info, actor)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                (
                    episode_id,
                    idx,
                    action_json,
                    kind,
                    description,
                    iso_text(started_at),
                    agent_seconds,
                    act_seconds,
                    settle_seconds,
                    frame,
                    phase_index,
                    active_message_id,
                    error,
                    info_json,
                    actor,
                ),
            )
            ids = [_insert_message(conn, episode_id, message, now) for message in messages]
            if delivered_phase is not None:
                self._deliver_phase(conn, episode_id, delivered_phase, idx + 1, now)
            return ids

    def save_frame(self, episode_id: int, name: str | int, png: bytes) -> str:
        """Write a PNG (see frames.frame_png) as frame `name` (a step index or 'final').

        Returns its path relative to the database's directory, for `record_step`; a
        frame identical to one already saved in this episode returns that one's path.
        """
        with self.db.lock:
            return self.db.frames.save(episode_id, name, png)

    def mark_phase_delivered(
        self, episode_id: int, idx: int, step: int, delivered_at: Timestamp | None = None
    ) -> None:
        """Mark the pending phase `idx` delivered at `step`; phases go strictly in order."""
        with self.db.write(f"delivering phase {idx} of episode {episode_id}") as conn:
            self._deliver_phase(conn, episode_id, idx, step, iso_text(delivered_at))

    def _deliver_phase(
        self, conn: sqlite3.Connection, episode_id: int, idx: int, step: int, at: str
    ) -> None:
        cursor = conn.execute(
            """UPDATE phases SET status = 'delivered', delivered_step = ?, delivered_at = ?
               WHERE episode_id = ? AND idx = ? AND status = 'pending'
                 AND NOT EXISTS (SELECT 1 FROM phases AS earlier
                                 WHERE earlier.episode_id = phases.episode_id
                                   AND earlier.idx < phases.idx
                                   AND earlier.status = 'pending')""",
            (step, at, episode_id, idx),
        )
        if cursor.rowcount == 1:
            return
        row = conn.execute(
            "SELECT status FROM phases WHERE episode_id = ? AND idx = ?", (episode_id, idx)
        ).fetchone()
        doing = f"{self.db.path}: delivering phase {idx} of episode {episode_id}"
        if row is None:
            raise StoreError(f"{doing}: episode {episode_id} has no phase {idx}")
        if row[0] != "pending":
            raise StoreError(f"{doing}: the phase is already {row[0]}")
        raise StoreError(f"{doing}: an earlier phase is still pending")

    def finish_episode(
        self,
        episode_id: int,
        *,
        status: EpisodeStatus,
        end_reason: EndReason,
        error: str | None = None,
        error_kind: ErrorKind | None = None,
        steps: int,
        final_frame: str | None = None,
        final_windows: WindowList | None = None,
        ended_at: Timestamp | None = None,
        person_wait_seconds: float = 0.0,
        paused_seconds: float = 0.0,
    ) -> None:
        """End a running episode; its phases still pending become never_delivered.

        `error_kind` says what failed when the status is `error` (the runner always
        gives it; None records the kind as unknown). `final_windows` are the windows
        open at the end, where the runner saw them (a failed setup)."""
        doing = f"finishing episode {episode_id}"
        if status == "running":
            raise StoreError(f"{self.db.path}: {doing}: status must be 'finished' or 'error'")
        with self.db.write(doing) as conn:
            cursor = conn.execute(
                """UPDATE episodes SET status = ?, end_reason = ?, error = ?, error_kind = ?,
                       steps = ?, final_frame = ?, final_windows = ?, ended_at = ?,
                       person_wait_seconds = ?, paused_seconds = ?
                   WHERE id = ? AND status = 'running'""",
                (
                    status,
                    end_reason,
                    error,
                    error_kind,
                    steps,
                    final_frame,
                    None if final_windows is None else json.dumps(final_windows.to_raw()),
                    iso_text(ended_at),
                    person_wait_seconds,
                    paused_seconds,
                    episode_id,
                ),
            )
            if cursor.rowcount == 1:
                end_pending_phases(conn, episode_id)
                # No more steps will come: the dedupe index of its frames can go.
                self.db.frames.forget(episode_id)
                return
            row = conn.execute("SELECT status FROM episodes WHERE id = ?", (episode_id,)).fetchone()
        if row is None:
            raise StoreError(f"no episode {episode_id} in {self.db.path}")
        raise StoreError(f"{self.db.path}: {doing}: the episode already ended ({row[0]})")

    # -- batches (app.batch) ---------------------------------------------------

    def create_batch(
        self, batch_id: str, suite: Mapping[str, Any], created_at: Timestamp | None = None
    ) -> None:
        """Record a new batch and its suite (JSON)."""
        suite_json = json_text(dict(suite), f"suite of batch {batch_id}")
        with self.db.write(f"recording batch {batch_id}") as conn:
            found = conn.execute("SELECT 1 FROM batches WHERE id = ?", (batch_id,)).fetchone()
            if found is not None:
                raise StoreError(f"{self.db.path}: batch {batch_id} already exists")
            conn.execute(
                "INSERT INTO batches (id, created_at, suite) VALUES (?, ?, ?)",
                (batch_id, iso_text(created_at), suite_json),
            )

    def tag_batch_slot(self, episode_id: int, *, agent: str, repeat: int, attempt: int) -> None:
        """Record which slot of its batch a running episode fills (once, while running)."""
        doing = f"recording the batch slot of episode {episode_id}"
        with self.db.write(doing) as conn:
            cursor = conn.execute(
                """UPDATE episodes SET batch_agent = ?, batch_repeat = ?, batch_attempt = ?
                   WHERE id = ? AND status = 'running' AND batch_id IS NOT NULL
                     AND batch_repeat IS NULL""",
                (agent, repeat, attempt, episode_id),
            )
            if cursor.rowcount != 1:
                raise StoreError(
                    f"{self.db.path}: {doing}: it is not a running, untagged batch episode"
                )


def _insert_message(
    conn: sqlite3.Connection, episode_id: int, message: Message, created_at: str
) -> int:
    """Append `message` after the episode's last one; return its id."""
    cursor = conn.execute(
        """INSERT INTO messages (episode_id, idx, role, kind, text, step, phase_index,
               source, created_at, origin, scripted, wait_seconds)
           SELECT ?, COALESCE(MAX(idx) + 1, 0), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
           FROM messages WHERE episode_id = ?""",
        (
            episode_id,
            message.role,
            message.kind,
            message.text,
            message.step,
            message.phase_index,
            message.source,
            created_at,
            message.origin,
            message.scripted,
            message.wait_seconds,
            episode_id,
        ),
    )
    assert cursor.lastrowid is not None
    return cursor.lastrowid
