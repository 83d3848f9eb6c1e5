"""The `judge` check on a real local desktop: the runner shows a local fake
OpenAI-compatible endpoint (tests/fake_openai.py) the desktop's final frame and a file
from the guest, records every prompt, image hash, model, temperature, seed and verdict,
reports the verdicts beside the state checks without changing the score, and answers a
rerun on the same file from the cache."""

from __future__ import annotations

import base64
import hashlib
import io
from pathlib import Path

import pytest
from PIL import Image

from app.agents.base import Observation
from app.cli import main
from app.core.actions import Action, Done, Type
from app.desktops.local.desktop import LocalDesktop
from app.episode.control import RunOptions
from app.episode.judge import JUDGE_CACHE, JudgeConfig
from app.episode.runner import EpisodeRunner
from app.store import Store
from app.tasks.loader import load_task
from app.tasks.model import Task
from app.users.simulated import SimulatedUser
from tests.fake_openai import FakeEndpoint, Received, text_reply
from tests.still_desktop import QuietAgent

pytestmark = pytest.mark.desktop

TASK = """\
id: judged-proof
app: gimp
level: L1
title: Make a proof file beside a poster
instruction: Create the file ~/proof.txt.
setup:
  - upload: {src: assets/poster.png, dest: ~/poster.png}
  - launch: [xterm]
  - wait_window: {class: XTerm, timeout: 60}
budget: {steps: 5, seconds: 120}
evaluate:
  all:
    - {check: file_exists, path: ~/proof.txt}
    - {check: judge, rubric: "A terminal shows that ~/proof.txt was created."}
    - check: judge
      rubric: The poster is a red square.
      frame: false
      files: [~/poster.png]
"""
FRAME_VERDICT = '{"pass": false, "score": 0.3, "reasons": "No sign of proof.txt on screen."}'
FILE_VERDICT = '{"pass": true, "score": 0.9, "reasons": "A red square fills the image."}'


class TouchAgent(QuietAgent):
    name = "touch"

    def __init__(self) -> None:
        self.answers: list[Action] = [Type("touch ~/proof.txt\n")]

    async def decide(self, observation: Observation) -> Action:
        return self.answers.pop(0) if self.answers else Done()


@pytest.fixture
def task(tmp_path: Path) -> Task:
    folder = tmp_path / "tasks" / "gimp"
    (folder / "assets").mkdir(parents=True)
    Image.new("RGB", (64, 48), (200, 30, 30)).save(folder / "assets" / "poster.png")
    path = folder / "judged-proof.yaml"
    path.write_text(TASK)
    return load_task(path)


async def run(task: Task, store: Store, base_url: str) -> int:
    judge = JudgeConfig(model="fake-vision-1", base_url=base_url, max_retries=0, deadline=30)
    async with LocalDesktop() as desktop:
        runner = EpisodeRunner(
            task,
            desktop,
            TouchAgent(),
            SimulatedUser(),
            store,
            backend="local",
            options=RunOptions(judge=judge),
        )
        result = await runner.run()
    assert result.status == "finished", result.error
    return result.episode_id


def sent_images(request: Received) -> list[bytes]:
    content = request.body["messages"][1]["content"]
    urls = [part["image_url"]["url"] for part in content if part["type"] == "image_url"]
    return [base64.b64decode(url.partition("base64,")[2]) for url in urls]


async def test_the_judge_sees_the_final_frame_and_a_file_and_is_reported_beside(
    task: Task, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = Store(tmp_path / "deskloop.db")
    with FakeEndpoint([text_reply(FRAME_VERDICT), text_reply(FILE_VERDICT)]) as endpoint:
        first = await run(task, store, endpoint.base_url)
        requests = list(endpoint.received)

    # The verdicts (one a failure) leave the state check's score alone.
    episode = store.get_episode(first)
    assert (episode.passed, episode.score) == (True, 1.0)
    checks = {c.path: c for c in store.checks(first)}
    frame_check, file_check = checks["evaluate.all[1]"], checks["evaluate.all[2]"]
    assert (frame_check.passed, frame_check.score, frame_check.required) == (False, 0.3, False)
    assert "No sign of proof.txt on screen." in frame_check.evidence
    assert (file_check.passed, file_check.score) == (True, 0.9)

    # What was shown: the real desktop's frame as a PNG of its screen, and the file's bytes.
    assert len(requests) == 2
    (frame_png,) = sent_images(requests[0])
    (poster_png,) = sent_images(requests[1])
    with Image.open(io.BytesIO(frame_png)) as shown:
        assert shown.size == (1280, 800)
        # The xterm the setup opened is on it: not a blank screen.
        assert len(shown.convert("L").getcolors(1 << 16) or []) > 2
    asset = (task.folder / "assets" / "poster.png").read_bytes()
    assert poster_png == asset

    # What was recorded: prompt (images as hashes), image hashes, model, sampling, verdict.
    frame_j, file_j = store.judgements(first)
    assert (frame_j.path, file_j.path) == ("evaluate.all[1]", "evaluate.all[2]")
    for j in (frame_j, file_j):
        assert (j.model, j.base_url, j.temperature, j.seed) == (
            "fake-vision-1",
            endpoint.base_url,
            0.0,
            0,
        )
        assert not j.cached and not j.counts and j.answer is not None
        assert "base64" not in str(j.prompt)
    assert [i.what for i in frame_j.images] == ["final frame"]
    assert frame_j.images[0].sha256 == hashlib.sha256(frame_png).hexdigest()
    assert file_j.images[0].sha256 == hashlib.sha256(asset).hexdigest()
    assert file_j.prompt[1]["content"][1] == {
        "type": "image",
        "sha256": hashlib.sha256(asset).hexdigest(),
        "what": "~/poster.png",
    }
    assert frame_j.verdict is not None and not frame_j.verdict.passed
    assert file_j.verdict is not None and file_j.verdict.reasons == "A red square fills the image."
    assert (tmp_path / JUDGE_CACHE).is_dir()
    store.close()
    assert main(["--db", str(tmp_path / "deskloop.db"), "episodes", "show", str(first)]) == 0
    printed = capsys.readouterr().out
    assert "judge (beside: does not decide)" in printed
    assert f"image ~/poster.png: sha256 {file_j.images[0].sha256}" in printed
    assert "fail 0.30: No sign of proof.txt on screen." in printed
    store = Store(tmp_path / "deskloop.db")

    # A rerun: the same file is answered from the cache, with the same verdict; only a
    # frame that differs from the first run's is asked again.
    with FakeEndpoint([text_reply(FRAME_VERDICT)]) as endpoint:
        second = await run(task, store, endpoint.base_url)
        asked = len(endpoint.received)
    frame_again, file_again = store.judgements(second)
    assert file_again.cached and file_again.verdict == file_j.verdict
    assert file_again.request_key == file_j.request_key
    assert asked == (0 if frame_again.cached else 1)
    assert frame_again.cached == (frame_again.images[0].sha256 == frame_j.images[0].sha256)
