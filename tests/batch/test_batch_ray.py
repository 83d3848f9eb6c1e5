"""A batch spread over a real Ray cluster on this machine (a head and two worker
nodes, on 127.0.0.1 only): each episode runs on a node's own local desktop and comes
back whole to the driver's database; a worker node killed mid-batch loses nothing."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.batch import BatchOptions
from app.core.errors import DeskLoopError
from app.store import Store
from tests.ray_cluster import REPO, ray_cluster
from tests.xterm_task import write_xterm_task

# The agent types the proof, then waits, so an episode is still running on each node
# when the test kills one.
SCRIPT = '- type: "touch ~/proof.txt"\n- key: enter\n- wait: 4\n- done\n'


def test_ray_takes_no_pool_and_no_warm_desktops() -> None:
    with pytest.raises(DeskLoopError, match="no --libvirt-uri pool and no --warm"):
        BatchOptions(ray="auto", warm=1)
    assert BatchOptions.from_json(BatchOptions(ray="127.0.0.1:1").to_json()).ray == "127.0.0.1:1"
    assert BatchOptions.from_json({"ray": "a:1"}, ray="b:2").ray == "b:2"


def test_deskloop_does_not_import_ray_until_a_batch_asks_for_it() -> None:
    code = (
        "import sys, app.cli, app.cli.batch_cmd, app.batch, app.batch.runner, app.env\n"
        "print(sorted(m for m in sys.modules if m == 'ray' or m.startswith('ray.')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_a_ray_address_nobody_answers_is_refused_before_anything_is_recorded(
    tmp_path: Path,
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again below: nothing listens there
    db = tmp_path / "deskloop.db"
    out = subprocess.run(
        [sys.executable, "-m", "app.cli", "--db", str(db), "batch", "run",
         "--task", "gimp-flip-export", "--agent", "null", "--ray", f"127.0.0.1:{port}"],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 2
    assert f"--ray 127.0.0.1:{port}: no Ray cluster answers there" in out.stderr
    assert not db.exists()


def test_a_cluster_that_offers_no_desktops_is_refused_before_anything_is_recorded(
    tmp_path: Path,
) -> None:
    db = tmp_path / "deskloop.db"
    with ray_cluster(tmp_path, {}) as cluster:  # a head alone: no node offers a desktop
        out = subprocess.run(
            [sys.executable, "-m", "app.cli", "--db", str(db), "batch", "run",
             "--task", "gimp-flip-export", "--agent", "null", "--ray", cluster.address],
            cwd=REPO, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert out.returncode != 0
    assert f"the Ray cluster at {cluster.address} offers no desktops" in out.stderr
    # No batch was listed for it (it was listed, with its slots, before).
    assert not db.exists()


def _streamed_worker(db: Path) -> int | None:
    """The Ray worker process of a running episode that has streamed a step back."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            row = conn.execute(
                "SELECT json_extract(config, '$.ray_worker_pid') FROM episodes e"
                " WHERE status = 'running' AND EXISTS"
                " (SELECT 1 FROM steps s WHERE s.episode_id = e.id) LIMIT 1"
            ).fetchone()
    except sqlite3.OperationalError:
        return None  # not created yet
    return None if row is None else int(row[0])


