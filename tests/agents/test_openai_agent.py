"""The OpenAI-compatible agent against a real local HTTP server replaying recorded
answers: tool calls, the JSON fallback, malformed answers, retries and errors, and
one episode on a real desktop recorded with tool calls, tokens and latency."""

from __future__ import annotations

import base64
import io
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from app.agents.adapters.deskloop import (
    TOOL_PARAMETERS,
    DeskLoopAgent,
    DeskLoopConfig,
    on_screen,
    pixels_contract,
)
from app.agents.base import AgentContext, Observation
from app.agents.factory import make_agent
from app.core.actions import Ask, Click, Done, Drag, Fail, Key, Scroll, Type, Wait
from app.core.errors import ActionError, AgentError, AgentUnavailable, MalformedAction
from app.core.frames import Frame
from app.desktops.local.desktop import LocalDesktop
from app.episode.protocol import Protocol
from app.episode.runner import EpisodeRunner
from app.store import Store
from app.tasks.loader import load_task
from app.users.simulated import SimulatedUser
from tests.fake_openai import (
    FakeEndpoint,
    Reply,
    completion,
    error_reply,
    text_reply,
    tool_reply,
)
from tests.xterm_task import write_xterm_task

KEY_ENV = "DESKLOOP_TEST_OPENAI_KEY"
SECRET = "sk-test-secret-never-logged"


class NoProbe:
    async def active_window_title(self) -> str:
        return ""

    async def file_exists(self, path: str) -> bool:
        return False


