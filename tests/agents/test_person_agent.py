"""A person as the agent: a VNC viewer (our own RFB client) drives a real desktop
through the recording proxy; the input reaches the desktop live and is recorded
as protocol actions, one step each, with DONE given as a command."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from app.agents.person import PersonAgent, parse_command
from app.core.actions import Action, Ask, Click, Done, Drag, Fail, Key, Move, Scroll, Type
from app.core.errors import VNCError
from app.desktops.local.desktop import LocalDesktop
from app.desktops.pass_through import PassThroughDesktop
from app.episode.control import EpisodeControl, RunOptions
from app.episode.events import EpisodeResult
from app.episode.runner import EpisodeRunner
from app.rfb import wire
from app.rfb.client import VncEndpoint, connect
from app.rfb.proxy import InputRecorder, ProxyAddress, RFBRecordingProxy
from app.store import Store
from app.tasks.loader import load_task
from app.tasks.model import Task
from app.users.simulated import SimulatedUser
from tests.rfb_server import EXPECTED_PIXEL_FORMAT, PointerEvent, RFBTestServer
from tests.xterm_task import write_xterm_task


def test_commands() -> None:
    assert parse_command("done") == Done()
    assert parse_command("ask  Which size? ") == Ask("Which size?")
    assert parse_command("fail") == Fail("given up by the person")
    with pytest.raises(ValueError, match=r"done \[ANSWER\] \| ask"):
        parse_command("finish")


async def test_recorder_merges_input_into_actions() -> None:
    actions: list[object] = []
    recorder = InputRecorder(actions.append)
    for char in "hi":
        recorder.key(True, ord(char))
        recorder.key(False, ord(char))
    recorder.key(True, 0xFFE3)  # ctrl down
    recorder.key(True, ord("s"))
    recorder.key(False, ord("s"))
    recorder.key(False, 0xFFE3)
    recorder.key(True, 0xFFE1)  # shift + tab is a key, not text
    recorder.key(True, 0xFF09)
    recorder.key(False, 0xFFE1)
    for _ in range(2):  # a double click
        recorder.pointer(1, 10, 10)
        recorder.pointer(0, 10, 10)
    recorder.pointer(16, 50, 50)
    recorder.pointer(0, 50, 50)
    recorder.pointer(16, 51, 50)
    recorder.pointer(0, 51, 50)
    recorder.pointer(4, 5, 5)
    recorder.pointer(4, 100, 80)
    recorder.pointer(0, 100, 80)
    recorder.command(Done())
    assert actions == [
        Type("hi"),
        Key("ctrl+s"),
        Key("shift+tab"),
        Click(10, 10, "left", 2),
        Scroll(50, 50, 2),
        Drag(5, 5, 100, 80, "right"),
        Done(),
    ]


# The scripted server checks passwords with vncdotool's DES code (TripleDES, deprecated).
@pytest.mark.filterwarnings("ignore:TripleDES has been moved")
async def test_the_proxy_relays_a_viewer_and_records_its_input() -> None:
    """Against the scripted RFB server (no X): the proxy checks its own password,
    passes frames through untouched, forwards input and records it, and drops the
    encodings whose client messages it could not parse."""
    server = RFBTestServer(64, 48)
    server.fb[:] = np.random.default_rng(7).integers(0, 256, (48, 64, 3), dtype=np.uint8)
    await server.start()
    actions: list[Action] = []
    upstream = VncEndpoint("127.0.0.1", server.port, server.password)
    proxy = RFBRecordingProxy(upstream, InputRecorder(actions.append))
    try:
        address = await proxy.start()
        with pytest.raises(VNCError, match=r"authentication failed at .*: wrong password"):
            await connect(address.host, address.port, "wrong")
        viewer = await connect(address.host, address.port, address.password)
        try:
            assert (viewer.width, viewer.height, viewer.name) == (64, 48, "test-desktop")
            np.testing.assert_array_equal((await viewer.frame()).pixels, server.fb)
            await viewer.perform(Type("hi"))
            await viewer.perform(Click(3, 4))
            refused = [wire.ENCODING_FENCE, wire.ENCODING_EXTENDED_DESKTOP_SIZE]
            await viewer.send(wire.set_encodings([0, refused[0], 1, refused[1]]), 5)
            await viewer.perform(Move(5, 6))  # forwarded, not recorded
            await server.wait_for(lambda _: PointerEvent(0, 5, 6) in server.input_events())
        finally:
            await viewer.close()
    finally:
        await proxy.close()
        await server.stop()
    assert server.connections == 1  # the refused viewer never reached the desktop
    assert server.pixel_format == EXPECTED_PIXEL_FORMAT
    assert server.encodings == [0, 1]
    assert actions == [Type("hi"), Click(3, 4)]


def start_person_episode(
    task: Task, desktop: LocalDesktop, store: Store, control: EpisodeControl | None = None
) -> tuple[PersonAgent, asyncio.Future[ProxyAddress], asyncio.Task[EpisodeResult]]:
    """A person's episode of `task` on `desktop`, started on the running loop: its agent,
    the address its recording proxy announces (once it listens), and the episode."""
    ready: asyncio.Future[ProxyAddress] = asyncio.get_running_loop().create_future()
    agent = PersonAgent(desktop, announce=ready.set_result)
    runner = EpisodeRunner(
        task,
        PassThroughDesktop(desktop),
        agent,
        SimulatedUser(),
        store,
        backend="local",
        options=RunOptions(settle_timeout=0.5),
        control=control,
    )
    return agent, ready, asyncio.create_task(runner.run())


@pytest.mark.desktop
async def test_an_abort_ends_a_person_episode_that_waits_for_their_input(
    tmp_path: Path,
) -> None:
    """The runner waits for the person's next action with nothing coming: an abort ends
    the episode then and there, not at their next action."""
    task = load_task(write_xterm_task(tmp_path, steps=20, seconds=300))
    control = EpisodeControl()
    with Store(tmp_path / "db.sqlite") as store:
        async with LocalDesktop() as desktop:
            _agent, ready, episode = start_person_episode(task, desktop, store, control)
            await asyncio.wait_for(asyncio.shield(ready), 120)
            control.abort()
            result = await asyncio.wait_for(episode, 30)
        assert result.status == "error" and result.end_reason == "aborted"
        assert store.steps(result.episode_id) == []


@pytest.mark.desktop
async def test_a_person_episode_through_the_recording_proxy(tmp_path: Path) -> None:
    task = load_task(write_xterm_task(tmp_path, steps=20, seconds=300))
    store = Store(tmp_path / "db.sqlite")
    async with LocalDesktop() as desktop:
        agent, ready, episode = start_person_episode(task, desktop, store)
        address = await asyncio.wait_for(asyncio.shield(ready), 120)
        assert address.host == "127.0.0.1"
        with pytest.raises(VNCError, match="authentication failed"):
            await connect(address.host, address.port, "wrong")
        viewer = await connect(address.host, address.port, address.password)
        assert (viewer.width, viewer.height) == (1280, 800)
        frame = await viewer.frame()  # updates flow back through the proxy
        assert frame.pixels.shape == (800, 1280, 3)
        await viewer.type_text("touch ~/proof.txt\n")
        await viewer.perform(Key("ctrl+l"))
        await viewer.perform(Click(640, 790))
        await viewer.perform(Scroll(640, 700, 2))
        await viewer.perform(Drag(100, 700, 300, 750))
        # The file appears because the viewer's keys reached the desktop live.
        deadline = asyncio.get_running_loop().time() + 30
        while not await desktop.guest.exists("~/proof.txt"):
            assert asyncio.get_running_loop().time() < deadline, "typing never arrived"
            await asyncio.sleep(0.1)
        # `done` is typed in another channel than the viewer's input: a person says it
        # after seeing their last input land, so does the test (on a loaded machine the
        # drag's bytes were still in the proxy's socket when `done` was queued).
        while len(store.steps(1)) < 5:
            assert asyncio.get_running_loop().time() < deadline, store.steps(1)
            await asyncio.sleep(0.1)
        agent.command("done")
        result = await asyncio.wait_for(episode, 120)
        await viewer.close()
    assert result.status == "finished" and result.passed is True
    assert result.episode_id == 1
    steps = store.steps(result.episode_id)
    assert [s.kind for s in steps] == ["type", "key", "click", "scroll", "drag", "done"]
    assert steps[0].action == {"kind": "type", "text": "touch ~/proof.txt\n"}
    assert steps[1].action["combo"] == "ctrl+l"
    assert (steps[2].action["x"], steps[2].action["y"]) == (640, 790)
    assert steps[3].action["dy"] == 2
    assert steps[4].action["x2"] == 300 and steps[4].action["y2"] == 750
    assert all(s.frame is not None for s in steps)
    assert steps[0].agent_info == {"source": "proxy"}
    assert steps[-1].agent_info == {"source": "command"}
    assert store.get_episode(result.episode_id).agent == "person"
    store.close()


@pytest.mark.desktop
async def test_a_person_types_the_answer_of_a_web_task_with_done(tmp_path: Path) -> None:
    """`done 2` typed in the terminal returns the number 2 (not the text "2"): the
    kanban page's evaluateTask, which compares with ===, passes it; `done 3` fails."""
    root = Path(__file__).resolve().parents[2]
    task = load_task(root / "tasks" / "web" / "web-kanban-count-answer.yaml")
    results = {}
    with Store(tmp_path / "db.sqlite") as store:
        async with LocalDesktop() as desktop:
            for line in ("done 2", "done 3"):
                agent, ready, episode = start_person_episode(task, desktop, store)
                await asyncio.wait_for(asyncio.shield(ready), 120)
                assert agent.command(line) == Done(int(line.split()[1]))
                results[line] = await asyncio.wait_for(episode, 120)
                await agent.close()
        steps = store.steps(results["done 2"].episode_id)
    right, wrong = results["done 2"], results["done 3"]
    assert right.passed is True and right.score == pytest.approx(1.0)
    assert steps[-1].action == {"kind": "done", "answer": 2}
    assert wrong.passed is False
    page = next(c for c in wrong.checks if c.name == "web_evaluate")
    assert page.passed is False and "returned 3, in progress: 2" in page.evidence
