"""The LLM user against a real local HTTP server: answers from hidden details,
deterministic requests, answers cached on disk, no call without hidden details."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from app.llm_user import LLMUser, LLMUserConfig, UserUnavailable
from app.protocol import Protocol
from app.tasks.loader import load_task
from app.tasks.model import Task
from app.users import NO_FURTHER_INFORMATION
from tests.fake_openai import FakeEndpoint, error_reply, text_reply

TASK = """\
id: gimp-sized-poster
app: gimp
level: L1
title: Resize a poster
instruction: Make poster.png smaller and export it.
budget: {steps: 10, seconds: 60}
evaluate:
  all:
    - {check: file_exists, path: ~/Desktop/poster-small.png}
"""


def make_task(tmp_path: Path, hidden: str | None) -> Task:
    folder = tmp_path / "tasks" / "gimp"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "gimp-sized-poster.yaml").write_text(textwrap.dedent(TASK))
    if hidden is not None:
        (folder / "gimp-sized-poster.hidden.md").write_text(hidden)
    return load_task(folder / "gimp-sized-poster.yaml")


def user_for(task: Task, endpoint: FakeEndpoint, cache: Path, protocol: Protocol) -> LLMUser:
    config = LLMUserConfig(model="fake-user", base_url=endpoint.base_url, backoff=0.01)
    user = LLMUser(task, config, cache_dir=cache)
    user.bind_conversation(lambda: protocol.conversation)
    return user


async def test_answers_from_hidden_details_and_reuses_the_cache(tmp_path: Path) -> None:
    task = make_task(tmp_path, "The poster must be exactly 400 pixels wide.")
    cache = tmp_path / "cache"
    protocol = Protocol(task.instruction, [], max_steps=10, max_seconds=60)
    with FakeEndpoint([text_reply("400 pixels wide, please."), text_reply("JPEG.")]) as endpoint:
        user = user_for(task, endpoint, cache, protocol)
        answer = await user.answer("How wide?")
        assert answer == ("400 pixels wide, please.", "simulated")
        request = endpoint.received[0].body
        assert request["temperature"] == 0.0 and request["seed"] == 0
        assert "exactly 400 pixels wide" in request["messages"][0]["content"]
        assert "How wide?" in request["messages"][1]["content"]

        # The same episode again (a fresh user, same conversation): the cache answers.
        again = user_for(task, endpoint, cache, protocol)
        assert await again.answer("How wide?") == answer
        assert again.calls == 0 and len(endpoint.received) == 1

        # A different conversation is a different question.
        protocol.inject("Use the blue version.", "clarification")
        assert (await again.answer("How wide?"))[0] == "JPEG."
        assert len(endpoint.received) == 2


async def test_no_hidden_details_means_the_fixed_reply(tmp_path: Path) -> None:
    task = make_task(tmp_path, None)
    protocol = Protocol(task.instruction, [], max_steps=10, max_seconds=60)
    with FakeEndpoint([]) as endpoint:
        user = user_for(task, endpoint, tmp_path / "cache", protocol)
        assert await user.answer("How wide?") == (NO_FURTHER_INFORMATION, "simulated")
    assert endpoint.received == []


async def test_an_endpoint_that_stays_down_is_an_infrastructure_error(tmp_path: Path) -> None:
    task = make_task(tmp_path, "400 wide.")
    protocol = Protocol(task.instruction, [], max_steps=10, max_seconds=60)
    with FakeEndpoint([error_reply(503)] * 4) as endpoint:
        user = user_for(task, endpoint, tmp_path / "cache", protocol)
        with pytest.raises(UserUnavailable, match="after 3 retries"):
            await user.answer("How wide?")
    assert len(endpoint.received) == 4
    assert not any((tmp_path / "cache").rglob("*.json"))  # failures are not cached
