"""A model agent over any OpenAI-compatible chat-completions endpoint.

Each step is one stateless request: a system prompt, then one user message with
the whole conversation (the active instruction marked), the agent's recent
actions (and why any was rejected), and the screenshot as a data-URL image,
resized to fit `image_width` × `image_height`. Rebuilding the prompt every step
keeps requests valid on endpoints that refuse images or tool results in history.

The protocol's actions are offered as tools: the GUI actions plus `done`, `ask`
and `fail`, always all of them, so the tool list never tells the model whether
a task is ambiguous. A model without tool calling (`tool_mode="json"`, or a tools
request answered with plain text) answers in the JSON action format:

    {"action": "click", "x": 512, "y": 300}
    {"action": "type", "text": "hello"}
    {"action": "ask", "question": "Which size do you want?"}

(one object; a ```json fence around it is fine). Coordinates are pixels of the
screenshot sent and are scaled to the real screen.

Outcomes: an answer that is not a usable action raises `MalformedAction` (the
runner records a rejected step and asks again); HTTP 408/429/5xx, timeouts and
connection failures are retried with exponential backoff, then raise
`AgentUnavailable` (the episode ends as `error`); other 4xx answers raise
`AgentError`. The API key comes from the environment variable named by
`api_key_env` and is never logged or recorded.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import os
import random
import re
import time
from dataclasses import dataclass
from typing import Any, Literal

import httpx
import numpy as np
import numpy.typing as npt
from PIL import Image

from app.agents.base import AgentContext, Observation
from app.core.actions import (
    Action,
    Click,
    Drag,
    Move,
    Scroll,
    describe_action,
    parse_action,
)
from app.core.errors import ActionError, AgentError, AgentUnavailable, MalformedAction

ToolMode = Literal["tools", "json"]
RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
# Longest text of a raw answer kept in step_info (a model may ramble).
RAW_TEXT_LIMIT = 4000


@dataclass(frozen=True)
class OpenAIConfig:
    model: str
    base_url: str = "https://api.openai.com/v1"
    api_key_env: str = "OPENAI_API_KEY"
    """Name of the environment variable holding the key; unset = no Authorization."""
    image_width: int = 1280
    image_height: int = 800
    """The screenshot is scaled down (aspect kept) to fit this box; never up."""
    tool_mode: ToolMode = "tools"
    history: int = 12
    """How many recent actions are described in each request."""
    temperature: float = 0.0
    seed: int | None = 0
    max_tokens: int = 1024
    timeout: float = 120.0
    """Seconds for one HTTP request."""
    max_retries: int = 4
    backoff: float = 1.0
    """First retry delay in seconds; doubles per retry (with jitter), capped."""
    backoff_cap: float = 30.0

    def __post_init__(self) -> None:
        if not self.model:
            raise AgentError("openai agent: a model name is required (--model)")
        if self.image_width < 64 or self.image_height < 64:
            raise AgentError(
                f"openai agent: image size {self.image_width}x{self.image_height} is too small"
            )
        if self.tool_mode not in ("tools", "json"):
            raise AgentError(f"openai agent: tool_mode must be tools or json, not {self.tool_mode}")
        if self.max_retries < 0 or self.backoff < 0:
            raise AgentError("openai agent: max_retries and backoff must be >= 0")

    def public(self) -> dict[str, Any]:
        """The settings worth recording with an episode (never the key itself)."""
        return {
            "model": self.model,
            "base_url": self.base_url,
            "api_key_env": self.api_key_env,
            "image": [self.image_width, self.image_height],
            "tool_mode": self.tool_mode,
            "temperature": self.temperature,
            "seed": self.seed,
        }


SYSTEM_PROMPT = """\
You operate a Linux desktop for a user. Each turn you see a screenshot ({width}x{height} \
pixels; coordinates are pixels of this screenshot, origin top-left) and the conversation \
with the user. Reply with exactly one action.
GUI actions: click(x, y, button, count), move(x, y), drag(x1, y1, x2, y2), scroll(x, y, dy) \
(dy > 0 scrolls down, in wheel notches), type(text), key(combo) (e.g. "ctrl+shift+s", \
"enter", "alt+f4"), wait(seconds).
When the latest user request is satisfied, call done. If something is unclear and you \
need the user's input, call ask(question). If you cannot complete the task, call \
fail(reason). Earlier user messages stay in force unless a later one says otherwise.
"""

JSON_FORMAT_PROMPT = """\
Answer with one JSON object and nothing else, naming the action in "action" and its \
arguments as the other keys, for example {"action": "click", "x": 100, "y": 200} or \
{"action": "key", "combo": "ctrl+s"} or {"action": "ask", "question": "..."} or \
{"action": "done"}.
"""


def _prop(kind: str, description: str, **extra: Any) -> dict[str, Any]:
    return {"type": kind, "description": description, **extra}


_XY = {"x": _prop("integer", "x in screenshot pixels"), "y": _prop("integer", "y in pixels")}
_BUTTON = _prop("string", "mouse button", enum=["left", "middle", "right"])

TOOL_PARAMETERS: dict[str, tuple[str, dict[str, Any], list[str]]] = {
    "click": (
        "Click at a point (count 2 = double click).",
        {**_XY, "button": _BUTTON, "count": _prop("integer", "1, 2 or 3", enum=[1, 2, 3])},
        ["x", "y"],
    ),
    "move": ("Move the pointer to a point.", dict(_XY), ["x", "y"]),
    "drag": (
        "Press at (x1, y1), move to (x2, y2), release.",
        {
            "x1": _prop("integer", "start x"),
            "y1": _prop("integer", "start y"),
            "x2": _prop("integer", "end x"),
            "y2": _prop("integer", "end y"),
            "button": _BUTTON,
        },
        ["x1", "y1", "x2", "y2"],
    ),
    "scroll": (
        "Scroll the wheel at a point; dy > 0 scrolls down, < 0 up (notches).",
        {**_XY, "dy": _prop("integer", "wheel notches")},
        ["x", "y", "dy"],
    ),
    "type": ("Type text (use \\n for Enter).", {"text": _prop("string", "the text")}, ["text"]),
    "key": (
        "Press a key combination such as ctrl+s, enter, alt+f4.",
        {"combo": _prop("string", "key combo")},
        ["combo"],
    ),
    "wait": ("Wait before the next look.", {"seconds": _prop("number", "0..120")}, ["seconds"]),
    "done": ("The latest user request is satisfied.", {}, []),
    "ask": (
        "Ask the user a clarifying question (does not end the task).",
        {"question": _prop("string", "the question")},
        ["question"],
    ),
    "fail": ("Give up on the task.", {"reason": _prop("string", "why")}, ["reason"]),
}


def tool_definitions() -> list[dict[str, Any]]:
    """Every action of the protocol as an OpenAI tool, the same list for every task."""
    return [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": description,
                "parameters": {
                    "type": "object",
                    "properties": properties,
                    "required": required,
                    "additionalProperties": False,
                },
            },
        }
        for name, (description, properties, required) in TOOL_PARAMETERS.items()
    ]


# -- images and coordinates -----------------------------------------------------------


def fit_size(width: int, height: int, max_width: int, max_height: int) -> tuple[int, int]:
    """The largest size within the box with the screen's aspect; never larger than it."""
    scale = min(1.0, max_width / width, max_height / height)
    return max(1, round(width * scale)), max(1, round(height * scale))


