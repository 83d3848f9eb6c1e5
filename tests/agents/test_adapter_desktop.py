"""The adapters on a real desktop: for each coordinate convention, a point the fake
endpoint names in the model's coordinates lands on the screen's pixel it means; and for
each adapter, the fake endpoint plays GIMP's flip-and-export reference in that family's
wire format, driving the real adapter, the real runner and real GIMP to a score of 1.

The fake endpoint answers like a model that looks at the screen: each answer waits
(its gate) until the window it acts on is focused, as the reference's `wait_for` does.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from app.agents.adapters import AdapterAgent, AdapterConfig, CoordinateContract
from app.agents.base import AgentContext, Observation
from app.core.actions import Click
from app.desktops.local.desktop import LocalDesktop
from app.desktops.xwindows import active_window_title
from app.episode.protocol import Protocol
from app.episode.runner import EpisodeRunner
from app.store import Store
from app.tasks.loader import load_task
from app.users.simulated import SimulatedUser
from tests.fake_openai import FakeEndpoint, Reply
from tests.fake_providers import (
    anthropic_reply,
    code_reply,
    computer,
    computer_call,
    output_message,
    qwen_reply,
    responses_reply,
    uitars_reply,
)

pytestmark = pytest.mark.desktop

ROOT = Path(__file__).resolve().parents[2]


def adapter_config(endpoint: FakeEndpoint, adapter: str, **overrides: Any) -> AdapterConfig:
    values: dict[str, Any] = {
        "model": "fake-cua-1",
        "adapter": adapter,
        "base_url": endpoint.base_url,
        "api_key_env": "NO_SUCH_KEY_ENV",
        "backoff": 0.05,
        "timeout": 60.0,
    }
    return AdapterConfig(**(values | overrides))


class NoProbe:
    async def active_window_title(self) -> str:
        return ""

    async def file_exists(self, path: str) -> bool:
        return False


# -- a click lands where the model means, in every convention -------------------------------


def click_reply(adapter: str, x: float, y: float) -> Reply:
    """A click at model point (x, y) in the family's own words."""
    if adapter == "anthropic":
        return anthropic_reply(computer("left_click", coordinate=[int(x), int(y)]))
    if adapter == "pyautogui":
        return code_reply(f"pyautogui.click({x:.4f}, {y:.4f})")
    if adapter == "uitars":
        return uitars_reply(f"click(start_box='<|box_start|>({x:.0f},{y:.0f})<|box_end|>')")
    if adapter == "qwen":
        return qwen_reply({"action": "left_click", "coordinate": [int(x), int(y)]})
    return responses_reply(
        computer_call({"type": "click", "button": "left", "x": int(x), "y": int(y)})
    )


CONVENTIONS = [
    # (adapter, convention, image box): one adapter per convention.
    ("anthropic", "pixels", (1024, 1024)),  # the screen sent as 1024x640
    ("pyautogui", "0-1", (1280, 800)),
    ("uitars", "0-1000", (1280, 800)),
    ("qwen", "qwen-grid", (1280, 800)),  # sent as 1288x812
    ("openai-cua", "pixels", (1280, 800)),
]
TARGETS = [(1000, 600), (37, 771), (640, 13)]


async def pointer_at(desktop: LocalDesktop) -> tuple[int, int]:
    where = await desktop.guest.run(["xdotool", "getmouselocation", "--shell"])
    pos = dict(line.split("=", 1) for line in where.stdout_text().split())
    return int(pos["X"]), int(pos["Y"])


