"""Record a person (played by a scripted VNC client through the real recording proxy)
on a real desktop, compile the recording, and replay the reference on a fresh desktop."""

from __future__ import annotations

import asyncio
from functools import partial
from pathlib import Path

import pytest
import yaml

from app.agents.base import AgentContext, GuestProbe, Observation
from app.agents.reference_script import load_script
from app.agents.scripted import ScriptedAgent
from app.authoring.compile import compile_recording
from app.authoring.recorder import DemonstrationRecorder, append_control
from app.authoring.recording import (
    Event,
    FrameEvent,
    KeyEvent,
    MarkEvent,
    RecordingMeta,
    RecordingWriter,
    read_recording,
)
from app.core.actions import Click, Done, Fail, GuiAction, Move, Type
from app.core.conversation import Message
from app.desktops.local.desktop import LocalDesktop
from app.desktops.xwindows import wait_window
from app.rfb.client import connect
from tests.waiting import eventually

pytestmark = pytest.mark.desktop

XTERM = [
    "xterm",
    "-xrm",
    "*allowTitleOps: false",
    "-geometry",
    "60x12+40+40",
    "-title",
    "author-term",
    "-e",
    "sh",
]
CTRL, ALT, SHIFT = 0xFFE3, 0xFFE9, 0xFFE1


async def open_xterm(desktop: LocalDesktop) -> None:
    await desktop.guest.launch(XTERM)
    await wait_window(desktop.guest, name="author-term", timeout=60)
    await desktop.settle(timeout=5, quiet=0.5)


async def test_a_recorded_workflow_compiles_and_replays(tmp_path: Path) -> None:
    folder = tmp_path / "rec"
    async with LocalDesktop() as desktop:
        await open_xterm(desktop)
        meta = RecordingMeta("gimp", desktop.width, desktop.height, "2026-12-01T00:00:00Z")
        recorder = DemonstrationRecorder(desktop, RecordingWriter(folder, meta))
        address = await recorder.start()
        person = await connect(address.host, address.port, address.password)
        try:
            await person.pointer(120, 80, 1)  # focus the xterm
            await person.pointer(120, 80, 0)
            await person.type_text("echo one > ~/one.txt\n")
            await eventually(lambda: desktop.guest.exists("~/one.txt"), "~/one.txt")
            await person.key_combo([CTRL, ALT, SHIFT, ord("m")])  # a boundary
            await person.type_text("echo two > ~/two.txt\n")
            await eventually(lambda: desktop.guest.exists("~/two.txt"), "~/two.txt")
            append_control(folder, {"mark": "Now the third file"})

            async def marked_twice() -> bool:
                return len(read_recording(folder).marks) == 2

            await eventually(marked_twice, "the mark twice")
            await person.type_text("echo three > ~/three.txt\n")
            await eventually(lambda: desktop.guest.exists("~/three.txt"), "~/three.txt")
            await person.key_combo([CTRL, ALT, SHIFT, ord("q")])  # the end
            assert await asyncio.wait_for(recorder.wait(), 10) == "the author's end key"
        finally:
            await person.close()
            await recorder.stop()
        assert recorder.problems == []

    recording = read_recording(folder)
    assert recording.ended
    # The chords never reached the desktop, and are not in the recording's input.
    assert not [
        e for e in recording.events if isinstance(e, KeyEvent) and e.keysym in (ord("m"), ord("q"))
    ]
    assert [m.note for m in recording.events if isinstance(m, MarkEvent)] == [
        "",
        "Now the third file",
    ]

    references = tmp_path / "references"
    compiled = compile_recording(recording, "anchors/demo")
    assert [t.action for t in compiled.actions] == [
        Move(120, 80),  # the pointer arrives, then it clicks: two steps on replay
        Click(120, 80),
        Type("echo one > ~/one.txt\n"),
        Type("echo two > ~/two.txt\n"),
        Type("echo three > ~/three.txt\n"),
    ]
    assert [list(r) for r in compiled.subgoals] == [[0, 1, 2], [3], [4]]
    steps = compiled.steps
    assert steps[0] == {"wait_for": {"window": "^author-term$", "timeout": 60.0}}
    # The click's target is waited for, then the pointer goes there, then it clicks.
    assert steps[1]["wait_for"]["anchor"]["image"] == "anchors/demo/001.png"
    assert steps[2:4] == [{"move": [120, 80]}, {"click": [120, 80]}]
    assert {"expect": {"message": "Now the third file"}} in steps
    references.mkdir()
    compiled.write_anchors(references)
    script_path = references / "demo.yaml"
    script_path.write_text(yaml.safe_dump(compiled.script("demo"), sort_keys=False))

    # Replay on a fresh desktop: each GUI action is performed, each DONE moves to the
    # next sub-goal's message, as the task's agent_done phases would.
    messages = ["Make one.txt", "Make two.txt", "Now the third file, please"]
    async with LocalDesktop() as desktop:
        await open_xterm(desktop)
        agent = ScriptedAgent(load_script(script_path))
        await agent.start(AgentContext("demo", desktop.width, desktop.height, GuestProbe(desktop)))
        phase = 0
        for step in range(20):
            message = Message("user", "instruction", messages[phase], step, "task")
            observation = Observation(await desktop.frame(), message, (message,), step)
            action = await agent.decide(observation)
            assert not isinstance(action, Fail), action.reason
            if isinstance(action, Done):
                phase += 1
                if phase == len(messages):
                    break
                continue
            assert isinstance(action, GuiAction)
            await desktop.act(action)
        assert phase == len(messages)
        for name in ("one", "two", "three"):
            path = f"~/{name}.txt"
            await eventually(partial(desktop.guest.exists, path), path)


async def test_an_unchanged_screen_is_not_written_twice(tmp_path: Path) -> None:
    folder = tmp_path / "rec"
    frames: list[FrameEvent] = []
    three = asyncio.Event()

    def seen(event: Event) -> None:
        if isinstance(event, FrameEvent):
            frames.append(event)
            if len(frames) >= 4:
                three.set()

    async with LocalDesktop() as desktop:
        await desktop.settle(timeout=5, quiet=0.5)
        meta = RecordingMeta("gimp", desktop.width, desktop.height, "2026-12-01T00:00:00Z")
        recorder = DemonstrationRecorder(
            desktop, RecordingWriter(folder, meta), frame_every=0.2, on_event=seen, capture=False
        )
        await recorder.start()
        try:
            await asyncio.wait_for(three.wait(), 30)  # the start frame and three steady ones
        finally:
            await recorder.stop()
    names = [f.file for f in read_recording(folder).events if isinstance(f, FrameEvent)]
    assert len(names) >= 4 and len(set(names)) == 1, names  # an idle desktop: one picture
    assert (folder / names[0]).is_file()
