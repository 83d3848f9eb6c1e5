"""The scripted agent's anchor guard on a real desktop: it waits until the screen shows
the recorded region, and FAILs naming the step and how much agreed when it never does."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from app.agents.anchors import cut_anchor
from app.agents.base import AgentContext, GuestProbe, Observation
from app.agents.reference_script import load_script
from app.agents.scripted import ScriptedAgent
from app.core.actions import Done, Fail
from app.desktops.local.desktop import LocalDesktop
from app.desktops.xwindows import wait_window
from app.episode.protocol import Protocol

pytestmark = pytest.mark.desktop

XTERM = [
    "xterm",
    "-xrm",
    "*allowTitleOps: false",
    "-geometry",
    "40x10+60+60",
    "-title",
    "anchor-term",
    "-e",
    "sh",
    "-c",
    "echo ANCHOR; exec sleep 600",
]


async def observation(desktop: LocalDesktop) -> Observation:
    protocol = Protocol("Do it.", [], max_steps=10, max_seconds=60)
    return Observation(
        await desktop.frame(), protocol.active_message, tuple(protocol.conversation), 0
    )


def write_script(folder: Path, pixels: np.ndarray, at: tuple[int, int], timeout: float) -> Path:
    (folder / "anchors").mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels).save(folder / "anchors" / "001.png")
    script = folder / "ref.yaml"
    script.write_text(
        "steps:\n"
        f"  - wait_for: {{anchor: {{image: anchors/001.png, at: [{at[0]}, {at[1]}]}}, "
        f"timeout: {timeout}}}\n"
        "  - done\n"
    )
    return script


async def test_the_guard_waits_for_the_region_to_appear(tmp_path: Path) -> None:
    async with LocalDesktop() as desktop:
        await desktop.guest.launch(XTERM)
        await wait_window(desktop.guest, name="anchor-term", timeout=60)
        await desktop.settle(timeout=5, quiet=0.5)
        cut, left, top = cut_anchor((await desktop.frame()).pixels, 100, 75, half=24)
        assert cut.std() > 0  # the cut shows the xterm, not an empty screen
        script = write_script(tmp_path, cut, (left, top), timeout=60)
        await desktop.guest.run(["pkill", "-f", "anchor-term"])
        await desktop.settle(timeout=5, quiet=0.5)

        agent = ScriptedAgent(load_script(script))
        await agent.start(AgentContext("t", desktop.width, desktop.height, GuestProbe(desktop)))
        decision = asyncio.create_task(agent.decide(await observation(desktop)))
        await asyncio.sleep(0)
        assert not decision.done()  # the region is not on the screen yet
        await desktop.guest.launch(XTERM)
        assert await asyncio.wait_for(decision, 60) == Done()


async def test_a_region_that_never_appears_fails_naming_the_step(tmp_path: Path) -> None:
    async with LocalDesktop() as desktop:
        await desktop.settle(timeout=5, quiet=0.5)
        white = np.full((32, 32, 3), 255, np.uint8)
        script = write_script(tmp_path, white, (10, 10), timeout=1)
        agent = ScriptedAgent(load_script(script))
        await agent.start(AgentContext("t", desktop.width, desktop.height, GuestProbe(desktop)))
        started = time.monotonic()
        decision = await agent.decide(await observation(desktop))
        assert isinstance(decision, Fail)
        assert f"{script}: steps[0]: wait_for anchor 'anchors/001.png' timed out" in decision.reason
        assert "0% of its pixels agreed, 90% needed" in decision.reason
        assert time.monotonic() - started < 10


async def test_a_missed_anchor_keeps_the_recorded_and_live_regions_with_the_episode(
    tmp_path: Path,
) -> None:
    from app.episode.launch import launch
    from app.store import Store
    from app.tasks.loader import load_task

    folder = tmp_path / "tasks" / "gimp"
    folder.mkdir(parents=True)
    write_script(folder / "references", np.full((32, 32, 3), 255, np.uint8), (10, 10), 1)
    (folder / "missed.yaml").write_text(
        "id: missed\napp: gimp\nlevel: L1\ntitle: t\ninstruction: i\n"
        "evaluate: {check: file_exists, path: ~/x}\nreference: references/ref.yaml\n"
    )
    task = load_task(folder / "missed.yaml")
    with Store(tmp_path / "db.sqlite") as store:
        from app.agents.factory import make_agent

        result = await launch(
            task, store, backend="local", agent=make_agent("reference", task)
        ).run()
        (step,) = store.steps(result.episode_id)
    assert step.kind == "fail"
    reason = step.description
    assert "timed out" in reason and "kept the recorded region" in reason, reason
    names = [p.strip() for p in reason.split("difference: ")[1].split(",")]
    assert [Path(n).stem for n in names] == [
        "anchor-0-recorded",
        "anchor-0-live",
        "anchor-0-difference",
    ]
    recorded, live, diff = (Image.open(tmp_path / n) for n in names)
    assert recorded.size == live.size == diff.size == (32, 32)
    assert np.asarray(recorded.convert("RGB")).min() == 255  # the anchor as recorded
