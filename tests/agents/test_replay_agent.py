"""`--agent replay:EPISODE` on real desktops: an episode recorded on one desktop plays
back on a fresh one and scores as it did; a recorded screen that the replay never sees
is reported as the first step where the screen diverged."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from app.agents.factory import make_agent
from app.agents.replay import ReplayAgent, difference
from app.agents.scripted import ScriptedAgent
from app.core.errors import AgentError
from app.desktops.local.desktop import LocalDesktop
from app.episode.runner import EpisodeRunner
from app.store import Store
from app.tasks.loader import load_task
from app.users.simulated import SimulatedUser
from tests.xterm_task import write_xterm_task

SCRIPT = """\
kind: demonstration
steps:
  - type: "touch ~/proof.txt\\n"
  - wait_for: {file: ~/proof.txt, timeout: 60}
  - key: ctrl+l
  - done
"""


def test_difference_counts_changed_pixels() -> None:
    a = np.zeros((10, 10, 3), np.uint8)
    b = a.copy()
    b[:2, :5] = 255  # 10 of 100 pixels
    b[5, 5] = 20  # below the tolerance
    assert difference(a, b) == 0.1
    assert difference(a, np.zeros((5, 5, 3), np.uint8)) == 1.0


@pytest.mark.desktop
async def test_a_recorded_episode_replays_and_reports_where_the_screen_diverged(
    tmp_path: Path,
) -> None:
    task = load_task(write_xterm_task(tmp_path, steps=10, seconds=180))
    script = tmp_path / "proof.yaml"
    script.write_text(textwrap.dedent(SCRIPT))
    with Store(tmp_path / "db.sqlite") as store:
        async with LocalDesktop(name="recorded") as desktop:
            recorded = await EpisodeRunner(
                task,
                desktop,
                ScriptedAgent.from_file(script),
                SimulatedUser(),
                store,
                backend="local",
            ).run()
        assert recorded.passed
        with pytest.raises(AgentError, match="is of task xterm-proof, not gimp-flip-export"):
            make_agent(
                f"replay:{recorded.episode_id}",
                load_task(Path("tasks/gimp/gimp-flip-export.yaml")),
                store=store,
            )

        results = []
        infos: list[list[dict[str, Any]]] = []
        for tamper in (False, True):
            if tamper:
                # The screen before the recorded ctrl+l as the replay will never see it.
                steps = store.steps(recorded.episode_id)
                frame = store.frame_path(steps[1].frame or "")
                Image.new("RGB", Image.open(frame).size, (255, 255, 255)).save(frame)
            agent = make_agent(f"replay:{recorded.episode_id}", task, store=store)
            assert isinstance(agent, ReplayAgent)
            agent.wait = 1.0
            async with LocalDesktop(name="replayed") as desktop:
                result = await EpisodeRunner(
                    task, desktop, agent, SimulatedUser(), store, backend="local"
                ).run()
            results.append(result)
            infos.append([s.agent_info or {} for s in store.steps(result.episode_id)])
        record = store.get_episode(results[0].episode_id)
    clean, tampered = results
    assert clean.passed and clean.steps == recorded.steps
    assert record.agent == f"replay:{recorded.episode_id}"
    assert record.config["agent_config"]["replay_of"] == recorded.episode_id
    assert [i["diverged"] for i in infos[0]] == [False, False, False]
    assert infos[0][-1]["first_divergence"] is None
    assert tampered.passed  # the actions were taken all the same
    assert [i["diverged"] for i in infos[1]] == [False, True, False]
    assert infos[1][-1]["first_divergence"] == 1 and infos[1][1]["screen_difference"] > 0.5


def test_episodes_show_names_a_diverged_step() -> None:
    from app.cli.episodes_cmd import _agent_note

    info = {"diverged": True, "recorded_step": 3, "screen_difference": 0.42}
    assert _agent_note(info) == ", screen diverged from recorded step 3 (42% of pixels)"
    assert _agent_note({"diverged": False, "recorded_step": 3}) == ""
