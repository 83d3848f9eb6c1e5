"""`deskloop study run` as a researcher runs it, in its own process: it prints the
view's address, the participant's browser (here httpx) gets the consent page through
it, and a participant who declines ends the session with nothing recorded; Ctrl-C
stops it as an interrupted run. No desktop starts before consent."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.cli import main
from app.store import Store
from tests.studies.helpers import write_study
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
TASK = """\
id: t1
app: gimp
level: L1
title: One
instruction: Do one thing.
budget: {steps: 5, seconds: 60}
evaluate: {check: file_exists, path: ~/one}
"""


@pytest.fixture
def planned(tmp_path: Path) -> tuple[Path, Path, Path]:
    tasks = tmp_path / "tasks" / "gimp"
    tasks.mkdir(parents=True)
    (tasks / "t1.yaml").write_text(TASK)
    study = write_study(
        tmp_path / "studies",
        conditions=[{"id": "asks", "agent": "null"}],
        tasks={"blocks": [["t1"]]},
    )
    db = tmp_path / "db.sqlite"
    argv = ["--db", str(db), "--tasks-dir", str(tmp_path / "tasks")]
    assert main([*argv, "study", "plan", str(study), "--participants", "1", "--seed", "2"]) == 0
    return study, db, tmp_path / "tasks"


@pytest.fixture
def running(planned: tuple[Path, Path, Path]) -> Iterator[tuple[subprocess.Popen[str], str]]:
    study, db, tasks = planned
    argv = [sys.executable, "-m", "app", "--db", str(db), "--tasks-dir", str(tasks)]
    argv += ["study", "run", str(study), "--participant", "P01", "--no-browser"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("DISPLAY", None)
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        first = process.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+/\?t=\S+", first)
        assert found, first + (process.stderr.read() if process.poll() is not None else "")
        yield process, found.group(0)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(30)


def test_the_printed_address_opens_the_consent_and_a_decline_records_nothing(
    running: tuple[subprocess.Popen[str], str], planned: tuple[Path, Path, Path]
) -> None:
    process, url = running
    with httpx.Client() as browser:
        assert browser.get(url.split("?")[0]).status_code == 403  # without the token
        assert browser.get(url, follow_redirects=True).status_code == 200
        state: dict[str, object] = {}

        def consent_shown() -> bool:
            state.update(browser.get(url.split("?")[0] + "api/state").json())
            return state["page"] == "consent"

        wait_until(consent_shown, "the consent page")
        assert "You may stop at any time" in str(state["html"])
        answer = {"number": state["number"], "do": "consent", "agree": False}
        assert browser.post(url.split("?")[0] + "api/act", json=answer).status_code == 200
    out, _ = process.communicate(timeout=60)
    assert process.returncode == 0 and "P01 did not consent: nothing was recorded" in out
    _, db, _ = planned
    with Store(db) as store:
        assert store.studies.participant("study", "P01").consented_at is None


def test_ctrl_c_stops_the_session(running: tuple[subprocess.Popen[str], str]) -> None:
    process, _ = running
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
