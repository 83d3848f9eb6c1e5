"""A scripted agent's `oracle` steps on a real local desktop: the program it runs in the
guest (over DeskLoop's own channel, which no desktop watch traces) is in the next
step's record and in the episode's integrity flags, so an oracle's end state is never
taken for a GUI solution."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agents.factory import make_agent
from app.core.integrity import ORACLE_INFO
from app.desktops.local.desktop import LocalDesktop
from app.episode.runner import EpisodeRunner
from app.store import Store
from app.tasks.loader import load_task
from app.users.simulated import SimulatedUser
from tests.episode_story import episode_story
from tests.xterm_task import write_xterm_task

pytestmark = pytest.mark.desktop

ORACLE = """\
kind: oracle
steps:
  - oracle: [touch, ~/proof.txt]
  - done
"""


async def test_an_oracle_step_is_recorded_and_flagged(tmp_path: Path) -> None:
    task = load_task(write_xterm_task(tmp_path))
    script = tmp_path / "oracle.yaml"
    script.write_text(ORACLE)
    with Store(tmp_path / "db.sqlite") as store:
        async with LocalDesktop() as desktop:
            agent = make_agent(f"scripted:{script}", task)
            runner = EpisodeRunner(task, desktop, agent, SimulatedUser(), store, backend="local")
            result = await runner.run()
        story = episode_story(store, result)
        assert result.passed is True, story  # the flag never changes the score
        (done,) = store.steps(result.episode_id)
        assert done.kind == "done"
        assert done.agent_info == {ORACLE_INFO: ["touch '~/proof.txt' (exit 0)"]}, story
        flags, checked = store.flags(result.episode_id)
        ran = [f for f in flags if "ran 1 program(s) in the guest itself" in f.summary]
        assert len(ran) == 1 and ran[0].kind == "process", story
        assert ran[0].evidence == ("step 0: touch '~/proof.txt' (exit 0)",)
        assert (
            checked is not None and "programs the agent ran itself: 1 (as it recorded)" in checked
        )
