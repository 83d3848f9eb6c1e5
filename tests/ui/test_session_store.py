"""The TUI's episode session writes to the store off the app's event loop: a database
another process keeps locked slows the episode, never the loop. A desktop that needs
no display (tests.still_desktop) stands in for a real one."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

from app.agents.null import NullAgent
from app.store import Store
from app.tasks.loader import load_task
from app.ui.services.episode import EpisodeSession
from tests.still_desktop import StillDesktop

TASK = """\
id: still-phase
app: gimp
level: L2
title: Say DONE twice
instruction: Say DONE.
budget: {steps: 5, seconds: 60}
phases:
  - message: Say it again.
    trigger: agent_done
evaluate: {check: file_exists, path: ~/proof.txt}
"""


async def test_a_locked_database_slows_the_episode_not_the_loop(tmp_path: Path) -> None:
    (tmp_path / "still-phase.yaml").write_text(TASK)
    db = tmp_path / "db" / "deskloop.db"
    with Store(db) as store:
        session = EpisodeSession(
            task=load_task(tmp_path / "still-phase.yaml"),
            agent_spec="null",
            user_mode="simulated",
            store=store,
            desktop=StillDesktop(),
            backend="local",
            agent=NullAgent(),
        )
        other = sqlite3.connect(db, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")  # another process writing, for 0.6 s
            running = asyncio.ensure_future(session.run())
            longest, last, until = 0.0, time.monotonic(), time.monotonic() + 0.6
            while time.monotonic() < until:
                await asyncio.sleep(0.01)
                now = time.monotonic()
                longest, last = max(longest, now - last), now
            # The runner waits for the lock to record the episode's start; the loop
            # went on (a write on the loop would have stopped it for the 0.6 s).
            assert session.episode_id is None and not running.done()
            assert longest < 0.3
            other.execute("COMMIT")
        finally:
            other.close()
        result = await running
        assert (result.status, result.end_reason, result.steps) == ("finished", "done", 2)
        steps = store.steps(result.episode_id)
        messages = store.messages(result.episode_id)
        # Step 0's DONE delivered the phase: written with it, as the session saw them.
        assert [(m.role, m.kind, m.step) for m in messages] == [
            ("user", "instruction", 0),
            ("agent", "done", 1),
            ("user", "feedback", 1),
            ("agent", "done", 2),
        ]
        assert [(m.kind, m.text) for m in session.messages] == [(m.kind, m.text) for m in messages]
        assert [s.active_message_id for s in steps] == [messages[0].id, messages[2].id]
        (phase,) = store.phases(result.episode_id)
        assert (phase.status, phase.delivered_step) == ("delivered", 1)
