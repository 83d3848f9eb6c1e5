"""Each adapter against a real local HTTP server answering in its provider's wire format
(tests.fake_providers): what the agent sends (path, headers, tools, the screenshot and
its size, the conversation), what it makes of the answers, malformed answers refused
with reasons, and an interactive task's ASK reaching the user and the answer reaching
the model through every adapter (a runner on a still desktop)."""

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

from app.agents.adapters import AdapterAgent, AdapterConfig
from app.agents.base import AgentContext, Observation
from app.agents.factory import make_agent
from app.core.actions import Ask, Click, Done, Fail, Key, Move, Type, Wait
from app.core.errors import AgentUnavailable, MalformedAction
from app.core.frames import Frame
from app.episode.protocol import Protocol
from app.episode.runner import EpisodeRunner
from app.store import Store
from app.tasks.loader import load_task
from app.users.simulated import SimulatedUser
from tests.fake_openai import FakeEndpoint, Reply, error_reply, text_reply
from tests.fake_providers import (
    SAFETY_CHECK,
    anthropic_reply,
    code_reply,
    computer,
    computer_actions,
    computer_call,
    function_call,
    output_message,
    qwen_reply,
    response,
    responses_reply,
    tool_use,
    uitars_reply,
)
from tests.still_desktop import StillDesktop

KEY_ENV = "DESKLOOP_TEST_ADAPTER_KEY"
SECRET = "sk-ant-test-secret-never-logged"


class NoProbe:
    async def active_window_title(self) -> str:
        return ""

    async def file_exists(self, path: str) -> bool:
        return False


def observation(steps: int = 0, extra: str | None = None) -> Observation:
    pixels = np.zeros((800, 1280, 3), np.uint8)
    pixels[:, :640] = (200, 30, 30)
    protocol = Protocol("Flip the photo.", [], max_steps=10, max_seconds=60)
    if extra:
        protocol.inject(extra, "clarification")
    return Observation(
        frame=Frame(pixels, time.monotonic(), time.time()),
        active_message=protocol.active_message,
        conversation=tuple(protocol.conversation),
        steps_taken=steps,
    )


def config(endpoint: FakeEndpoint, adapter: str, **overrides: Any) -> AdapterConfig:
    values: dict[str, Any] = {
        "model": "fake-cua-1",
        "adapter": adapter,
        "base_url": endpoint.base_url,
        "api_key_env": KEY_ENV,
        "image_width": 1024,
        "image_height": 1024,
        "backoff": 0.01,
        "max_retries": 2,
        "timeout": 5.0,
    }
    return AdapterConfig(**(values | overrides))


async def started(cfg: AdapterConfig) -> AdapterAgent:
    agent = AdapterAgent(cfg)
    await agent.start(AgentContext("t", 1280, 800, NoProbe()))
    return agent


def png_size(data: str) -> tuple[int, int]:
    return Image.open(io.BytesIO(base64.b64decode(data))).size


# -- pyautogui ------------------------------------------------------------------------------


async def test_pyautogui_code_is_queued_one_action_per_step() -> None:
    replies = [
        code_reply("pyautogui.click(512, 320)\npyautogui.write('hi')\npyautogui.press('enter')"),
        text_reply("I will now delete everything.\n```python\nimport os\nos.remove('x')\n```"),
        code_reply("DONE"),
    ]
    with FakeEndpoint(replies) as endpoint:
        agent = await started(config(endpoint, "pyautogui"))
        first = await agent.decide(observation())
        info = agent.step_info()
        second = await agent.decide(observation(1))
        third = await agent.decide(observation(2))
        assert len(endpoint.received) == 1  # the rest of the answer needed no request
        with pytest.raises(MalformedAction, match="only pyautogui and time are read"):
            await agent.decide(observation(3))
        refused = agent.step_info()
        assert await agent.decide(observation(4)) == Done()
        await agent.close()
    assert [first, second, third] == [Click(640, 400), Type("hi"), Key("enter")]
    assert info is not None and info["prompt_tokens"] == 1200 and info["calls"] == 1
    assert info["coordinates"] == {
        "convention": "pixels",
        "screen": [1280, 800],
        "sent": [1024, 640],
    }
    assert info["actions_in_answer"] == ["click(640, 400)", "type('hi')", "key(enter)"]
    assert refused is not None and "only pyautogui" in refused["rejected"]
    request = endpoint.received[0]
    assert request.path == "/v1/chat/completions"
    system = request.body["messages"][0]["content"]
    assert "pyautogui" in system and "1024x640 pixels" in system
    image = request.body["messages"][1]["content"][1]["image_url"]["url"]
    assert png_size(image.removeprefix("data:image/png;base64,")) == (1024, 640)
    told = request_text(endpoint.received[2].body)
    assert "REJECTED: import of os" in told


