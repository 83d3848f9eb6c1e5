"""Re-scoring phase checks and judges from the archive.

A real episode runner on a desktop with a still screen and a guest over a plain
folder (what is under test is the archive, not a GUI): the agent says done, the
user's follow-up (a phase with its own checks and a judge) is delivered and scored
on the state then, the agent changes the file and says done again. The archive
keeps the phase's reads apart from the final ones and the frame each judge saw; a
rescore re-runs the phase's checks on what its delivery read and asks the judge
about the archived frame: an unchanged question from the cache (the endpoint, a
real local HTTP server, is not asked), a changed rubric anew, with the same frame.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
from pathlib import Path

import pytest

from app.agents.base import Observation
from app.cli import main
from app.core.actions import Action, Done
from app.desktops.local.guest import LocalGuest
from app.episode.archive import rescore
from app.episode.control import RunOptions
from app.episode.judge import JudgeConfig
from app.episode.runner import EpisodeRunner
from app.store import Store
from app.tasks.loader import load_task
from app.users.simulated import SimulatedUser
from tests.fake_openai import FakeEndpoint, text_reply
from tests.still_desktop import QuietAgent, StillDesktop

TASK = """\
id: notes-followup
app: gimp
level: L1
title: A note, then a follow-up
instruction: Write the draft in ~/notes.txt.
setup: []
phases:
  - message: Now make it the final version.
    trigger: agent_done
    kind: feedback
    checks:
      all:
        - {check: text_file, path: ~/notes.txt, contains: [draft]}
        - {check: judge, rubric: "PHASE_RUBRIC"}
evaluate:
  all:
    - {check: text_file, path: ~/notes.txt, contains: [final]}
    - {check: judge, rubric: "The screen is calm."}
"""


class FolderDesktop(StillDesktop):
    """A still screen whose guest is a folder (its files are what checks read)."""

    def __init__(self, tmp_path: Path) -> None:
        home = tmp_path / "home"
        home.mkdir()
        (tmp_path / "logs").mkdir()
        env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
        env.update(HOME=str(home), TMPDIR=str(home))
        self.home = home
        self.guest = LocalGuest(home, env, tmp_path / "logs", sandbox=None)  # type: ignore[assignment]


class Writer(QuietAgent):
    """Writes the draft, says done; after the follow-up, writes the final version."""

    name = "writer"

    def __init__(self, home: Path) -> None:
        self.home = home
        self.turn = 0

    async def decide(self, observation: Observation) -> Action:
        self.turn += 1
        text = "the draft\n" if self.turn == 1 else "the final version\n"
        (self.home / "notes.txt").write_text(text)
        return Done()


def write_task(tmp_path: Path, phase_rubric: str, phase_word: str = "draft") -> Path:
    path = tmp_path / "tasks" / "gimp" / "notes-followup.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = TASK.replace("PHASE_RUBRIC", phase_rubric)
    path.write_text(text.replace("contains: [draft]", f"contains: [{phase_word}]"))
    return path


VERDICT = '{"pass": true, "score": 1.0, "reasons": "Calm."}'


def test_phase_checks_and_judges_are_rescored_from_the_archive(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Synchronous: the command line at the end runs its own event loop.
    with FakeEndpoint([text_reply(VERDICT)] * 3) as endpoint:
        episode = asyncio.run(episode_and_rescores(tmp_path, endpoint))
        db = str(tmp_path / "lab.db")
        # The command line: the episode's own judge, from the cache; the task file
        # is the stricter one now.
        assert main(["--db", db, "score", str(episode), "--rescore"]) == 0
        out = capsys.readouterr().out
        assert "phase 1 phases[0].checks.all[0] text_file: PASS 1.00 -> FAIL 0.00" in out
        assert "phase 1: score 0.00 · passed no" in out
        assert main(["--db", db, "score", str(episode)]) == 0
        out = capsys.readouterr().out
        assert "judge: 2 question(s), 0 asked anew, 2 from the cache" in out
        assert len(endpoint.received) == 3


async def episode_and_rescores(tmp_path: Path, endpoint: FakeEndpoint) -> int:
    path = write_task(tmp_path, "A draft is on screen.")
    desktop = FolderDesktop(tmp_path)
    with Store(tmp_path / "lab.db") as store:
        config = JudgeConfig(model="fake-vision-1", base_url=endpoint.base_url)
        runner = EpisodeRunner(
            load_task(path),
            desktop,
            Writer(desktop.home),
            SimulatedUser(),
            store,
            backend="local",
            options=RunOptions(judge=config),
        )
        result = await runner.run()
        assert result.status == "finished" and result.passed, result
        assert len(endpoint.received) == 2  # the phase's judge, then the final one
        episode = result.episode_id
        archive = store.get_archive(episode)
        assert archive is not None
        manifest = archive.manifest
        # The phase's read is the draft, the final one the final version.
        phase_blob = manifest["phases"]["0"]["files"]["~/notes.txt"]["blob"]
        final_blob = manifest["files"]["~/notes.txt"]["blob"]
        assert store.read_blob(phase_blob) == b"the draft\n"
        assert store.read_blob(final_blob) == b"the final version\n"
        frame = store.read_blob(manifest["frame"]["blob"])
        assert manifest["phases"]["0"]["frame"]["blob"] == manifest["frame"]["blob"]
        original = store.judgements(episode)
        assert [j.phase for j in original] == [0, None]
        assert all(j.images[0].sha256 == hashlib.sha256(frame).hexdigest() for j in original)

        # Unchanged: the same scores, every judge answered from the cache.
        same = await rescore(store, episode, load_task(path))
        assert len(endpoint.received) == 2
        assert same.result.passed and same.phases[0].passed and not same.not_rescored
        (again,) = store.rescores(episode)
        assert again.phases == {0: (True, 1.0)}
        assert [(j.phase, j.cached) for j in again.judgements] == [(None, True), (0, True)]
        assert [j.request_key for j in again.judgements] == [
            original[1].request_key,
            original[0].request_key,
        ]
        phase_rows = [c for c in again.checks if c.phase == 0]
        assert [c.name for c in phase_rows] == ["text_file", "judge"]
        assert "cached answer" in phase_rows[1].evidence

        # The phase's check made stricter and its rubric changed: the phase fails on
        # what its delivery read, the final score stands, and the judge is asked anew
        # about the archived frame.
        changed = write_task(tmp_path, "A draft is on screen, centred.", "draft v2")
        stricter = await rescore(store, episode, load_task(changed))
        assert stricter.result.passed and not stricter.phases[0].passed
        assert len(endpoint.received) == 3
        image = endpoint.received[2].body["messages"][1]["content"][1]["image_url"]["url"]
        assert base64.b64decode(image.split(",", 1)[1]) == frame
        latest = store.rescores(episode)[-1]
        assert latest.phases == {0: (False, 0.0)}
        assert [(j.phase, j.cached) for j in latest.judgements] == [(None, True), (0, False)]
        # The original phase result is untouched.
        assert [c.passed for c in store.checks(episode) if c.phase == 0] == [True, True]
    assert json.loads(json.dumps(manifest))  # plain JSON throughout
    return episode