def encode_screenshot(pixels: npt.NDArray[np.uint8], size: tuple[int, int]) -> str:
    """PNG data URL of the frame resized to `size` (CPU-bound: call in a thread)."""
    image = Image.fromarray(pixels, "RGB")
    if image.size != size:
        image = image.resize(size, Image.Resampling.LANCZOS)
    buffer = io.BytesIO()
    image.save(buffer, "PNG", compress_level=3)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


@dataclass(frozen=True)
class Scaler:
    """Maps points of the screenshot sent to points of the real screen."""

    sent: tuple[int, int]
    screen: tuple[int, int]

    def point(self, x: int, y: int, what: str) -> tuple[int, int]:
        sent_w, sent_h = self.sent
        if not (0 <= x < sent_w and 0 <= y < sent_h):
            raise ActionError(f"{what} ({x}, {y}) is outside the {sent_w}x{sent_h} screenshot")
        screen_w, screen_h = self.screen
        real_x = min(screen_w - 1, int((x + 0.5) * screen_w / sent_w))
        real_y = min(screen_h - 1, int((y + 0.5) * screen_h / sent_h))
        return real_x, real_y

    def action(self, action: Action) -> Action:
        match action:
            case Click(x, y, button, count):
                return Click(*self.point(x, y, "click"), button, count)
            case Move(x, y):
                return Move(*self.point(x, y, "move"))
            case Scroll(x, y, dy):
                return Scroll(*self.point(x, y, "scroll"), dy)
            case Drag(x1, y1, x2, y2, button):
                return Drag(
                    *self.point(x1, y1, "drag start"), *self.point(x2, y2, "drag end"), button
                )
        return action