def request_text(body: dict[str, Any]) -> str:
    return json.dumps(body)


async def test_a_new_user_message_drops_the_rest_of_an_answer() -> None:
    replies = [code_reply("pyautogui.press('a')\npyautogui.press('b')"), code_reply("WAIT")]
    with FakeEndpoint(replies) as endpoint:
        agent = await started(config(endpoint, "pyautogui"))
        assert await agent.decide(observation()) == Key("a")
        # The user spoke: the model is asked again, and sees it.
        assert await agent.decide(observation(1, extra="Stop, use B.")) == Wait(1.0)
        await agent.close()
    told = request_text(endpoint.received[1].body)
    assert "Stop, use B." in told and "its last 1 action(s) were not run" in told


async def test_anthropic_tool_uses_dropped_for_a_new_message_are_answered_as_not_run() -> None:
    first, second = computer("key", text="a"), computer("key", text="b")
    replies = [anthropic_reply(first, second), anthropic_reply(text="Stopped.")]
    with FakeEndpoint(replies) as endpoint:
        agent = await started(config(endpoint, "anthropic"))
        assert await agent.decide(observation()) == Key("a")
        assert await agent.decide(observation(1, extra="Stop.")) == Done()
        await agent.close()
    results = endpoint.received[1].body["messages"][-1]["content"]
    assert results[0]["tool_use_id"] == first["id"] and "is_error" not in results[0]
    assert results[1] == {
        "type": "tool_result",
        "tool_use_id": second["id"],
        "is_error": True,
        "content": "not run: a new message from the user came first",
    }


# -- Anthropic ------------------------------------------------------------------------------


