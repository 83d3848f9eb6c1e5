"""The one endpoint client against a real local HTTP server: what is retried and what
is not, the bound on retries, Retry-After, the total deadline of a call even when the
server hangs, and the model agent and the LLM user both going through it."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.agents.adapters.deskloop import DeskLoopAgent, DeskLoopConfig
from app.agents.base import AgentContext
from app.core.actions import Done
from app.core.errors import (
    AgentError,
    AgentUnavailable,
    DeskLoopError,
    EndpointRefused,
    EndpointUnavailable,
)
from app.endpoints.client import Completion, EndpointClient, EndpointConfig, retry_after
from app.users.llm import LLMUser, LLMUserConfig, UserError, UserUnavailable
from tests.agents.test_openai_agent import NoProbe, observation
from tests.fake_openai import (
    FakeEndpoint,
    Reply,
    dropped,
    error_reply,
    hang,
    text_reply,
    tool_reply,
)
from tests.users.test_llm_user import make_task

MESSAGES = [{"role": "user", "content": "Hello?"}]
# How far past its deadline a call may end on a loaded 2-core machine: the event
# loop's lag and the cancelled request's clean-up, nothing more.
SLACK = 1.0


def settings(base_url: str, **overrides: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "model": "fake-model",
        "base_url": base_url,
        "backoff": 0.01,
        "max_retries": 3,
        "timeout": 5.0,
        "deadline": 30.0,
    }
    return values | overrides


async def complete(base_url: str, **overrides: Any) -> tuple[Completion, int]:
    """One call; the completion and the requests it took."""
    async with EndpointClient(EndpointConfig(**settings(base_url, **overrides))) as client:
        return await client.complete(MESSAGES), client.requests


async def within(call: Awaitable[Any], seconds: float) -> Any:
    """Await `call`, failing the test if it runs past `seconds` (the condition waited
    for is the call's end, not a sleep)."""
    try:
        return await asyncio.wait_for(call, seconds)
    except TimeoutError:
        pytest.fail(f"the call ran past {seconds:g} s")


@pytest.mark.parametrize(
    "failure",
    [
        *(error_reply(status) for status in (408, 409, 425, 429, 500, 502, 503, 504, 599)),
        dropped(),
        Reply(body="<html>502 Bad Gateway</html>"),  # a proxy's page with a 200
        Reply(body=[1, 2]),  # JSON, but not an object
    ],
    ids=lambda reply: "drop" if reply.drop else f"{reply.status}-{type(reply.body).__name__}",
)
async def test_transient_failures_are_retried(failure: Reply) -> None:
    with FakeEndpoint([failure, failure, text_reply("Fine.")]) as endpoint:
        completion, requests = await complete(endpoint.base_url)
    assert completion.retries == 2 and requests == 3 and len(endpoint.received) == 3
    assert completion.data["choices"][0]["message"]["content"] == "Fine."
    assert completion.latency >= 0


async def test_retries_stop_at_the_bound() -> None:
    with (
        FakeEndpoint([error_reply(503)] * 10) as endpoint,
        pytest.raises(EndpointUnavailable) as caught,
    ):
        await complete(endpoint.base_url, max_retries=2)
    assert len(endpoint.received) == 3
    message = str(caught.value)
    assert "failed after 2 retries" in message and "HTTP 503" in message
    assert endpoint.base_url in message


async def test_a_refused_connection_is_retried_up_to_the_bound() -> None:
    # A port that was just free: nothing listens there, every connect is refused.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = EndpointConfig(**settings(f"http://127.0.0.1:{port}/v1", max_retries=2))
    async with EndpointClient(config) as client:
        with pytest.raises(EndpointUnavailable, match="connection failed: ConnectError"):
            await client.complete(MESSAGES)
        assert client.requests == 3


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_a_refused_request_is_not_retried(status: int) -> None:
    with (
        FakeEndpoint([error_reply(status), text_reply("never sent")]) as endpoint,
        pytest.raises(EndpointRefused) as caught,
    ):
        await complete(endpoint.base_url)
    assert len(endpoint.received) == 1
    assert f"refused the request: HTTP {status}" in str(caught.value)
    assert not isinstance(caught.value, EndpointUnavailable)


async def test_an_unusable_url_is_refused_not_retried() -> None:
    config = EndpointConfig(**settings("ftp://127.0.0.1/v1"))
    async with EndpointClient(config) as client:
        with pytest.raises(EndpointRefused, match="not a usable URL"):
            await client.complete(MESSAGES)
        assert client.requests == 1


@pytest.mark.parametrize(
    ("headers", "seconds"), [({"Retry-After": "1"}, 1.0), ({"retry-after-ms": "400"}, 0.4)]
)
async def test_retry_after_is_honoured(headers: dict[str, str], seconds: float) -> None:
    # The backoff alone would wait 0.01 s; the server's hint wins.
    with FakeEndpoint([error_reply(429, headers), text_reply("Now.")]) as endpoint:
        completion, _ = await complete(endpoint.base_url)
    first, second = endpoint.received
    assert completion.retries == 1
    assert second.at - first.at >= seconds


async def test_a_retry_after_past_the_deadline_gives_up_at_once() -> None:
    with FakeEndpoint([error_reply(429, {"Retry-After": "120"}), text_reply("late")]) as endpoint:
        started = time.monotonic()
        with pytest.raises(EndpointUnavailable) as caught:
            await within(complete(endpoint.base_url, deadline=5.0), 5.0)
        elapsed = time.monotonic() - started
    assert len(endpoint.received) == 1
    assert "would pass the call's 5 s deadline" in str(caught.value)
    assert "HTTP 429 (Retry-After 120 s)" in str(caught.value)
    assert elapsed < 5.0  # it did not wait for the deadline either


async def test_the_deadline_holds_when_the_server_hangs() -> None:
    # Each request may take 30 s, but the whole call has 1 s.
    with FakeEndpoint([hang(60)]) as endpoint:
        started = time.monotonic()
        with pytest.raises(EndpointUnavailable) as caught:
            await within(complete(endpoint.base_url, timeout=30.0, deadline=1.0), 1.0 + SLACK)
        elapsed = time.monotonic() - started
    assert elapsed >= 1.0
    assert "did not answer within the call's 1 s deadline (tries: 1)" in str(caught.value)


async def test_the_deadline_cuts_the_retries_short() -> None:
    # Every try times out after 0.4 s; ten retries would take over 4 s, the call has 1.
    with FakeEndpoint([hang(5)] * 12) as endpoint:
        started = time.monotonic()
        with pytest.raises(EndpointUnavailable) as caught:
            await within(
                complete(endpoint.base_url, timeout=0.4, max_retries=10, deadline=1.0),
                1.0 + SLACK,
            )
        elapsed = time.monotonic() - started
    assert 2 <= len(endpoint.received) <= 4 and elapsed >= 1.0
    assert "deadline" in str(caught.value) and "timed out after 0.4 s" in str(caught.value)


def test_retry_after_as_an_http_date() -> None:
    when = datetime.now(UTC) + timedelta(seconds=10)
    response = httpx.Response(429, headers={"Retry-After": format_datetime(when, usegmt=True)})
    seconds = retry_after(response)
    assert seconds is not None and 8.0 <= seconds <= 10.0
    assert retry_after(httpx.Response(429, headers={"Retry-After": "soon"})) is None
    assert retry_after(httpx.Response(429)) is None


# -- the agent and the LLM user share it -----------------------------------------------

Call = Callable[[str, Path, dict[str, Any]], Awaitable[object]]


async def agent_call(base_url: str, tmp_path: Path, overrides: dict[str, Any]) -> object:
    config = DeskLoopConfig(
        image_width=640, image_height=640, **settings(base_url, model="fake-vision-1", **overrides)
    )
    agent = DeskLoopAgent(config)
    await agent.start(AgentContext("t", 1280, 800, NoProbe()))
    try:
        return await agent.decide(observation())
    finally:
        await agent.close()


async def user_call(base_url: str, tmp_path: Path, overrides: dict[str, Any]) -> object:
    config = LLMUserConfig(**settings(base_url, model="fake-user", **overrides))
    user = LLMUser(make_task(tmp_path, "400 pixels wide."), config, cache_dir=tmp_path / "cache")
    return await user.answer("How wide?")


# (how to call, its answer from the endpoint, what that gives, its errors)
CALLERS: dict[str, tuple[Call, Reply, object, type[DeskLoopError], type[DeskLoopError]]] = {
    "agent": (agent_call, tool_reply("done"), Done(), AgentUnavailable, AgentError),
    "user": (
        user_call,
        text_reply("400 wide."),
        ("400 wide.", "simulated"),
        UserUnavailable,
        UserError,
    ),
}


@pytest.fixture
def spied(monkeypatch: pytest.MonkeyPatch) -> list[EndpointClient]:
    """The clients whose `complete` was called."""
    calls: list[EndpointClient] = []
    real = EndpointClient.complete

    async def complete(
        self: EndpointClient, messages: list[dict[str, Any]], **extra: Any
    ) -> Completion:
        calls.append(self)
        return await real(self, messages, **extra)

    monkeypatch.setattr(EndpointClient, "complete", complete)
    return calls


@pytest.mark.parametrize("who", CALLERS)
async def test_both_retry_by_the_one_policy(
    who: str, tmp_path: Path, spied: list[EndpointClient]
) -> None:
    call, ok, expected, _, _ = CALLERS[who]
    script = [error_reply(429, {"Retry-After": "0"}), error_reply(502), dropped(), ok]
    with FakeEndpoint(script) as endpoint:
        assert await call(endpoint.base_url, tmp_path, {}) == expected
    assert len(endpoint.received) == 4 and len(spied) == 1


@pytest.mark.parametrize("who", CALLERS)
async def test_both_stop_at_the_bound(
    who: str, tmp_path: Path, spied: list[EndpointClient]
) -> None:
    call, _, _, unavailable, _ = CALLERS[who]
    with (
        FakeEndpoint([error_reply(500)] * 5) as endpoint,
        pytest.raises(unavailable, match="failed after 2 retries") as caught,
    ):
        await call(endpoint.base_url, tmp_path, {"max_retries": 2})
    assert len(endpoint.received) == 3 and len(spied) == 1
    assert caught.value.infrastructure  # a batch retries the episode on a fresh desktop


@pytest.mark.parametrize("who", CALLERS)
async def test_neither_retries_a_refusal(
    who: str, tmp_path: Path, spied: list[EndpointClient]
) -> None:
    call, ok, _, unavailable, refused = CALLERS[who]
    with (
        FakeEndpoint([error_reply(400), ok]) as endpoint,
        pytest.raises(refused) as caught,
    ):
        await call(endpoint.base_url, tmp_path, {})
    # Not an infrastructure error: a batch does not run the episode again.
    assert not isinstance(caught.value, unavailable) and not caught.value.infrastructure
    assert caught.value.kind == {"agent": "endpoint_refused", "user": "user"}[who]
    assert "refused the request: HTTP 400" in str(caught.value)
    assert len(endpoint.received) == 1 and len(spied) == 1


@pytest.mark.parametrize("who", CALLERS)
async def test_both_keep_the_deadline_of_a_hung_server(
    who: str, tmp_path: Path, spied: list[EndpointClient]
) -> None:
    call, _, _, unavailable, _ = CALLERS[who]
    with (
        FakeEndpoint([hang(60)]) as endpoint,
        pytest.raises(unavailable, match="within the call's 1 s deadline"),
    ):
        await within(
            call(endpoint.base_url, tmp_path, {"timeout": 30.0, "deadline": 1.0}),
            1.0 + SLACK,
        )
    assert len(spied) == 1