# -- parsing answers ------------------------------------------------------------------

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def action_from_call(name: Any, arguments: Any) -> Action:
    """An action from a tool name and its arguments (a JSON string or a mapping).

    Raises:
        MalformedAction: unknown tool, arguments that are not JSON, invalid values.
    """
    raw = {"name": name, "arguments": arguments}
    if not isinstance(name, str) or name not in TOOL_PARAMETERS:
        known = ", ".join(TOOL_PARAMETERS)
        raise MalformedAction(f"unknown tool {name!r}; the tools are {known}", raw)
    if isinstance(arguments, str):
        text = arguments.strip() or "{}"
        try:
            arguments = json.loads(text)
        except json.JSONDecodeError as exc:
            raise MalformedAction(f"{name}: arguments are not valid JSON ({exc})", raw) from None
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise MalformedAction(f"{name}: arguments must be a JSON object, got {arguments!r}", raw)
    try:
        return parse_action({"kind": name, **arguments}, where=f"tool {name}")
    except ActionError as exc:
        raise MalformedAction(str(exc), raw) from None


def action_from_text(text: str) -> Action:
    """An action from the JSON action format (see the module docstring).

    Raises:
        MalformedAction: no JSON object, or not a valid action.
    """
    fenced = _FENCE.search(text)
    candidate = fenced.group(1) if fenced else text
    start, end = candidate.find("{"), candidate.rfind("}")
    if start < 0 or end <= start:
        raise MalformedAction(
            'no action: expected a tool call or a JSON object like {"action": "done"}', text
        )
    try:
        data = json.loads(candidate[start : end + 1])
    except json.JSONDecodeError as exc:
        raise MalformedAction(f"the JSON action is not valid JSON ({exc})", text) from None
    if not isinstance(data, dict) or "action" not in data:
        raise MalformedAction('the JSON action needs an "action" key naming the tool', text)
    name = data.pop("action")
    try:
        return action_from_call(name, data)
    except MalformedAction as exc:
        raise MalformedAction(exc.message, text) from None


# -- the agent ------------------------------------------------------------------------


@dataclass
class _Turn:
    step: int
    description: str
    rejected: str | None = None


