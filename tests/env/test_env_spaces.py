"""The Gymnasium side of `app.env` without a desktop: the spaces, the action form
that lies in them, and the registered ids (tests/env/test_env_checker.py runs the env)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pytest

from app.core.actions import (
    KINDS,
    Action,
    Ask,
    Click,
    Done,
    Drag,
    Fail,
    Key,
    Move,
    Scroll,
    Type,
    Wait,
    parse_action,
)
from app.core.errors import ActionError
from app.env import DeskLoopEnv, env_id, from_space, register_tasks, to_space
from app.env.registration import LIBRARY
from app.env.spaces import action_space
from tests.xterm_task import write_xterm_task

ACTIONS: list[Action] = [
    Click(10, 20),
    Click(639, 399, "right", 2),
    Move(0, 0),
    Drag(1, 2, 300, 200, "middle"),
    Scroll(5, 6, -3),
    Type("touch ~/a.txt\n640×360, 25°"),
    Key("ctrl+shift+e"),
    Wait(1.5),
    Done(),
    Ask("Which size?"),
    Fail(""),
]


def test_spaces_follow_the_desktop_size_and_the_step_budget(tmp_path: Path) -> None:
    task = write_xterm_task(tmp_path, steps=7)
    with DeskLoopEnv(str(task), width=640, height=400) as env:
        screen = env.observation_space["screen"]
        assert isinstance(screen, gymnasium.spaces.Box)
        assert screen.shape == (400, 640, 3) and screen.dtype == np.uint8
        step = env.observation_space["step"]
        assert isinstance(step, gymnasium.spaces.Discrete) and step.n == 8
        point = env.action_space["point"]
        assert isinstance(point, gymnasium.spaces.MultiDiscrete)
        assert point.nvec.tolist() == [640, 400]
        assert env.render() is None  # nothing seen before the first reset
        obs: dict[str, Any] = {
            "screen": np.zeros((400, 640, 3), np.uint8),
            "instruction": "Render a 640×360 still, turning 360° (“one turn”).\n",
            "messages": (
                {"role": "user", "kind": "instruction", "text": "hi", "step": 0, "source": "task"},
            ),
            "step": 7,
        }
        assert env.observation_space.contains(obs)
        assert not env.observation_space.contains({**obs, "step": 8})
        assert not env.observation_space.contains({**obs, "messages": list(obs["messages"])})


@pytest.mark.parametrize("answer", [None, 2, "2", "blue", " padded", ["a", 1], {"n": 2}, "null"])
def test_a_done_answer_survives_the_text_field_exactly(answer: Any) -> None:
    form = to_space(Done(answer=answer))
    assert parse_action(from_space(form)) == Done(answer=answer)
    # What a policy writes by hand reads as a person's typed answer does.
    assert parse_action(from_space({**form, "text": "2"})) == Done(answer=2)
    assert parse_action(from_space({**form, "text": "a cat"})) == Done(answer="a cat")


@pytest.mark.parametrize("action", ACTIONS, ids=lambda a: type(a).__name__)
def test_each_action_has_a_form_in_the_space(action: Action) -> None:
    space = action_space(640, 400)
    form = to_space(action)
    assert space.contains(form)
    assert parse_action(from_space(form)) == action


def test_sampled_actions_execute_or_are_refused_with_a_reason() -> None:
    space = action_space(640, 400)
    space.seed(0)
    kinds = set()
    for _ in range(40):
        sample = space.sample()
        kinds.add(KINDS[sample["kind"]])
        try:
            action = parse_action(from_space(sample))
        except ActionError as exc:
            assert str(exc)
            continue
        assert to_space(action)["kind"] == sample["kind"]
    assert len(kinds) >= 8


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ({"kind": 42}, "kind must be 0..9"),
        ({"kind": 0}, "click needs the field 'point'"),
        ({"kind": 2, "point": [1, 2]}, "drag needs the field 'end'"),
        ({"kind": 0, "point": [1.5, 2]}, "point must be two integers"),
        ({"kind": 0, "point": [[1], [2, 3]]}, "point must be two integers"),
        ({"kind": 0, "point": [1, 2], "button": 3}, "button must be 0..2"),
        ({"kind": 0, "point": [1, 2], "zoom": 2}, "no field.* zoom"),
        ({"kind": 3, "point": [1, 2], "dy": 0}, "dy must not be 0"),
        ({"kind": 4, "text": 7}, "text must be a string"),
        ({"kind": 5, "text": "ctrl+nokey"}, "unknown key"),
        ({"kind": 6, "seconds": "soon"}, "seconds must be a number"),
    ],
)
def test_malformed_space_actions_name_the_problem(raw: dict[str, Any], reason: str) -> None:
    with pytest.raises(ActionError, match=reason):
        parse_action(from_space(raw, "env action"), "env action")


def test_every_library_task_is_a_gymnasium_id() -> None:
    files = sorted(LIBRARY.glob("*/*.yaml"))
    assert files
    for path in files:
        assert env_id(path.stem) in gymnasium.registry
    env = gymnasium.make("DeskLoop/gimp-flip-export-v0", width=1024, height=640)
    try:
        inner = env.unwrapped
        assert isinstance(inner, DeskLoopEnv) and inner.task.id == "gimp-flip-export"
        assert env.spec is not None and env.spec.nondeterministic
        assert inner.observation_space["screen"].shape == (640, 1024, 3)
        assert env.render_mode == "rgb_array"
    finally:
        env.close()


def test_a_misspelt_gymnasium_id_gets_did_you_mean() -> None:
    with pytest.raises(gymnasium.error.NameNotFound, match="Did you mean: `gimp-flip-export`"):
        gymnasium.make("DeskLoop/gimp-flip-exprot-v0")


def test_registering_a_folder_again_changes_nothing(tmp_path: Path) -> None:
    # Its own name (registration reads only file names): tests/env/test_env_checker.py
    # registers xterm-proof from another folder, and Gymnasium would warn of the override.
    task = write_xterm_task(tmp_path).rename(tmp_path / "tasks/gimp/xterm-registered.yaml")
    assert register_tasks(tmp_path / "tasks") == ["DeskLoop/xterm-registered-v0"]
    spec = gymnasium.spec("DeskLoop/xterm-registered-v0")
    assert spec.kwargs == {"task": str(task.resolve())}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Gymnasium warns when an id is overridden
        register_tasks(tmp_path / "tasks")
