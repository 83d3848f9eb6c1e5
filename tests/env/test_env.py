"""The Gymnasium-style environment on a real local desktop: observations with the
conversation, phases delivered by triggers, rejected actions, reward at the end,
episodes recorded, a reset in mid-episode recorded as aborted."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from app.core.actions import Done
from app.core.errors import DeskLoopError, TaskError
from app.env import DeskLoopEnv, make
from app.store import Store
from app.tasks.loader import load_task

pytestmark = pytest.mark.desktop

TASK = """\
id: xterm-two-files
app: gimp
level: L2
title: Make two proof files
instruction: Create the file ~/one.txt.
setup:
  - launch: [xterm]
  - wait_window: {class: XTerm, timeout: 60}
phases:
  - message: Also create ~/two.txt.
    trigger: agent_done
budget: {steps: 12, seconds: 300}
evaluate:
  all:
    - {check: file_exists, path: ~/one.txt}
    - {check: file_exists, path: ~/two.txt}
"""


def test_episodes_through_reset_and_step(tmp_path: Path) -> None:
    folder = tmp_path / "tasks" / "gimp"
    folder.mkdir(parents=True)
    (folder / "xterm-two-files.yaml").write_text(textwrap.dedent(TASK))
    task = load_task(folder / "xterm-two-files.yaml")
    db = tmp_path / "db.sqlite"
    with DeskLoopEnv(task, store=db) as env:
        obs, info = env.reset(seed=7)
        assert info["seed"] == 7 and info["episode_id"] is not None
        assert obs["screen"].shape == (800, 1280, 3) and obs["screen"].dtype == np.uint8
        assert obs["instruction"] == "Create the file ~/one.txt." and obs["step"] == 0
        assert env.observation_space.contains(obs)
        first_episode = info["episode_id"]

        obs, reward, terminated, truncated, info = env.step({"type": "touch ~/one.txt\n"})
        assert (reward, terminated, truncated) == (0.0, False, False) and obs["step"] == 1
        assert "rejected" not in info

        obs, reward, terminated, truncated, info = env.step({"click": "nowhere"})
        assert not terminated and "rejected" in info and obs["step"] == 2

        # DONE fires the phase: the user's new message is in the observation.
        obs, reward, terminated, truncated, info = env.step("done")
        assert (reward, terminated, truncated) == (0.0, False, False)
        assert obs["instruction"] == "Also create ~/two.txt."
        assert [m["kind"] for m in obs["messages"]] == ["instruction", "done", "feedback"]
        assert env.observation_space.contains(obs)

        env.step({"kind": "type", "text": "touch ~/two.txt\n"})
        obs, reward, terminated, truncated, info = env.step(Done())
        assert (reward, terminated, truncated) == (1.0, True, False)
        assert info["passed"] is True and info["end_reason"] == "done"
        with pytest.raises(DeskLoopError, match="reset"):
            env.step("done")

        # A second episode on the same desktop; a reset mid-episode aborts it.
        _, info = env.reset()
        aborted_episode = info["episode_id"]
        env.step({"type": "touch ~/one.txt\n"})
        _, info = env.reset()
        env.step("done")
        obs, reward, terminated, truncated, info = env.step("done")
        assert (reward, terminated) == (0.0, True) and info["passed"] is False
        assert env.render() is not None
        last_episode = info["episode_id"]

    with pytest.raises(DeskLoopError, match="closed"):
        env.reset()

    with Store(db) as store:
        assert store.get_episode(first_episode).passed is True
        assert store.get_episode(first_episode).agent == "env"
        assert [s.kind for s in store.steps(first_episode)] == [
            "type",
            "rejected",
            "done",
            "type",
            "done",
        ]
        aborted = store.get_episode(aborted_episode)
        assert aborted.status == "error" and "aborted" in (aborted.error or "")
        assert store.get_episode(last_episode).score == 0.0


def test_unknown_task_ids_get_did_you_mean() -> None:
    with pytest.raises(TaskError, match="did you mean gimp-flip-export"):
        make("gimp-flip-exprot")
