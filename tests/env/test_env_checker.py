"""`app.env` is a Gymnasium environment on a real local desktop: Gymnasium's own
`check_env` passes with no warning, and actions in the space's form run, or are
rejected steps, up to the state-based reward. One env (an xterm task registered as
``DeskLoop/xterm-proof-v0``) serves the module."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from app.core.actions import KINDS, Done, Type
from app.env import DeskLoopEnv, register_tasks, to_space
from app.store import Store
from tests.xterm_task import write_xterm_task

pytestmark = pytest.mark.desktop


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("env-checker") / "db.sqlite"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory, db: Path) -> Iterator[gymnasium.Env[Any, Any]]:
    root = tmp_path_factory.mktemp("env-tasks")
    write_xterm_task(root, steps=6, seconds=300)
    assert register_tasks(root / "tasks") == ["DeskLoop/xterm-proof-v0"]
    made = gymnasium.make("DeskLoop/xterm-proof-v0", store=str(db))
    yield made
    made.close()


def test_gymnasium_check_env_passes_without_warnings(env: gymnasium.Env[Any, Any]) -> None:
    inner = env.unwrapped
    assert isinstance(inner, DeskLoopEnv)
    # Seeded, so the one unseeded sample check_env steps with is always the same.
    inner.action_space.seed(0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # Also makes two more envs from the spec: one to render, one to close twice.
        check_env(inner)
    said = [str(w.message) for w in caught if "WARN" in str(w.message)]
    assert said == []


def test_space_actions_run_and_invalid_ones_are_penalty_steps(
    env: gymnasium.Env[Any, Any], db: Path
) -> None:
    obs, info = env.reset(seed=3)
    assert obs in env.observation_space and info["seed"] == 3
    scroll = {**to_space(Done()), "kind": KINDS.index("scroll"), "dy": 0}
    assert scroll in env.action_space

    obs, reward, terminated, truncated, info = env.step(scroll)
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert "dy must not be 0" in info["rejected"] and obs["step"] == 1

    obs, reward, terminated, truncated, info = env.step(to_space(Type("touch ~/proof.txt\n")))
    assert (reward, terminated, truncated) == (0.0, False, False) and "rejected" not in info
    frame = env.render()
    assert isinstance(frame, np.ndarray) and frame.shape == obs["screen"].shape

    obs, reward, terminated, truncated, info = env.step(to_space(Done()))
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert obs in env.observation_space and obs["step"] == 3
    with Store(db) as store:
        kinds = [step.kind for step in store.steps(info["episode_id"])]
    assert kinds == ["rejected", "type", "done"]


def test_the_step_budget_truncates(env: gymnasium.Env[Any, Any]) -> None:
    env.reset()
    wait = {**to_space(Done()), "kind": KINDS.index("wait")}  # seconds 0
    results = [env.step(wait) for _ in range(6)]
    assert [r[2:4] for r in results] == [(False, False)] * 5 + [(False, True)]
    obs, reward, _, _, info = results[-1]
    assert reward == 0.0 and info["end_reason"] == "step_budget"
    assert obs in env.observation_space