class OpenAIAgent:
    """An `Agent` backed by an OpenAI-compatible /chat/completions endpoint."""

    def __init__(
        self, config: OpenAIConfig, *, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self.config = config
        self.name = f"openai:{config.model}"
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._context: AgentContext | None = None
        self._history: list[_Turn] = []
        self._info: dict[str, Any] | None = None
        self._rng = random.Random(config.seed)
        self._retry_after: float | None = None

    @property
    def url(self) -> str:
        return self.config.base_url.rstrip("/") + "/chat/completions"

    async def start(self, context: AgentContext) -> None:
        self._context = context
        self._history = []
        self._info = None
        if self._client is None:
            headers = {"Content-Type": "application/json"}
            key = os.environ.get(self.config.api_key_env, "")
            if key:
                headers["Authorization"] = f"Bearer {key}"
            self._client = httpx.AsyncClient(
                headers=headers,
                timeout=httpx.Timeout(self.config.timeout),
                transport=self._transport,
            )

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def step_info(self) -> dict[str, Any] | None:
        return self._info

    async def decide(self, observation: Observation) -> Action:
        if self._client is None or self._context is None:
            raise AgentError("openai agent: decide() before start()")
        frame = observation.frame
        screen = (frame.width, frame.height)
        sent = fit_size(*screen, self.config.image_width, self.config.image_height)
        image_url = await asyncio.to_thread(encode_screenshot, frame.pixels, sent)
        body = self._request_body(observation, sent, image_url)
        self._info = {"model": self.config.model, "mode": self.config.tool_mode}
        data, latency, retries = await self._post(body)
        raw_usage = data.get("usage")
        usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
        self._info.update(
            {
                "latency_s": round(latency, 4),
                "retries": retries,
                "prompt_tokens": usage.get("prompt_tokens"),
                "completion_tokens": usage.get("completion_tokens"),
                "total_tokens": usage.get("total_tokens"),
                "sent_size": list(sent),
                "screen_size": list(screen),
            }
        )
        try:
            action = self._parse(data)
            action = Scaler(sent, screen).action(action)
        except ActionError as exc:
            rejected = MalformedAction(str(exc), self._info.get("tool_call"))
            raise self._rejected(observation, rejected) from None
        except MalformedAction as exc:
            raise self._rejected(observation, exc) from None
        self._history.append(_Turn(observation.steps_taken, describe_action(action)))
        return action

    def _rejected(self, observation: Observation, exc: MalformedAction) -> MalformedAction:
        self._history.append(_Turn(observation.steps_taken, "(rejected answer)", exc.message))
        assert self._info is not None
        self._info["rejected"] = exc.message
        return exc

    # -- the request --------------------------------------------------------------------

    def _request_body(
        self, observation: Observation, sent: tuple[int, int], image_url: str
    ) -> dict[str, Any]:
        config = self.config
        system = SYSTEM_PROMPT.format(width=sent[0], height=sent[1])
        if config.tool_mode == "json":
            system += JSON_FORMAT_PROMPT
        body: dict[str, Any] = {
            "model": config.model,
            "messages": [
                {"role": "system", "content": system},
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": self._describe_state(observation)},
                        {"type": "image_url", "image_url": {"url": image_url}},
                    ],
                },
            ],
            "temperature": config.temperature,
            "max_tokens": config.max_tokens,
        }
        if config.seed is not None:
            body["seed"] = config.seed
        if config.tool_mode == "tools":
            body["tools"] = tool_definitions()
            body["tool_choice"] = "auto"
        return body

    def _describe_state(self, observation: Observation) -> str:
        lines = ["Conversation so far (oldest first):"]
        active = observation.active_message
        for message in observation.conversation:
            who = "User" if message.role == "user" else "You"
            mark = "  <- ACTIVE INSTRUCTION" if message is active else ""
            lines.append(f"[step {message.step}] {who} ({message.kind}): {message.text}{mark}")
        recent = self._history[-self.config.history :]
        if recent:
            lines.append("")
            lines.append("Your recent actions:")
            for turn in recent:
                line = f"step {turn.step}: {turn.description}"
                if turn.rejected:
                    line += f" -- REJECTED: {turn.rejected}"
                lines.append(line)
        lines.append("")
        lines.append(f"Steps taken: {observation.steps_taken}. The current screenshot follows.")
        return "\n".join(lines)

    async def _post(self, body: dict[str, Any]) -> tuple[dict[str, Any], float, int]:
        """POST with bounded retries; returns (JSON body, seconds of the last try, retries)."""
        assert self._client is not None
        config = self.config
        problem = ""
        for attempt in range(config.max_retries + 1):
            if attempt:
                await asyncio.sleep(self._delay(attempt, problem))
            started = time.monotonic()
            try:
                response = await self._client.post(self.url, json=body)
            except httpx.TimeoutException:
                problem = f"timed out after {config.timeout:g} s"
                continue
            except httpx.TransportError as exc:
                problem = f"connection failed: {type(exc).__name__}: {exc}"
                continue
            latency = time.monotonic() - started
            if response.status_code in RETRY_STATUSES:
                problem = f"HTTP {response.status_code}: {_excerpt(response.text)}"
                self._retry_after = _retry_after(response)
                continue
            if response.status_code >= 400:
                raise AgentError(
                    f"model endpoint {self.url} refused the request: HTTP "
                    f"{response.status_code}: {_excerpt(response.text)}"
                )
            try:
                data = response.json()
            except ValueError:
                problem = f"HTTP {response.status_code} with a body that is not JSON: " + _excerpt(
                    response.text
                )
                continue
            if not isinstance(data, dict):
                problem = f"answer is not a JSON object: {_excerpt(response.text)}"
                continue
            return data, latency, attempt
        raise AgentUnavailable(
            f"model endpoint {self.url} failed after {config.max_retries} retries; last: {problem}"
        )

    def _delay(self, attempt: int, problem: str) -> float:
        cap = self.config.backoff_cap
        hinted, self._retry_after = self._retry_after, None
        if hinted is not None:
            return min(cap, hinted)
        base = self.config.backoff * 2 ** (attempt - 1)
        return float(min(cap, base * (0.5 + self._rng.random() / 2)))

    def _parse(self, data: dict[str, Any]) -> Action:
        assert self._info is not None
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise MalformedAction("the answer has no choices", _clip(data))
        choice = choices[0]
        message = choice.get("message")
        self._info["finish_reason"] = choice.get("finish_reason")
        if not isinstance(message, dict):
            raise MalformedAction("the answer's choice has no message", _clip(data))
        content = message.get("content")
        if isinstance(content, list):
            # Some endpoints answer with content parts, like the request's.
            content = "".join(
                part.get("text", "")
                for part in content
                if isinstance(part, dict) and isinstance(part.get("text"), str)
            )
        if isinstance(content, str) and content:
            self._info["content"] = content[:RAW_TEXT_LIMIT]
        calls = message.get("tool_calls") or []
        legacy = message.get("function_call")
        if not calls and isinstance(legacy, dict):
            # The pre-tools function-calling shape, still sent by some servers.
            calls = [{"function": legacy}]
        if calls:
            if not isinstance(calls, list) or not isinstance(calls[0], dict):
                raise MalformedAction("tool_calls is not a list of calls", _clip(message))
            function = calls[0].get("function") or {}
            name, arguments = function.get("name"), function.get("arguments")
            self._info["tool_call"] = {"name": name, "arguments": arguments}
            if len(calls) > 1:
                # One action per step: the first call is taken, the rest recorded.
                self._info["ignored_tool_calls"] = len(calls) - 1
            return action_from_call(name, arguments)
        if isinstance(content, str) and content.strip():
            action = action_from_text(content)
            self._info["json_action"] = True
            return action
        raise MalformedAction("the answer has neither a tool call nor text", _clip(message))


def _excerpt(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _clip(value: Any) -> Any:
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return value if len(text) <= RAW_TEXT_LIMIT else text[:RAW_TEXT_LIMIT]


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None