def observation(width: int = 1280, height: int = 800, steps: int = 0) -> Observation:
    pixels = np.zeros((height, width, 3), np.uint8)
    pixels[:, : width // 2] = (200, 30, 30)
    protocol = Protocol("Flip the photo.", [], max_steps=10, max_seconds=60)
    protocol.inject("Also make it smaller.", "clarification")
    return Observation(
        frame=Frame(pixels, time.monotonic(), time.time()),
        active_message=protocol.active_message,
        conversation=tuple(protocol.conversation),
        steps_taken=steps,
    )


def config(endpoint: FakeEndpoint, **overrides: Any) -> DeskLoopConfig:
    values: dict[str, Any] = {
        "model": "fake-vision-1",
        "base_url": endpoint.base_url,
        "api_key_env": KEY_ENV,
        "image_width": 640,
        "image_height": 640,
        "backoff": 0.01,
        "max_retries": 2,
        "timeout": 5.0,
    }
    values.update(overrides)
    return DeskLoopConfig(**values)


async def started(cfg: DeskLoopConfig) -> DeskLoopAgent:
    agent = DeskLoopAgent(cfg)
    await agent.start(AgentContext("t", 1280, 800, NoProbe()))
    return agent


def sent_image(request: dict[str, Any]) -> Image.Image:
    parts = request["messages"][1]["content"]
    url = next(p["image_url"]["url"] for p in parts if p["type"] == "image_url")
    prefix = "data:image/png;base64,"
    assert url.startswith(prefix)
    return Image.open(io.BytesIO(base64.b64decode(url[len(prefix) :])))


def prompt_text(request: dict[str, Any]) -> str:
    parts = request["messages"][1]["content"]
    return "\n".join(p["text"] for p in parts if p["type"] == "text")


async def test_tool_call_is_scaled_to_the_screen_and_recorded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    replies = [tool_reply("click", {"x": 320, "y": 100, "count": 2}, prompt_tokens=1500)]
    with FakeEndpoint(replies) as endpoint:
        agent = await started(config(endpoint))
        action = await agent.decide(observation())
        info = agent.step_info()
        await agent.close()
    # 1280x800 sent as 640x400: every coordinate doubles (pixel centres).
    assert action == Click(641, 201, "left", 2)
    (request,) = endpoint.received
    assert request.path == "/v1/chat/completions"
    assert request.headers["Authorization"] == f"Bearer {SECRET}"
    body = request.body
    assert body["model"] == "fake-vision-1"
    assert body["temperature"] == 0.0 and body["seed"] == 0
    assert [t["function"]["name"] for t in body["tools"]] == list(TOOL_PARAMETERS)
    image = sent_image(body)
    assert image.size == (640, 400)
    assert image.getpixel((10, 10)) == (200, 30, 30) and image.getpixel((630, 10)) == (0, 0, 0)
    text = prompt_text(body)
    assert "Flip the photo." in text
    assert "Also make it smaller.  <- ACTIVE INSTRUCTION" in text
    assert "640x400" in body["messages"][0]["content"]
    assert info is not None
    assert info["model"] == "fake-vision-1"
    assert info["prompt_tokens"] == 1500 and info["completion_tokens"] == 30
    assert info["total_tokens"] == 1530
    assert info["retries"] == 0 and info["latency_s"] >= 0
    assert info["tool_call"]["name"] == "click"
    assert info["sent_size"] == [640, 400] and info["screen_size"] == [1280, 800]
    assert SECRET not in json.dumps(info)


async def test_every_protocol_action_is_offered_and_parsed() -> None:
    replies = [
        tool_reply("type", {"text": "hello\n"}),
        tool_reply("key", {"combo": "ctrl+shift+e"}),
        tool_reply("drag", {"x1": 0, "y1": 0, "x2": 639, "y2": 399}),
        tool_reply("ask", {"question": "Which size?"}),
        tool_reply("fail", {"reason": "no GIMP"}),
        tool_reply("done", "", extra_calls=2),
    ]
    with FakeEndpoint(replies) as endpoint:
        agent = await started(config(endpoint))
        actions = [await agent.decide(observation(steps=i)) for i in range(6)]
        info = agent.step_info()
        await agent.close()
    assert actions == [
        Type("hello\n"),
        Key("ctrl+shift+e"),
        Drag(1, 1, 1279, 799),
        Ask("Which size?"),
        Fail("no GIMP"),
        Done(),
    ]
    assert info is not None and info["ignored_tool_calls"] == 2
    # The history of earlier actions goes into later requests.
    assert "step 3: ASK: Which size?" in prompt_text(endpoint.received[5].body)
    assert "Authorization" not in endpoint.received[0].headers  # no key set: none sent


async def test_the_conversation_and_the_actions_carry_the_same_step_numbers(
    tmp_path: Path,
) -> None:
    """The ASK of step-log row 1 is `[step 1]` in the conversation and `step 1` in the
    model's recent actions."""
    from tests.agents.test_adapter_agents import ASK_TASK
    from tests.still_desktop import StillDesktop

    folder = tmp_path / "tasks" / "gimp"
    folder.mkdir(parents=True)
    (folder / "adapter-ask.yaml").write_text(ASK_TASK)
    task = load_task(folder / "adapter-ask.yaml")
    replies = [
        tool_reply("key", {"combo": "a"}),
        tool_reply("ask", {"question": "How wide?"}),
        tool_reply("done"),
    ]
    with FakeEndpoint(replies) as endpoint, Store(tmp_path / "db.sqlite") as store:
        agent = DeskLoopAgent(config(endpoint))
        runner = EpisodeRunner(task, StillDesktop(), agent, SimulatedUser(), store, backend="local")
        result = await runner.run()
    assert result.status == "finished"
    told = prompt_text(endpoint.received[2].body)
    assert "[step 1] You (question): How wide?" in told
    assert "[after step 1] User (answer): Make it 400 pixels wide." in told
    assert "step 1: ASK: How wide?" in told


async def test_json_fallback_for_models_without_tools() -> None:
    replies = [
        text_reply('Sure.\n```json\n{"action": "key", "combo": "ctrl+s"}\n```'),
        text_reply('{"action": "scroll", "x": 10, "y": 10, "dy": -3}'),
    ]
    with FakeEndpoint(replies) as endpoint:
        agent = await started(
            config(endpoint, tool_mode="json", image_width=1280, image_height=800)
        )
        first = await agent.decide(observation())
        assert agent.step_info() is not None
        second = await agent.decide(observation(steps=1))
        await agent.close()
    assert first == Key("ctrl+s")
    assert second == Scroll(10, 10, -3)  # sent at full size: no scaling
    body = endpoint.received[0].body
    assert "tools" not in body
    assert '"action"' in body["messages"][0]["content"]


async def test_other_answer_shapes_endpoints_send() -> None:
    legacy = completion(content=None)
    legacy["choices"][0]["message"]["function_call"] = {
        "name": "key",
        "arguments": '{"combo": "f5"}',
    }
    parts = completion(content=None)
    parts["choices"][0]["message"]["content"] = [
        {"type": "text", "text": '{"action": "wait", '},
        {"type": "text", "text": '"seconds": 2}'},
    ]
    with FakeEndpoint([Reply(body=legacy), Reply(body=parts)]) as endpoint:
        agent = await started(config(endpoint))
        assert await agent.decide(observation()) == Key("f5")
        assert await agent.decide(observation(steps=1)) == Wait(2)
        await agent.close()


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (tool_reply("rm_rf", {}), "unknown tool 'rm_rf'"),
        (tool_reply("click", "{not json"), "arguments are not valid JSON"),
        (tool_reply("click", {"x": 5}), "click"),
        (tool_reply("click", {"x": 700, "y": 10}), "outside the 640x400 screenshot"),
        (tool_reply("key", {"combo": "ctrl+nosuchkey"}), "nosuchkey"),
        (text_reply("I think I should click the button."), "no action"),
        (text_reply('{"x": 1}'), '"action" key'),
        (Reply(body={"choices": []}), "no choices"),
    ],
)
async def test_malformed_answers_are_rejected_with_a_reason(reply: Reply, reason: str) -> None:
    with FakeEndpoint([reply, tool_reply("done")]) as endpoint:
        agent = await started(config(endpoint))
        with pytest.raises(MalformedAction) as caught:
            await agent.decide(observation())
        rejected_info = agent.step_info()
        # The model is asked again and told why its last answer was refused.
        assert await agent.decide(observation(steps=1)) == Done()
        await agent.close()
    assert reason in str(caught.value)
    assert rejected_info is not None and reason in rejected_info["rejected"]
    assert "REJECTED: " in prompt_text(endpoint.received[1].body)


