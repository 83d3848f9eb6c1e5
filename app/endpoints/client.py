"""One client for OpenAI-compatible `POST {base_url}/chat/completions`.

The retry policy, the same for every caller:

- retried: HTTP 408, 409, 425, 429 and every 5xx; timeouts; connection failures
  (refused, reset, closed before an answer); a 2xx whose body is not a JSON object
  (a proxy's error page, a cut-off body);
- not retried: any other 4xx (a bad key, an unknown model, a malformed request),
  which raises `EndpointRefused` at once, and a URL that cannot be used;
- at most `max_retries` retries, waiting `backoff` seconds, then twice that and so on
  (plus up to `backoff` of random jitter, so the desktops of a batch do not retry in
  step), each wait capped at `backoff_cap`. A `Retry-After` (or `retry-after-ms`)
  header replaces that wait, even past the cap: the server knows when it will take
  requests again.
- every call, retries and waits included, ends within `deadline` seconds. A request
  still running then is cancelled, and a wait that would end past the deadline is
  not started: the call gives up at once instead.

When the retries or the deadline run out, `EndpointUnavailable` says why and what
the last try met. Each request has explicit httpx timeouts: `timeout` to send, read
and get a pooled connection, and at most `CONNECT_TIMEOUT` to connect, so a host that
is down is retried soon instead of holding a whole `timeout`. httpx's timeouts hold
per read, so a server that trickles a byte at a time would never meet them: each try
is also bounded by `timeout` over its whole response, and the call by `deadline`.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from types import TracebackType
from typing import Any, ClassVar, Literal, NoReturn

import httpx
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
    stop_before_delay,
    wait_exponential,
    wait_random,
)

from app.core.errors import DeskLoopError, EndpointRefused, EndpointUnavailable

# Statuses below 500 that mean "not now" rather than "not this request".
RETRY_STATUSES = frozenset({408, 409, 425, 429})
CONNECT_TIMEOUT = 10.0
KeyHeader = Literal["bearer", "x-api-key"]
"""Seconds to open a connection (or `timeout`, if shorter)."""


@dataclass(frozen=True)
class EndpointConfig:
    """The settings of every caller of an endpoint. `DeskLoopConfig` and
    `LLMUserConfig` extend it with their own fields and defaults, so the settings are
    declared and checked once and the client reads them straight from either."""

    model: str
    base_url: str = "https://api.openai.com/v1"
    api_key_env: str = "OPENAI_API_KEY"
    """Name of the environment variable holding the key; unset = no Authorization."""
    temperature: float = 0.0
    seed: int | None = 0
    max_tokens: int = 1024
    timeout: float = 60.0
    """Seconds for one request (see `CONNECT_TIMEOUT` for connecting)."""
    max_retries: int = 3
    backoff: float = 1.0
    """First retry delay in seconds; doubles per retry (with jitter), capped."""
    backoff_cap: float = 30.0
    deadline: float = 300.0
    """Seconds for one call, every retry and wait included."""

    # How a subclass names itself, its model option and its errors.
    who: ClassVar[str] = "endpoint"
    model_option: ClassVar[str] = "--model"
    config_error: ClassVar[type[DeskLoopError]] = DeskLoopError
    endpoint_name: ClassVar[str] = "model endpoint"
    """How errors of a call name the endpoint, before its URL."""

    def __post_init__(self) -> None:
        if not self.model:
            raise self.config_error(f"{self.who}: a model name is required ({self.model_option})")
        if self.max_retries < 0 or self.backoff < 0 or self.backoff_cap < 0:
            raise self.config_error(
                f"{self.who}: max_retries, backoff and backoff_cap must be >= 0"
            )
        if self.timeout <= 0 or self.deadline <= 0:
            raise self.config_error(f"{self.who}: timeout and deadline must be positive")

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"


@dataclass(frozen=True)
class Completion:
    """A chat completion the endpoint answered with."""

    data: dict[str, Any]
    """The answer's JSON object."""
    latency: float
    """Seconds of the request that succeeded."""
    retries: int