@pytest.mark.desktop
def test_a_ray_batch_survives_a_worker_node_killed_mid_batch(tmp_path: Path) -> None:
    task = write_xterm_task(tmp_path)
    script = tmp_path / "proof.yaml"
    script.write_text(SCRIPT)
    db = tmp_path / "driver" / "deskloop.db"
    with ray_cluster(tmp_path, {"node-a": 1, "node-b": 1}) as cluster:
        argv = [
            sys.executable, "-m", "app.cli", "--db", str(db), "batch", "run",
            "--task", str(task), "--agent", f"scripted:{script}", "--repeats", "5",
            "--batch-id", "on-ray", "--ray", cluster.address, "--retries", "3",
        ]  # fmt: skip
        log = (tmp_path / "driver.log").open("wb")
        driver = subprocess.Popen(argv, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 240
            # An episode is running on a node and has streamed its first steps back.
            while (worker := _streamed_worker(db)) is None:
                assert driver.poll() is None, (tmp_path / "driver.log").read_text()
                assert time.monotonic() < deadline, "no episode streamed back from the nodes"
                time.sleep(0.2)  # polling the driver's database, bounded above
            cluster.kill_node(cluster.node_of(worker))  # that node is lost mid-episode
            rc = driver.wait(timeout=300)
        finally:
            if driver.poll() is None:
                driver.kill()
                driver.wait()
        output = (tmp_path / "driver.log").read_text()
        assert rc == 0, output
        # The lost node's worker was SIGKILLed in its episode: its folder and its
        # desktop's session folder stayed. `desktops cleanup` removes them all.
        cleanup = subprocess.run(
            [sys.executable, "-m", "app.cli", "desktops", "cleanup"], cwd=REPO,
            env={**os.environ, "TMPDIR": str(cluster.tmpdir)}, capture_output=True,
            text=True, timeout=120, check=False,
        )  # fmt: skip
        assert cleanup.returncode == 0, cleanup.stdout + cleanup.stderr
        assert not sorted(p.name for p in cluster.tmpdir.glob("deskloop-*"))
    assert "episodes on the Ray cluster at 127.0.0.1:" in output
    # With the node lost, two tries at once had one desktop: one waited for it, said so
    # (it was counted as running before).
    assert " 1 waiting for a desktop · " in output, output
    with Store(db) as store:
        episodes = store.list_episodes(batch_id="on-ray", limit=None)
        finished = [e for e in episodes if e.status == "finished"]
        lost = [e for e in episodes if e.status == "error"]
        # Every slot finished exactly once, and passed.
        assert sorted(e.batch_repeat or 0 for e in finished) == [0, 1, 2, 3, 4]
        assert all(e.passed for e in finished)
        # The episode on the lost node is recorded as an infrastructure error, with
        # the steps it had streamed back...
        assert lost and all(e.error_kind == "interrupted" for e in lost), output
        assert all("Ray node" in (e.error or "") for e in lost)
        assert any(e.steps >= 1 and len(store.steps(e.id)) == e.steps for e in lost)
        # ...and its slot was run again elsewhere: a later attempt finished.
        for e in lost:
            again = [f for f in finished if f.batch_repeat == e.batch_repeat]
            assert again and again[0].batch_attempt is not None
            assert e.batch_attempt is not None and again[0].batch_attempt > e.batch_attempt
        # What came back is whole: steps with their frames, the final frame, the
        # checks, the setup, and the node that ran it.
        for e in finished:
            steps = store.steps(e.id)
            assert [s.kind for s in steps] == ["type", "key", "wait", "done"]
            assert all(s.frame and store.frame_path(s.frame).is_file() for s in steps)
            assert e.final_frame and store.frame_path(e.final_frame).is_file()
            assert [c.passed for c in store.checks(e.id)] == [True]
            assert e.setup is not None and not e.setup["failed"]
            assert e.config["ray_node"]
            assert e.pid != 0 and e.hostname


@pytest.mark.desktop
def test_a_ray_batch_whose_driver_was_killed_resumes_to_every_slot_once(
    tmp_path: Path,
) -> None:
    task = write_xterm_task(tmp_path)
    script = tmp_path / "proof.yaml"
    script.write_text(SCRIPT)
    db = tmp_path / "driver" / "deskloop.db"
    with ray_cluster(tmp_path, {"node-a": 2}) as cluster:
        argv = [
            sys.executable, "-m", "app.cli", "--db", str(db), "batch", "run",
            "--task", str(task), "--agent", f"scripted:{script}", "--repeats", "4",
            "--batch-id", "resumed", "--ray", cluster.address,
        ]  # fmt: skip
        with (tmp_path / "first.log").open("wb") as log:
            driver = subprocess.Popen(argv, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 240
            while _streamed_worker(db) is None:
                assert driver.poll() is None, (tmp_path / "first.log").read_text()
                assert time.monotonic() < deadline, "no episode streamed back from the node"
                time.sleep(0.2)  # polling the driver's database, bounded above
        finally:
            driver.kill()  # the driver dies mid-batch, its episodes half streamed
            driver.wait()
        resume = [
            sys.executable, "-m", "app.cli", "--db", str(db), "batch", "run",
            "--resume", "resumed", "--ray", cluster.address,
        ]  # fmt: skip
        out = subprocess.run(resume, cwd=REPO, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stdout + out.stderr
    with Store(db) as store:
        episodes = store.list_episodes(batch_id="resumed", limit=None)
        finished = [e for e in episodes if e.status == "finished"]
        assert sorted(e.batch_repeat or 0 for e in finished) == [0, 1, 2, 3]
        assert all(e.passed for e in finished)
        # The driver's half-streamed episodes were marked when the database reopened.
        interrupted = [e for e in episodes if e.status == "error"]
        assert interrupted and all(e.error_kind == "interrupted" for e in interrupted)
        assert not [e for e in episodes if e.status == "running"]


def test_a_place_on_a_node_is_freed_when_its_holder_dies_and_leaves_no_file(
    tmp_path: Path,
) -> None:
    from app.batch.ray_nodes import _claim_place

    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom app.batch.ray_nodes import _claim_place\n"
         "with _claim_place() as place:\n    print(place, flush=True)\n    time.sleep(600)"],
        cwd=REPO, stdout=subprocess.PIPE, text=True, env={**os.environ, "TMPDIR": str(tmp_path)},
    )  # fmt: skip
    try:
        assert holder.stdout is not None
        held = int(holder.stdout.readline())
        with _claim_place() as mine:
            assert mine != held
    finally:
        holder.kill()
        holder.wait()
    with _claim_place() as first, _claim_place() as second:
        assert (first, second) == (0, 1)  # the killed holder's place is free again
    assert not list(tmp_path.iterdir())