async def test_429_and_5xx_are_retried_with_backoff() -> None:
    replies = [
        error_reply(429, {"Retry-After": "0"}),
        error_reply(503),
        tool_reply("done"),
    ]
    with FakeEndpoint(replies) as endpoint:
        agent = await started(config(endpoint))
        action = await agent.decide(observation())
        info = agent.step_info()
        await agent.close()
    assert action == Done()
    assert info is not None and info["retries"] == 2
    assert len(endpoint.received) == 3


async def test_a_timeout_is_retried() -> None:
    replies = [Reply(body={}, delay=1.5), tool_reply("done")]
    with FakeEndpoint(replies) as endpoint:
        agent = await started(config(endpoint, timeout=0.5))
        assert await agent.decide(observation()) == Done()
        info = agent.step_info()
        await agent.close()
    assert info is not None and info["retries"] == 1


async def test_persistent_5xx_makes_the_agent_unavailable() -> None:
    with FakeEndpoint([error_reply(500)] * 3) as endpoint:
        agent = await started(config(endpoint, max_retries=2))
        with pytest.raises(AgentUnavailable) as caught:
            await agent.decide(observation())
        await agent.close()
    assert len(endpoint.received) == 3
    assert "after 2 retries" in str(caught.value) and "HTTP 500" in str(caught.value)


async def test_a_refused_request_is_an_agent_error_not_retried(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    with FakeEndpoint([error_reply(401), tool_reply("done")]) as endpoint:
        agent = await started(config(endpoint))
        with pytest.raises(AgentError) as caught:
            await agent.decide(observation())
        await agent.close()
    assert not isinstance(caught.value, AgentUnavailable | MalformedAction)
    assert "HTTP 401" in str(caught.value) and SECRET not in str(caught.value)
    assert len(endpoint.received) == 1


def test_sizes_and_scaling() -> None:
    assert pixels_contract((1280, 800), (1024, 1024)).sent == (1024, 640)
    assert pixels_contract((1280, 800), (2000, 2000)).sent == (1280, 800)  # never scaled up
    contract = pixels_contract((1280, 800), (1024, 1024))
    assert on_screen(contract, Click(0, 0)) == Click(0, 0)
    assert on_screen(contract, Click(1023, 639)) == Click(1279, 799)
    assert on_screen(contract, Drag(512, 320, 0, 0)) == Drag(640, 400, 0, 0)
    with pytest.raises(
        ActionError, match=r"^click \(1024, 5\) is outside the 1024x640 screenshot$"
    ):
        on_screen(contract, Click(1024, 5))


def test_factory_builds_openai_agents() -> None:
    task = load_task(Path("tasks/gimp/gimp-flip-export.yaml"))
    agent = make_agent("openai:some-model", task)
    assert agent.name == "openai:some-model"
    with pytest.raises(AgentError, match="model"):
        make_agent("openai", task)
    base = DeskLoopConfig(model="a", image_width=800)
    built = make_agent("openai:b", task, openai=base)
    assert isinstance(built, DeskLoopAgent) and built.config.image_width == 800
    assert built.config.model == "b"


@pytest.mark.desktop
async def test_episode_records_tool_calls_tokens_latency_and_outcomes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    task = load_task(write_xterm_task(tmp_path, seconds=180))
    replies = [
        tool_reply("press_button", {"x": 1}),  # malformed: a rejected step
        error_reply(502),  # retried within the next step
        tool_reply("type", {"text": "touch ~/proof.txt\n"}, prompt_tokens=2222),
        tool_reply("done"),
        # the second episode: the endpoint is down for good
        *[error_reply(500)] * 3,
    ]
    store = Store(tmp_path / "db.sqlite")
    with FakeEndpoint(replies) as endpoint:
        async with LocalDesktop() as desktop:
            results = []
            for _ in range(2):
                agent = DeskLoopAgent(config(endpoint, max_retries=2))
                runner = EpisodeRunner(
                    task, desktop, agent, SimulatedUser(), store, backend="local"
                )
                results.append(await runner.run())
    good, down = results
    assert good.status == "finished" and good.passed is True and good.steps == 3
    steps = store.steps(good.episode_id)
    assert [s.kind for s in steps] == ["rejected", "type", "done"]
    assert steps[0].error is not None and "unknown tool 'press_button'" in steps[0].error
    assert steps[0].action["raw"]["name"] == "press_button"
    info = steps[1].agent_info
    assert info is not None
    assert info["tool_call"] == {"name": "type", "arguments": '{"text": "touch ~/proof.txt\\n"}'}
    assert info["prompt_tokens"] == 2222 and info["retries"] == 1
    assert info["latency_s"] > 0 and info["model"] == "fake-vision-1"
    assert store.get_episode(good.episode_id).agent == "openai:fake-vision-1"

    assert down.status == "error" and down.end_reason == "error" and not down.passed
    assert down.error is not None and down.error.startswith("Agent unavailable:")
    record = store.get_episode(down.episode_id)
    assert record.status == "error" and record.passed is not True
    raw_db = (tmp_path / "db.sqlite").read_bytes()
    assert SECRET.encode() not in raw_db
    store.close()