class EndpointClient:
    """Chat completions from one endpoint, under the module's retry policy.

    Use it as `async with EndpointClient(config) as client:` or call `aclose()`; its
    connection pool is opened by the first request.
    """

    def __init__(
        self,
        config: EndpointConfig,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        key_header: KeyHeader = "bearer",
    ) -> None:
        self.config = config
        self._transport = transport
        self.key_header: KeyHeader = key_header
        """How the key is sent: `Authorization: Bearer KEY` (OpenAI and compatible
        servers) or `x-api-key: KEY` (Anthropic's Messages API)."""
        self._http: httpx.AsyncClient | None = None
        self.requests = 0
        """HTTP requests sent, retries included."""
        self.failing: str | None = None
        """What the latest call's last failed try met while that call has not
        answered (None once it answers, or while no try of it has failed): whoever cut
        a call short (the runner's time budget) tells a failing endpoint from a slow
        one by it."""

    async def __aenter__(self) -> EndpointClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    async def complete(self, messages: list[dict[str, Any]], **extra: Any) -> Completion:
        """One chat completion of `messages` with the config's model and sampling;
        `extra` adds request fields (tools, tool_choice).

        Raises:
            EndpointRefused: a 4xx other than 408/409/425/429, or an unusable URL.
            EndpointUnavailable: the retries or the deadline ran out.
        """
        body = chat_body(self.config, messages, **extra)
        return await _Call(self, self.config.url, body).run()

    async def post(
        self, path: str, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> Completion:
        """`body` as it is, POSTed to `{base_url}{path}` under the same retry policy and
        deadline as `complete`: for APIs other than chat completions (Anthropic's
        Messages, OpenAI's Responses), whose bodies their callers build whole.

        Raises:
            EndpointRefused: a 4xx other than 408/409/425/429, or an unusable URL.
            EndpointUnavailable: the retries or the deadline ran out.
        """
        url = self.config.base_url.rstrip("/") + path
        return await _Call(self, url, body, headers or {}).run()

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            headers = {"Content-Type": "application/json"}
            # Read when the pool opens, never stored elsewhere, logged or put in errors.
            key = os.environ.get(self.config.api_key_env, "")
            if key and self.key_header == "x-api-key":
                headers["x-api-key"] = key
            elif key:
                headers["Authorization"] = f"Bearer {key}"
            timeout = self.config.timeout
            self._http = httpx.AsyncClient(
                headers=headers,
                timeout=httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT)),
                transport=self._transport,
            )
        return self._http


