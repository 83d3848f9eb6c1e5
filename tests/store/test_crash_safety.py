"""Crash safety: a killed runner leaves its committed steps and is recovered; a live one is
not; opening takes no write lock."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from PIL import Image

from app.store import Store
from tests.store.helpers import REPO, new_episode

# -- crash safety --------------------------------------------------------------

CHILD = textwrap.dedent(
    """
    import sys, time
    from app.core.conversation import Message
    from app.core.triggers import AgentDone
    from app.tasks.model import Phase
    from app.store import Store, frame_png
    import numpy as np
    store = Store(sys.argv[1])
    episode = store.start_episode(
        task_id="t", task_path="t.yaml", task_sha256="0" * 64, app="gimp", level="L1",
        interactive=True, agent="null", user_mode="simulated", backend="local")
    store.init_phases(episode, [Phase(message="m", trigger=AgentDone())])
    message = store.record_message(
        episode, role="user", kind="instruction", text="go", step=0, source="task")
    print(episode, flush=True)
    for idx in range(100000):
        frame = store.save_frame(
            episode, idx, frame_png(np.full((4, 4, 3), idx % 256, dtype=np.uint8)))
        store.record_step(
            episode, idx=idx, action={"kind": "wait", "seconds": idx}, kind="wait",
            description=f"step {idx}", started_at=time.time(), agent_seconds=0.0,
            act_seconds=0.0, settle_seconds=0.0, frame=frame, phase_index=0,
            active_message_id=message,
            messages=[Message("agent", "question", f"step {idx}?", idx + 1, "agent")])
        print(idx, flush=True)
    """
)


def test_killed_runner_leaves_committed_steps_and_is_recovered(tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    errors = tmp_path / "child-stderr.txt"
    with errors.open("w") as stderr:
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(db)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    try:
        assert child.stdout is not None
        episode = int(child.stdout.readline() or errors.read_text())
        acked = -1
        while acked < 40:
            line = child.stdout.readline()
            assert line, errors.read_text()
            acked = int(line)
        # A second store on the same file while the runner writes: opening it must
        # neither block the runner nor "recover" an episode whose runner is alive.
        with Store(db) as reader:
            assert reader.get_episode(episode).status == "running"
        child.send_signal(signal.SIGKILL)
        # Read through the same buffered reader as above: communicate() would read
        # the raw pipe and miss lines this reader has already buffered.
        rest = child.stdout.read()
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL
    acked = max([acked, *(int(line) for line in rest.split())])

    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        stored = conn.execute(
            "SELECT idx, action, description FROM steps WHERE episode_id = ? ORDER BY idx",
            (episode,),
        ).fetchall()
        asked = [
            text
            for (text,) in conn.execute(
                "SELECT text FROM messages WHERE episode_id = ? AND role = 'agent' ORDER BY idx",
                (episode,),
            )
        ]
    finally:
        conn.close()
    # Every acknowledged step was committed; at most the one in flight was too.
    assert acked + 1 <= len(stored) <= acked + 2
    assert [row[0] for row in stored] == list(range(len(stored)))
    for idx, action, description in stored:
        assert (action, description) == (f'{{"kind": "wait", "seconds": {idx}}}', f"step {idx}")
    # Each step was committed with its message, and no message without its step.
    assert asked == [f"step {idx}?" for idx in range(len(stored))]

    with Store(db) as store:
        assert store.integrity_ok()
        ep = store.get_episode(episode)
        assert (ep.status, ep.end_reason) == ("error", "error")
        assert ep.error == (
            f"interrupted: runner process {child.pid} ended without finishing the episode"
        )
        assert ep.error_kind == "interrupted"  # a batch reruns it
        assert ep.steps == len(stored)
        steps = store.steps(episode)
        # The last thing recorded: the last step's message, written with the step.
        assert ep.ended_at == store.messages(episode)[-1].created_at >= steps[-1].started_at
        assert [p.status for p in store.phases(episode)] == ["never_delivered"]
        for s in steps:
            assert s.frame is not None
            with Image.open(store.frame_path(s.frame)) as image:
                assert image.getpixel((0, 0)) == (s.idx % 256,) * 3
        # Recovery is done once: nothing is left to recover.
        assert store.recover_interrupted() == []


def test_opening_an_up_to_date_database_takes_no_write_lock(tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    with Store(db) as store:
        episode = new_episode(store)
    writer = sqlite3.connect(db, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")  # another process in the middle of a write
        start = time.perf_counter()
        with Store(db) as viewer:
            assert viewer.get_episode(episode).status == "running"
        # Waiting for the lock would take the whole busy timeout (5 s).
        assert time.perf_counter() - start < 2.0
        writer.execute("COMMIT")
    finally:
        writer.close()


def test_episode_of_a_live_runner_is_not_recovered(tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    with Store(db) as store:
        episode = new_episode(store)
    with Store(db) as store:
        assert store.recover_interrupted() == []
        assert store.get_episode(episode).status == "running"


def test_episode_whose_pid_was_reused_is_recovered(tmp_path: Path) -> None:
    # The runner dies and the kernel hands its pid to another process (after a reboot,
    # often a system daemon). The pid is alive; the runner is not.
    db = tmp_path / "lab.db"
    record = (
        "import sys; from tests.store.helpers import new_episode; from app.store import Store;"
        " s = Store(sys.argv[1]); print(new_episode(s)); s.close()"
    )
    made = subprocess.run(
        [sys.executable, "-c", record, str(db)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    episode = int(made.stdout)
    other = subprocess.Popen(["sleep", "600"])
    try:
        conn = sqlite3.connect(db, isolation_level=None)
        try:
            (start,) = conn.execute(
                "SELECT runner_start FROM episodes WHERE id = ?", (episode,)
            ).fetchone()
            boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
            assert start.startswith(boot_id + "/")
            conn.execute("UPDATE episodes SET pid = ? WHERE id = ?", (other.pid, episode))
            # An episode recorded before runner_start existed is judged by its pid alone.
            with Store(db) as store:
                old = new_episode(store)
            conn.execute(
                "UPDATE episodes SET pid = ?, runner_start = NULL WHERE id = ?", (other.pid, old)
            )
        finally:
            conn.close()
        with Store(db) as store:
            assert store.get_episode(episode).status == "error"
            assert store.get_episode(old).status == "running"
    finally:
        other.kill()
        other.wait()
    with Store(db) as store:
        assert store.get_episode(old).status == "error"