async def test_anthropic_computer_tool_conversation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    look = computer("screenshot")
    click = computer("left_click", coordinate=[512, 320])
    ask = tool_use("ask_user", {"question": "Which width?"})
    replies = [
        anthropic_reply(look, text="Let me look at the screen first."),
        anthropic_reply(click),
        anthropic_reply(computer("key", text="ctrl+shift+e")),
        anthropic_reply(ask),
        anthropic_reply(text="The photo is flipped and exported."),
    ]
    with FakeEndpoint(replies) as endpoint:
        agent = await started(config(endpoint, "anthropic", images_kept=2))
        actions = [await agent.decide(observation(0))]
        first_info = agent.step_info()
        actions.append(await agent.decide(observation(1)))
        actions.append(await agent.decide(observation(2)))
        actions.append(await agent.decide(observation(3, extra="400 pixels wide.")))
        await agent.close()
    assert actions == [Click(640, 400), Key("ctrl+shift+e"), Ask("Which width?"), Done()]
    first, looked, *_, last = endpoint.received
    assert first.path == "/v1/messages"
    assert first.headers["x-api-key"] == SECRET and "Authorization" not in first.headers
    assert first.headers["anthropic-version"] == "2023-06-01"
    assert first.headers["anthropic-beta"] == "computer-use-2025-01-24"
    tool = first.body["tools"][0]
    assert tool == {
        "type": "computer_20250124",
        "name": "computer",
        "display_width_px": 1024,
        "display_height_px": 640,
        "display_number": 1,
    }
    assert [t["name"] for t in first.body["tools"][1:]] == ["ask_user", "done", "give_up"]
    opening = first.body["messages"][0]["content"]
    assert "Flip the photo." in opening[0]["text"]
    assert png_size(opening[1]["source"]["data"]) == (1024, 640)
    # The screenshot action was answered at once, with the screen, in a tool_result.
    result = looked.body["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == look["id"]
    assert result["content"][0]["type"] == "image"
    assert first_info is not None and first_info["calls"] == 2
    assert first_info["prompt_tokens"] == 2 * 2095 and first_info["total_tokens"] == 2 * 2598
    # The ask's answer and the user's new message reach the model in its conversation.
    turn = last.body["messages"][-1]["content"]
    assert turn[0] == {
        "type": "tool_result",
        "tool_use_id": ask["id"],
        "content": "The user's answer follows.",
    }
    assert "400 pixels wide." in turn[1]["text"]
    # Only the newest screenshots are kept whole.
    kept = request_text(last.body).count('"type": "image"')
    assert kept == 2 and "an earlier screenshot, omitted" in request_text(last.body)


async def test_anthropic_refused_tool_use_is_answered_as_an_error() -> None:
    replies = [
        anthropic_reply(computer("hold_key", text="shift", duration=2)),
        anthropic_reply(tool_use("give_up", {"reason": "GIMP is missing"})),
    ]
    with FakeEndpoint(replies) as endpoint:
        agent = await started(config(endpoint, "anthropic"))
        with pytest.raises(MalformedAction, match="hold_key is not in DeskLoop's action space"):
            await agent.decide(observation())
        assert await agent.decide(observation(1)) == Fail("GIMP is missing")
        await agent.close()
    result = endpoint.received[1].body["messages"][-1]["content"][0]
    assert result["is_error"] is True and "hold_key" in result["content"]


@pytest.mark.parametrize(
    ("model", "chosen", "tool", "beta", "by"),
    [
        ("claude-opus-4-6", None, "computer_20251124", "computer-use-2025-11-24", "table"),
        ("claude-sonnet-4-6", None, "computer_20251124", "computer-use-2025-11-24", "table"),
        ("claude-opus-4-7", None, "computer_20251124", "computer-use-2025-11-24", "table"),
        ("claude-sonnet-4-5", None, "computer_20250124", "computer-use-2025-01-24", "table"),
        (
            "claude-opus-4-6",
            "computer_20250124",
            "computer_20250124",
            "computer-use-2025-01-24",
            "option",
        ),
    ],
)
async def test_each_claude_gets_its_computer_tool_and_beta(
    model: str, chosen: str | None, tool: str, beta: str, by: str
) -> None:
    from app.agents.adapters.formats import CHECKED

    with FakeEndpoint([anthropic_reply(text="Nothing to do.")]) as endpoint:
        agent = await started(config(endpoint, "anthropic", model=model, computer_tool=chosen))
        assert await agent.decide(observation()) == Done()
        await agent.close()
    (sent,) = endpoint.received
    assert sent.headers["anthropic-beta"] == beta
    assert sent.body["tools"][0]["type"] == tool and sent.body["tools"][0]["name"] == "computer"
    recorded = agent.record()["agent_config"]["computer_tool"]
    assert recorded == {"type": tool, "beta": beta, "by": by, "table_checked": CHECKED}


# -- OpenAI computer use --------------------------------------------------------------------


async def test_openai_computer_use_chains_responses_and_records_safety_checks() -> None:
    click = computer_call({"type": "click", "button": "left", "x": 512, "y": 320}, SAFETY_CHECK)
    ask = function_call("ask_user", {"question": "PNG or JPEG?"})
    replies = [
        responses_reply(click),
        responses_reply(computer_call({"type": "type", "text": "photo-flipped.png"})),
        responses_reply(ask),
        responses_reply(output_message("Done: the photo is exported.")),
    ]
    with FakeEndpoint(replies) as endpoint:
        agent = await started(config(endpoint, "openai-cua"))
        first = await agent.decide(observation())
        info = agent.step_info()
        rest = [await agent.decide(observation(i)) for i in (1, 2)]
        rest.append(await agent.decide(observation(3, extra="PNG.")))
        await agent.close()
    assert [first, *rest] == [
        Click(640, 400),
        Type("photo-flipped.png"),
        Ask("PNG or JPEG?"),
        Done(),
    ]
    assert info is not None and info["safety_checks"] == [SAFETY_CHECK]
    assert info["prompt_tokens"] == 1524 and info["total_tokens"] == 1561
    opening, answered, _, last = (r.body for r in endpoint.received)
    assert endpoint.received[0].path == "/v1/responses"
    assert opening["tools"][0] == {
        "type": "computer_use_preview",
        "display_width": 1024,
        "display_height": 640,
        "environment": "linux",
    }
    assert opening["truncation"] == "auto" and "previous_response_id" not in opening
    output = answered["input"][0]
    assert output["type"] == "computer_call_output" and output["call_id"] == click["call_id"]
    assert output["acknowledged_safety_checks"] == [SAFETY_CHECK]
    assert output["output"]["type"] == "computer_screenshot"
    assert answered["previous_response_id"].startswith("resp_")
    assert last["input"][0] == {
        "type": "function_call_output",
        "call_id": ask["call_id"],
        "output": "The user's answer follows.",
    }
    assert "PNG." in last["input"][1]["content"][0]["text"]


async def test_openai_computer_use_answers_a_screenshot_with_the_screen_and_goes_on() -> None:
    """Computer-use models often open with a screenshot: it is answered at once with a
    computer_call_output holding the screen, in the same step, and the episode goes on."""
    look = computer_call({"type": "screenshot"})
    click = computer_call({"type": "click", "button": "left", "x": 512, "y": 320})
    replies = [
        responses_reply(look),
        responses_reply(click),
        responses_reply(output_message("Done.")),
    ]
    with FakeEndpoint(replies) as endpoint:
        agent = await started(config(endpoint, "openai-cua"))
        first = await agent.decide(observation())
        info = agent.step_info()
        last = await agent.decide(observation(1))
        await agent.close()
    assert (first, last) == (Click(640, 400), Done())
    assert info is not None and info["calls"] == 2 and info["prompt_tokens"] == 2 * 1524
    opening, looked, _ = (r.body for r in endpoint.received)
    assert looked["previous_response_id"] == replies[0].body["id"]
    (output,) = looked["input"]  # the screen, and nothing else
    assert output["type"] == "computer_call_output" and output["call_id"] == look["call_id"]
    assert output["output"]["type"] == "computer_screenshot"
    image = output["output"]["image_url"].removeprefix("data:image/png;base64,")
    assert png_size(image) == (1024, 640)
    assert image == opening["input"][0]["content"][-1]["image_url"].split(",", 1)[1]


async def test_a_screenshot_first_openai_episode_runs_to_its_end(tmp_path: Path) -> None:
    folder = tmp_path / "tasks" / "gimp"
    folder.mkdir(parents=True)
    (folder / "adapter-ask.yaml").write_text(ASK_TASK)
    task = load_task(folder / "adapter-ask.yaml")
    replies = [
        responses_reply(computer_call({"type": "screenshot"})),
        responses_reply(computer_call({"type": "click", "button": "left", "x": 10, "y": 10})),
        responses_reply(function_call("ask_user", {"question": "How wide?"})),
        responses_reply(computer_call({"type": "screenshot"})),
        responses_reply(output_message("Done.")),
    ]
    with FakeEndpoint(replies) as endpoint, Store(tmp_path / "db.sqlite") as store:
        agent = AdapterAgent(config(endpoint, "openai-cua"))
        runner = EpisodeRunner(task, StillDesktop(), agent, SimulatedUser(), store, backend="local")
        result = await runner.run()
        steps = store.steps(result.episode_id)
    assert (result.status, result.end_reason, result.error) == ("finished", "done", None)
    assert [s.description for s in steps] == ["click(10, 10)", "ASK: How wide?", "DONE"]
    assert len(endpoint.received) == 5


async def test_openai_computer_use_resends_what_an_unusable_response_left_owed() -> None:
    """A response without an output list, or one that failed or stopped short without a
    call, is not part of the conversation: the next request continues the last usable
    response and carries again everything it owed (the call's output, the user's new
    message), with why the answer was refused."""
    click = computer_call({"type": "click", "button": "left", "x": 512, "y": 320})
    no_output = Reply(
        body={
            "id": "resp_no_output",
            "object": "response",
            "status": "failed",
            "error": {"code": "server_error", "message": "The model failed to respond."},
        }
    )
    short = response()
    short.update(status="incomplete", incomplete_details={"reason": "max_output_tokens"})
    replies = [
        responses_reply(click),
        no_output,
        Reply(body=short),
        responses_reply(output_message("Done.")),
    ]
    with FakeEndpoint(replies) as endpoint:
        agent = await started(config(endpoint, "openai-cua"))
        assert await agent.decide(observation()) == Click(640, 400)
        with pytest.raises(MalformedAction, match="no output list"):
            await agent.decide(observation(1, extra="Use PNG."))
        with pytest.raises(MalformedAction, match="incomplete: max_output_tokens"):
            await agent.decide(observation(2, extra="Use PNG."))
        assert await agent.decide(observation(3, extra="Use PNG.")) == Done()
        await agent.close()
    first_id = replies[0].body["id"]
    for sent, why in zip(
        endpoint.received[1:],
        [None, "has no output list", "is incomplete: max_output_tokens"],
        strict=True,
    ):
        body = sent.body
        assert body["previous_response_id"] == first_id
        output = body["input"][0]
        assert output["type"] == "computer_call_output" and output["call_id"] == click["call_id"]
        told = request_text(body)
        assert "Use PNG." in told
        assert why is None or f"Your last answer was refused: the response {why}" in told


async def test_gpt_5_4_gets_the_built_in_computer_tool_and_its_batched_actions() -> None:
    batch = computer_actions(
        {"type": "click", "button": "left", "x": 512, "y": 320},
        {"type": "type", "text": "poster.png"},
        {"type": "keypress", "keys": ["ENTER"]},
        {"type": "screenshot"},
    )
    held = computer_actions({"type": "click", "button": "left", "x": 5, "y": 5, "keys": ["SHIFT"]})
    done = output_message("Ok.")
    replies = [responses_reply(batch), responses_reply(held), responses_reply(done)]
    with FakeEndpoint(replies) as endpoint:
        agent = await started(config(endpoint, "openai-cua", model="gpt-5.4"))
        taken = [await agent.decide(observation(i)) for i in range(3)]
        with pytest.raises(MalformedAction, match="click holding SHIFT: DeskLoop's clicks hold"):
            await agent.decide(observation(3))
        assert await agent.decide(observation(4)) == Done()
        await agent.close()
    assert taken == [Click(640, 400), Type("poster.png"), Key("enter")]
    opening, answered, _ = (r.body for r in endpoint.received)
    assert opening["tools"][0] == {"type": "computer"}  # no display size, no environment
    assert [t["name"] for t in opening["tools"][1:]] == ["ask_user", "done", "give_up"]
    # One output for the whole batch: the screen after it.
    output = answered["input"][0]
    assert output["type"] == "computer_call_output" and output["call_id"] == batch["call_id"]
    assert output["output"]["type"] == "computer_screenshot"
    recorded = agent.record()["agent_config"]["computer_tool"]
    assert (recorded["type"], recorded["beta"], recorded["by"]) == ("computer", None, "table")


# -- UI-TARS and Qwen -----------------------------------------------------------------------


async def test_uitars_and_qwen_over_chat_completions() -> None:
    replies = [
        uitars_reply("click(start_box='<|box_start|>(500,500)<|box_end|>')"),
        uitars_reply("call_user()", thought="Which width should the photo have?"),
    ]
    with FakeEndpoint(replies) as endpoint:
        agent = await started(config(endpoint, "uitars"))
        assert await agent.decide(observation()) == Click(640, 400)
        assert await agent.decide(observation(1)) == Ask("Which width should the photo have?")
        await agent.close()
    assert "call_user()" in endpoint.received[0].body["messages"][0]["content"]
    replies = [
        qwen_reply({"action": "mouse_move", "coordinate": [644, 406]}),
        qwen_reply({"action": "terminate", "status": "success"}),
    ]
    with FakeEndpoint(replies) as endpoint:
        agent = await started(config(endpoint, "qwen", image_width=1280, image_height=800))
        assert await agent.decide(observation()) == Move(640, 400)
        assert await agent.decide(observation(1)) == Done()
        await agent.close()
    body = endpoint.received[0].body
    assert [t["function"]["name"] for t in body["tools"]] == ["computer_use", "ask_user"]
    assert "1288x812" in body["tools"][0]["function"]["description"]
    image = body["messages"][1]["content"][1]["image_url"]["url"]
    assert png_size(image.removeprefix("data:image/png;base64,")) == (1288, 812)


async def test_an_endpoint_down_is_the_infrastructures_error() -> None:
    with FakeEndpoint([error_reply(503)] * 3) as endpoint:
        agent = await started(config(endpoint, "anthropic"))
        with pytest.raises(AgentUnavailable, match="HTTP 503"):
            await agent.decide(observation())
        await agent.close()


def test_the_factory_builds_adapter_agents(tmp_path: Path) -> None:
    task = load_task(Path("tasks/gimp/gimp-flip-export.yaml"))
    agent = make_agent("anthropic:claude-sonnet-4-5", task, agent_timeout=30)
    assert isinstance(agent, AdapterAgent) and agent.name == "anthropic:claude-sonnet-4-5"
    assert agent.config.base_url == "https://api.anthropic.com/v1"
    assert agent.config.api_key_env == "ANTHROPIC_API_KEY" and agent.config.deadline == 30
    local = AdapterConfig(model="ui-tars", adapter="uitars", base_url="http://127.0.0.1:8000/v1")
    built = make_agent("openai", task, local)
    assert isinstance(built, AdapterAgent) and built.config.adapter == "uitars"
    assert built.record()["agent_config"]["coordinates"] == "0-1000"


# -- ASK through every adapter, on the runner ------------------------------------------------

ASK_TASK = """\
id: adapter-ask
app: gimp
level: L1
title: Ask first
instruction: Resize the photo.
phases:
  - message: Make it 400 pixels wide.
    trigger: agent_ask
budget: {steps: 5, seconds: 120}
evaluate:
  all:
    - {check: file_exists, path: ~/proof.txt}
"""

ASKS: dict[str, list[Reply]] = {
    "pyautogui": [code_reply('ASK("How wide?")'), code_reply("DONE")],
    "uitars": [uitars_reply("call_user()", thought="How wide?"), uitars_reply("finished()")],
    "qwen": [
        qwen_reply({"question": "How wide?"}, name="ask_user"),
        qwen_reply({"action": "terminate", "status": "success"}),
    ],
    "anthropic": [
        anthropic_reply(tool_use("ask_user", {"question": "How wide?"})),
        anthropic_reply(text="Done."),
    ],
    "openai-cua": [
        responses_reply(function_call("ask_user", {"question": "How wide?"})),
        responses_reply(output_message("Done.")),
    ],
}


@pytest.mark.parametrize("adapter", list(ASKS))
async def test_an_ask_reaches_the_user_and_the_answer_the_model(
    adapter: str, tmp_path: Path
) -> None:
    folder = tmp_path / "tasks" / "gimp"
    folder.mkdir(parents=True)
    (folder / "adapter-ask.yaml").write_text(ASK_TASK)
    task = load_task(folder / "adapter-ask.yaml")
    with FakeEndpoint(ASKS[adapter]) as endpoint, Store(tmp_path / "db.sqlite") as store:
        agent = AdapterAgent(config(endpoint, adapter))
        runner = EpisodeRunner(task, StillDesktop(), agent, SimulatedUser(), store, backend="local")
        result = await runner.run()
        steps = store.steps(result.episode_id)
        record = store.get_episode(result.episode_id)
    assert result.status == "finished" and result.end_reason == "done"
    assert [s.kind for s in steps] == ["ask", "done"]
    assert steps[0].description == "ASK: How wide?"
    assert "Make it 400 pixels wide." in request_text(endpoint.received[1].body)
    assert record.config["agent_config"]["adapter"] == adapter


TEXT_TURNS: dict[str, list[Reply]] = {
    "anthropic": [
        anthropic_reply(text="How wide should the photo be?"),
        anthropic_reply(tool_use("done", {})),
    ],
    "openai-cua": [
        responses_reply(output_message("How wide should the photo be?")),
        responses_reply(function_call("done", {})),
    ],
}


@pytest.mark.parametrize("adapter", list(TEXT_TURNS))
@pytest.mark.parametrize("policy", ["ask", "done"])
async def test_a_text_only_turn_is_read_by_the_runs_policy(
    adapter: str, policy: str, tmp_path: Path
) -> None:
    """`ask`: a turn of text without a tool call is the agent's question to the user;
    `done` (the default): it is a DONE, its text a summary. The policy is recorded."""
    folder = tmp_path / "tasks" / "gimp"
    folder.mkdir(parents=True)
    (folder / "adapter-ask.yaml").write_text(ASK_TASK)
    task = load_task(folder / "adapter-ask.yaml")
    with FakeEndpoint(TEXT_TURNS[adapter]) as endpoint, Store(tmp_path / "db.sqlite") as store:
        agent = AdapterAgent(config(endpoint, adapter, text_turn=policy))
        runner = EpisodeRunner(task, StillDesktop(), agent, SimulatedUser(), store, backend="local")
        result = await runner.run()
        steps = store.steps(result.episode_id)
        record = store.get_episode(result.episode_id)
    assert record.config["agent_config"]["text_turn"] == policy
    first = steps[0].agent_info
    assert first is not None and first["text_turn"] == policy
    assert first["content"] == "How wide should the photo be?"
    told = request_text(endpoint.received[0].body)
    if policy == "ask":
        assert [s.description for s in steps] == ["ASK: How wide should the photo be?", "DONE"]
        assert "Make it 400 pixels wide." in request_text(endpoint.received[1].body)
        assert "without a tool call is your question to the user" in told
    else:
        assert [s.description for s in steps] == ["DONE"] and len(endpoint.received) == 1
        assert "answer with a short summary and no tool call" in told
    assert result.status == "finished" and result.end_reason == "done"


async def test_an_empty_text_only_turn_asks_nothing() -> None:
    replies = [anthropic_reply(text=" "), anthropic_reply(tool_use("done", {}))]
    with FakeEndpoint(replies) as endpoint:
        agent = await started(config(endpoint, "anthropic", text_turn="ask"))
        with pytest.raises(MalformedAction, match="neither a tool call nor text"):
            await agent.decide(observation())
        assert await agent.decide(observation(1)) == Done()
        await agent.close()


async def test_conversation_labels_are_the_step_logs_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The ASK of step-log row 2 is labelled step 2 wherever the conversation is shown:
    in the model's next request and in `deskloop episodes show`."""
    from app.cli import main

    folder = tmp_path / "tasks" / "gimp"
    folder.mkdir(parents=True)
    (folder / "adapter-ask.yaml").write_text(ASK_TASK)
    task = load_task(folder / "adapter-ask.yaml")
    replies = [
        code_reply("pyautogui.press('a')\npyautogui.press('b')"),
        code_reply('ASK("How wide?")'),
        code_reply("DONE"),
    ]
    db = tmp_path / "db.sqlite"
    with FakeEndpoint(replies) as endpoint, Store(db) as store:
        agent = AdapterAgent(config(endpoint, "pyautogui"))
        runner = EpisodeRunner(task, StillDesktop(), agent, SimulatedUser(), store, backend="local")
        result = await runner.run()
        steps = store.steps(result.episode_id)
    assert [(s.idx, s.description) for s in steps] == [
        (0, "key(a)"),
        (1, "key(b)"),
        (2, "ASK: How wide?"),
        (3, "DONE"),
    ]
    told = endpoint.received[2].body["messages"][-1]["content"][0]["text"]
    assert "[start] User (instruction): Resize the photo." in told
    assert "[step 2] You (question): How wide?" in told
    assert "[after step 2] User (answer): Make it 400 pixels wide." in told
    assert "\nstep 2: " in told  # the model's own answer to row 2, the same number
    assert main(["--db", str(db), "episodes", "show", str(result.episode_id)]) == 0
    shown = [" ".join(line.split()) for line in capsys.readouterr().out.splitlines()]
    assert "[start] user instruction Resize the photo." in shown
    assert "[step 2] agent question How wide?" in shown
    assert "[after step 2] user answer Make it 400 pixels wide." in shown
    assert "[step 3] agent done DONE" in shown
    assert any(line.startswith("2 ASK: How wide? ") for line in shown)  # the row itself


@pytest.mark.parametrize("adapter", ["anthropic", "openai-cua", "uitars"])
async def test_a_model_that_never_answers_is_an_infrastructure_error_within_its_deadline(
    adapter: str, tmp_path: Path
) -> None:
    from tests.endpoints.test_hung_endpoint import STARTUP, make_task
    from tests.fake_openai import hang

    task = make_task(tmp_path, seconds=600)
    with FakeEndpoint([hang(60)]) as endpoint, Store(tmp_path / "db.sqlite") as store:
        agent = AdapterAgent(config(endpoint, adapter, timeout=30.0, deadline=2.0))
        runner = EpisodeRunner(task, StillDesktop(), agent, SimulatedUser(), store, backend="local")
        started = time.monotonic()
        result = await runner.run()
        elapsed = time.monotonic() - started
        record = store.get_episode(result.episode_id)
    assert result.status == "error" and result.passed is None
    assert record.error_kind == "agent_unavailable"
    assert result.error is not None and "within the call's 2 s deadline" in result.error
    assert elapsed < 2.0 + STARTUP + 2.0


async def test_earlier_screenshots_come_with_the_answers_given_to_them() -> None:
    replies = [uitars_reply(f"hotkey(key='{k}')") for k in ("a", "b", "c")]
    with FakeEndpoint(replies) as endpoint:
        agent = await started(config(endpoint, "uitars", screenshots=2))
        for step in range(3):
            await agent.decide(observation(step))
        await agent.close()
    assert agent.record()["agent_config"]["screenshots"] == 2
    first, _, third = (r.body["messages"] for r in endpoint.received)
    assert [m["role"] for m in first] == ["system", "user"]
    # The current screen and the one before, with the answer given to it.
    assert [m["role"] for m in third] == ["system", "user", "assistant", "user"]
    assert third[1]["content"][0]["text"] == "The screen at step 1:"
    assert "hotkey(key='b')" in third[2]["content"]