async def test_a_click_lands_on_the_point_meant_in_every_convention() -> None:
    async with LocalDesktop(name="adapter-clicks") as desktop:
        await desktop.reset()
        for adapter, convention, box in CONVENTIONS:
            terms = CoordinateContract.make(convention, (1280, 800), box)  # type: ignore[arg-type]
            # Relative conventions may name any point; the pixel ones the pixel whose
            # centre maps onto the target (a smaller image: within one pixel of it).
            replies = [click_reply(adapter, *terms.from_screen(*t)) for t in TARGETS]
            slack = 1 if terms.sent[0] < 1280 else 0
            with FakeEndpoint(replies) as endpoint:
                agent = AdapterAgent(
                    adapter_config(
                        endpoint,
                        adapter,
                        coords=convention,
                        image_width=box[0],
                        image_height=box[1],
                    )
                )
                await agent.start(AgentContext("clicks", 1280, 800, NoProbe()))
                protocol = Protocol("Click the points.", [], max_steps=9, max_seconds=60)
                for step, target in enumerate(TARGETS):
                    frame = await desktop.frame()
                    action = await agent.decide(
                        Observation(
                            frame, protocol.active_message, tuple(protocol.conversation), step
                        )
                    )
                    assert isinstance(action, Click), (adapter, action)
                    await desktop.act(action)
                    x, y = await pointer_at(desktop)
                    assert abs(x - target[0]) <= slack and abs(y - target[1]) <= slack, (
                        f"{adapter} ({convention}): meant {target}, landed on {(x, y)}"
                    )
                info = agent.step_info()
                await agent.close()
            assert info is not None and info["coordinates"]["sent"] == list(terms.sent)


# -- GIMP's flip-and-export reference, played in each family's format ------------------------

# The reference (tasks/gimp/references/gimp-flip-export.yaml) as a model would act:
# each group after the window it waits for is focused.
PLAY: list[tuple[str, list[tuple[str, str]]]] = [
    (r"^\[photo\].*GIMP$", [("key", "alt+i"), ("key", "t"), ("key", "h")]),
    (r"^\*\[photo\]", [("key", "ctrl+shift+e")]),
    (r"^Export Image$", [("key", "ctrl+a"), ("type", "photo-flipped.png"), ("key", "enter")]),
    (r"^Export Image as PNG$", [("key", "enter")]),
    (r"\(exported\)", [("done", "")]),
]
Gate = Callable[[], bool]


def pyautogui_replies(gate: Callable[[str], Gate]) -> list[Reply]:
    def line(kind: str, value: str) -> str:
        if kind == "type":
            return f"pyautogui.write({value!r}, interval=0.02)"
        keys = value.split("+")
        return (
            f"pyautogui.press({keys[0]!r})"
            if len(keys) == 1
            else f"pyautogui.hotkey{tuple(keys)!r}"
        )

    replies = []
    for title, acts in PLAY:
        if acts[0][0] == "done":
            replies.append(code_reply("DONE", gate(title)))
        else:
            replies.append(code_reply("\n".join(line(*a) for a in acts), gate(title)))
    return replies


def anthropic_replies(gate: Callable[[str], Gate]) -> list[Reply]:
    names = {
        "enter": "Return",
        "alt+i": "alt+i",
        "ctrl+a": "ctrl+a",
        "ctrl+shift+e": "ctrl+shift+e",
        "t": "t",
        "h": "h",
    }
    replies = []
    for title, acts in PLAY:
        if acts[0][0] == "done":
            replies.append(
                anthropic_reply(text="The photo is mirrored and exported.", gate=gate(title))
            )
            continue
        blocks = [
            computer("type", text=v) if k == "type" else computer("key", text=names[v])
            for k, v in acts
        ]
        replies.append(anthropic_reply(*blocks, gate=gate(title)))  # parallel tool uses
    return replies


def one_per_reply(
    gate: Callable[[str], Gate], act: Callable[[str, str, Gate | None], Reply]
) -> list[Reply]:
    """Families that act once per answer: the first of a group waits for its window."""
    return [
        act(kind, value, gate(title) if i == 0 else None)
        for title, acts in PLAY
        for i, (kind, value) in enumerate(acts)
    ]


def openai_act(kind: str, value: str, gate: Gate | None) -> Reply:
    if kind == "done":
        return responses_reply(output_message("Mirrored and exported."), gate=gate)
    if kind == "type":
        return responses_reply(computer_call({"type": "type", "text": value}), gate=gate)
    keys = [k.upper() for k in value.split("+")]
    return responses_reply(computer_call({"type": "keypress", "keys": keys}), gate=gate)