class _Retryable(Exception):
    """One try failed in a way the policy retries."""

    def __init__(self, problem: str, retry_after: float | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.retry_after = retry_after


class _Call:
    """One call of `EndpointClient.complete`: its tries, waits and last problem
    (per call, so concurrent calls on one client never share them)."""

    def __init__(
        self,
        client: EndpointClient,
        url: str,
        body: dict[str, Any],
        headers: dict[str, str] | None = None,
    ) -> None:
        self.client = client
        self.config = client.config
        self.url = url
        self.body = body
        self.headers = headers or {}
        self.where = f"{self.config.endpoint_name} {url}"
        self.tries = 0
        self.problem = ""
        # Built from two long-stable waits, not wait_exponential_jitter, whose
        # `initial` tenacity 9.2 deprecates; `_wait` applies the cap.
        self._backoff = wait_exponential(multiplier=self.config.backoff) + wait_random(
            0, self.config.backoff
        )

    async def run(self) -> Completion:
        config = self.config
        self.client.failing = None
        retrying = AsyncRetrying(
            retry=retry_if_exception_type(_Retryable),
            # Tenacity computes the wait before asking `stop`, so stop_before_delay
            # refuses a wait (Retry-After included) that would end past the deadline.
            stop=stop_after_attempt(config.max_retries + 1) | stop_before_delay(config.deadline),
            wait=self._wait,
            retry_error_callback=self._give_up,
        )
        try:
            async with asyncio.timeout(config.deadline) as deadline:
                result: Completion = await retrying(self._try)
        except TimeoutError:
            if not deadline.expired():
                raise
            last = self.problem or "no answer yet"
            raise EndpointUnavailable(
                f"{self.where} did not answer within the call's {config.deadline:g} s "
                f"deadline (tries: {self.tries}); last: {last}"
            ) from None
        self.client.failing = None
        return result

    async def _try(self) -> Completion:
        config = self.config
        self.tries += 1
        self.client.requests += 1
        started = time.monotonic()
        try:
            # The whole response, not each read: a trickling server meets this too.
            async with asyncio.timeout(config.timeout) as whole:
                response = await self.client._client().post(
                    self.url, json=self.body, headers=self.headers
                )
        except TimeoutError:
            if not whole.expired():
                raise  # the call's deadline, handled in `run`
            raise self._retry(f"timed out after {config.timeout:g} s (no whole answer)") from None
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
            raise EndpointRefused(f"{self.where} is not a usable URL: {exc}") from None
        except httpx.TimeoutException as exc:
            raise self._retry(
                f"timed out after {config.timeout:g} s ({type(exc).__name__})"
            ) from None
        except httpx.TransportError as exc:
            raise self._retry(f"connection failed: {type(exc).__name__}: {exc}") from None
        latency = time.monotonic() - started
        status = response.status_code
        if status in RETRY_STATUSES or 500 <= status <= 599:
            hint = retry_after(response)
            said = "" if hint is None else f" (Retry-After {hint:g} s)"
            raise self._retry(f"HTTP {status}{said}: {excerpt(response.text)}", hint)
        if status >= 400:
            raise EndpointRefused(
                f"{self.where} refused the request: HTTP {status}: {excerpt(response.text)}"
            )
        try:
            data = response.json()
        except ValueError:
            raise self._retry(
                f"HTTP {status} with a body that is not JSON: {excerpt(response.text)}"
            ) from None
        if not isinstance(data, dict):
            raise self._retry(f"answer is not a JSON object: {excerpt(response.text)}")
        return Completion(data, latency, self.tries - 1)

    def _retry(self, problem: str, retry_after: float | None = None) -> _Retryable:
        self.problem = problem  # kept for the error if the deadline cuts the next try
        self.client.failing = problem
        return _Retryable(problem, retry_after)

    def _wait(self, state: RetryCallState) -> float:
        failure = state.outcome.exception() if state.outcome else None
        if isinstance(failure, _Retryable) and failure.retry_after is not None:
            return failure.retry_after
        return min(self.config.backoff_cap, float(self._backoff(state)))

    def _give_up(self, state: RetryCallState) -> NoReturn:
        """Tenacity's stop held: the retries or the deadline ran out."""
        config = self.config
        if state.attempt_number > config.max_retries:
            raise EndpointUnavailable(
                f"{self.where} failed after {config.max_retries} retries; last: {self.problem}"
            )
        raise EndpointUnavailable(
            f"{self.where} gave up after {state.attempt_number - 1} retries: waiting "
            f"{state.upcoming_sleep:g} s more would pass the call's {config.deadline:g} s "
            f"deadline; last: {self.problem}"
        )


def chat_body(
    config: EndpointConfig, messages: list[dict[str, Any]], **extra: Any
) -> dict[str, Any]:
    """A chat-completions request of `messages` with the config's model and sampling
    (what `EndpointClient.complete` sends); `extra` adds or replaces fields."""
    body: dict[str, Any] = {
        "model": config.model,
        "messages": messages,
        "temperature": config.temperature,
        "max_tokens": config.max_tokens,
    }
    if config.seed is not None:
        body["seed"] = config.seed
    return body | extra


def retry_after(response: httpx.Response) -> float | None:
    """Seconds the server asks to wait: `retry-after-ms` (OpenAI's), or `Retry-After`
    in seconds or as an HTTP date; None without a usable one."""
    millis = response.headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def excerpt(text: str, limit: int = 300) -> str:
    """`text` on one line, cut to `limit` characters (an error page may be long)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def message_text(content: Any) -> str | None:
    """A message's `content` as text: the string, or its text parts joined (some
    endpoints answer with parts, like a request's); None when it holds no text."""
    if isinstance(content, list):
        content = "".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return content if isinstance(content, str) and content else None
