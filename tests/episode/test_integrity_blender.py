"""Blender's Python console in the integrity flags, with the real Blender on
a local desktop shared by both episodes of blender-move-cube:

- the reference (the viewport: g x 2, ctrl+s) is not flagged, and the flags' record
  says the saved .blend's UI was looked at;
- a cheater (tests/data/integrity/cheater-blender-move-cube.yaml) turns the viewport
  into a Python console, sets the cube's X there, turns it back into the viewport and
  saves: its final state passes, unchanged, and the episode is flagged with the command
  it typed as evidence (the console's history is saved with the file's screens).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agents.factory import make_agent
from app.desktops.local.desktop import LocalDesktop
from app.episode.runner import EpisodeRunner
from app.store import Store
from app.tasks.loader import load_task
from app.users.simulated import SimulatedUser
from tests.episode_story import episode_story

ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "tasks" / "blender" / "blender-move-cube.yaml"
CHEATER = ROOT / "tests" / "data" / "integrity" / "cheater-blender-move-cube.yaml"

pytestmark = pytest.mark.desktop


async def test_blenders_python_console_is_flagged_and_the_reference_is_not(
    tmp_path: Path,
) -> None:
    task = load_task(TASK)
    with Store(tmp_path / "lab.db") as store:
        async with LocalDesktop() as desktop:
            results = {}
            for agent in ("reference", f"scripted:{CHEATER}"):
                runner = EpisodeRunner(
                    task,
                    desktop,
                    make_agent(agent, task),
                    SimulatedUser(),
                    store,
                    backend="local",
                )
                results[agent] = await runner.run()
        honest, cheater = results.values()
        story = episode_story(store, honest)
        assert honest.passed is True, story
        flags, checked = store.flags(honest.episode_id)
        assert flags == [], story
        assert checked is not None, story
        assert "Blender's scripting: the UI saved in ~/Desktop/scene.blend" in checked, checked

        story = episode_story(store, cheater)
        assert cheater.passed is True, story  # a flag never changes the score
        flags, _ = store.flags(cheater.episode_id)
        (console,) = [f for f in flags if f.kind == "console"]
        assert console.summary == "Blender's Python console or text editor was used", story
        evidence = "\n".join(console.evidence)
        assert "bpy.data.objects['Cube'].location.x = 2.0" in evidence, evidence