def uitars_act(kind: str, value: str, gate: Gate | None) -> Reply:
    if kind == "done":
        return uitars_reply("finished(content='Exported.')", gate=gate)
    if kind == "type":
        return uitars_reply(f"type(content={value!r})", gate=gate)
    return uitars_reply(f"hotkey(key={value.replace('+', ' ')!r})", gate=gate)


def qwen_act(kind: str, value: str, gate: Gate | None) -> Reply:
    if kind == "done":
        return qwen_reply({"action": "terminate", "status": "success"}, gate=gate)
    if kind == "type":
        return qwen_reply({"action": "type", "text": value}, gate=gate)
    return qwen_reply({"action": "key", "keys": value.split("+")}, gate=gate)


PLAYERS: dict[str, Callable[[Callable[[str], Gate]], list[Reply]]] = {
    "pyautogui": pyautogui_replies,
    "anthropic": anthropic_replies,
    "openai-cua": lambda gate: one_per_reply(gate, openai_act),
    "uitars": lambda gate: one_per_reply(gate, uitars_act),
    "qwen": lambda gate: one_per_reply(gate, qwen_act),
}


@pytest.mark.parametrize("adapter", list(PLAYERS))
async def test_gimp_flip_export_scores_1_when_the_endpoint_plays_its_reference(
    adapter: str, tmp_path: Path
) -> None:
    task = load_task(ROOT / "tasks" / "gimp" / "gimp-flip-export.yaml")
    loop = asyncio.get_running_loop()
    desktop = LocalDesktop(name=f"adapter-{adapter}")

    def gate(title: str) -> Gate:
        pattern = re.compile(title)

        def focused() -> bool:
            # From the server's thread: ask the desktop on the test's loop.
            ask = asyncio.run_coroutine_threadsafe(active_window_title(desktop.guest), loop)
            try:
                return bool(pattern.search(ask.result(timeout=10)))
            except Exception:
                return False

        return focused

    started = time.monotonic()
    with FakeEndpoint(PLAYERS[adapter](gate)) as endpoint, Store(tmp_path / "db.sqlite") as store:
        agent = AdapterAgent(adapter_config(endpoint, adapter))
        try:
            runner = EpisodeRunner(task, desktop, agent, SimulatedUser(), store, backend="local")
            result = await runner.run()
        finally:
            await desktop.close()
        steps = store.steps(result.episode_id)
        record = store.get_episode(result.episode_id)
    assert result.error is None, result.error
    assert result.status == "finished" and result.passed is True and result.score == 1.0, [
        (s.kind, s.description, s.error) for s in steps
    ]
    assert [s.kind for s in steps if s.kind == "rejected"] == []
    assert steps[-1].kind == "done"
    assert record.config["agent_config"]["adapter"] == adapter
    assert time.monotonic() - started < 300


async def test_deskloop_run_drives_a_local_endpoint_through_an_adapter(tmp_path: Path) -> None:
    """The command line end to end: `deskloop run TASK --agent uitars:M --base-url URL`."""
    import json
    import os
    import sys

    from tests.xterm_task import write_xterm_task

    task = write_xterm_task(tmp_path, steps=6, seconds=180)
    replies = [
        uitars_reply("type(content='touch ~/proof.txt\\n')"),
        uitars_reply("finished(content='The file is there.')"),
    ]
    with FakeEndpoint(replies) as endpoint:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "app.cli", "--db", str(tmp_path / "db" / "deskloop.db"),
            "run", str(task), "--agent", "uitars:fake-ui-tars", "--base-url",
            endpoint.base_url, "--api-key-env", "DESKLOOP_NO_SUCH_KEY", "--agent-timeout",
            "60", "--json",
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(proc.communicate(), 240)
    assert proc.returncode == 0, err.decode()[-2000:]
    result = json.loads(out.decode().splitlines()[-1])
    assert result["status"] == "finished" and result["passed"] is True
    with Store(tmp_path / "db" / "deskloop.db") as store:
        record = store.get_episode(result["episode"])
    assert record.agent == "uitars:fake-ui-tars"
    assert record.config["agent_config"]["coordinates"] == "0-1000"
    assert endpoint.received[0].path == "/v1/chat/completions"
