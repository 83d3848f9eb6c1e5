"""A real HTTP server speaking the OpenAI chat-completions shape, replaying a script.

Each POST (to /v1/chat/completions, or any path: the Anthropic Messages and OpenAI
Responses fakes of `tests/fake_providers.py` use the same server) takes the next
scripted reply (status, JSON or text body, headers, optional delay before answering,
a gate it waits on, or a dropped connection) and records the request and when it
came, so tests check what the agent sent as well as what it made of the answer. The
reply bodies follow the shape recorded from real endpoints (id, object, created, model,
choices[].message with tool_calls or content, usage).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    """Seconds before answering; cut short when the endpoint closes, so a test of a
    hung server does not leave a thread sleeping."""
    drop: bool = False
    """Close the connection without answering (a server that died mid-request)."""
    gate: Callable[[], bool] | None = None
    """Polled before answering until it holds (within `gate_timeout`): a model that
    looks at the screen and answers once the dialog it waits for is up."""
    gate_timeout: float = 60.0
    trickle: float = 0.0
    """Send the headers at once, then the body one byte every `trickle` seconds (a
    server that never lets a per-read timeout strike); cut short when the endpoint
    closes."""


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float = 0.0
    """time.monotonic() when the request came."""


def completion(
    *,
    tool: str | None = None,
    arguments: Any = None,
    content: str | None = None,
    prompt_tokens: int = 1200,
    completion_tokens: int = 30,
    extra_calls: int = 0,
) -> dict[str, Any]:
    """A chat completion as real endpoints return it."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool is not None:
        args = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
        call = {"id": "call_0", "type": "function", "function": {"name": tool, "arguments": args}}
        message["tool_calls"] = [call] + [
            {**call, "id": f"call_{i + 1}"} for i in range(extra_calls)
        ]
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1764480000,
        "model": "fake-vision-1",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def tool_reply(tool: str, arguments: Any = None, **kwargs: Any) -> Reply:
    return Reply(body=completion(tool=tool, arguments=arguments, **kwargs))


def text_reply(content: str) -> Reply:
    return Reply(body=completion(content=content))


def hang(seconds: float = 60.0) -> Reply:
    """A server that takes the request and does not answer for `seconds`."""
    return Reply(body=completion(content="too late"), delay=seconds)


def trickling(seconds_per_byte: float = 1.0) -> Reply:
    """A server that answers a byte at a time, `seconds_per_byte` apart."""
    return Reply(body=completion(content="too late"), trickle=seconds_per_byte)


def dropped() -> Reply:
    """A server that closes the connection without an answer."""
    return Reply(drop=True)


def error_reply(status: int, headers: dict[str, str] | None = None) -> Reply:
    return Reply(
        status=status,
        body={"error": {"message": f"fake error {status}", "type": "server_error"}},
        headers=headers or {},
    )


class FakeEndpoint:
    """`with FakeEndpoint(replies) as endpoint:` serves on endpoint.base_url."""

    def __init__(self, replies: list[Reply]) -> None:
        self.replies = list(replies)
        self.received: list[Received] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return None

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                with outer._lock:
                    outer.received.append(
                        Received(
                            self.path,
                            dict(self.headers.items()),
                            json.loads(raw),
                            time.monotonic(),
                        )
                    )
                    reply = (
                        outer.replies.pop(0)
                        if outer.replies
                        else Reply(500, "fake endpoint: no more recorded replies")
                    )
                if reply.gate is not None:
                    deadline = time.monotonic() + reply.gate_timeout
                    while not reply.gate() and time.monotonic() < deadline:
                        if outer._closing.wait(0.2):
                            break
                if reply.delay:
                    outer._closing.wait(reply.delay)  # the server is slow on purpose
                if reply.drop:
                    self.close_connection = True
                    return
                data = (
                    reply.body.encode()
                    if isinstance(reply.body, str)
                    else json.dumps(reply.body).encode()
                )
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    if reply.trickle:
                        for byte in data:
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                            if outer._closing.wait(reply.trickle):
                                break
                    else:
                        self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> FakeEndpoint:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)
