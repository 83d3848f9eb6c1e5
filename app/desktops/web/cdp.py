"""A minimal Chrome DevTools Protocol client over `--remote-debugging-pipe`.

Why our own, and why a pipe: CDP has no authentication, so whoever reaches its
channel can run any script in the page (and read the agent's work, or score it a
pass). A TCP port (`--remote-debugging-port`) on 127.0.0.1 is open to every local
user and to any program the agent might start in the desktop. With
`--remote-debugging-pipe` Chromium speaks CDP on its file descriptors 3 (commands in)
and 4 (messages out), and the other ends of those two pipes are held by this process
only: there is nothing to connect to. Over a pipe the protocol is plain JSON messages
separated by NUL bytes, which takes a hundred lines; a library (Playwright's
`connect_over_cdp`, pychrome) would want a WebSocket port, which is what the pipe
avoids.

`CdpPipe` sends commands and matches responses by id; `WebPage` attaches to the
browser's page target (flattened sessions) and evaluates JavaScript there.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from typing import Any

from app.core.errors import GuestError

# The most one CDP message may be; a page's state is small, and a runaway message
# must not eat the lab's memory.
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
_READ_CHUNK = 64 * 1024


class CdpError(GuestError):
    """A CDP command failed, timed out, or the browser's pipe closed."""

    title = "Web page error"


class CdpPipe:
    """One browser's DevTools channel: the parent's ends of Chromium's fd 3 and fd 4.

    `commands_fd` is written (Chromium reads it as fd 3), `messages_fd` read (its fd 4).
    Both are owned by this object from here on and closed by `close()`.
    """

    def __init__(self, commands_fd: int, messages_fd: int) -> None:
        self._commands_fd = commands_fd
        self._messages_fd = messages_fd
        os.set_blocking(commands_fd, False)
        os.set_blocking(messages_fd, False)
        self._next_id = 1
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._buffer = bytearray()
        self._closed: str | None = None
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(messages_fd, self._readable)

    @property
    def closed(self) -> str | None:
        """Why the channel is closed, or None while it is open."""
        return self._closed

    def _readable(self) -> None:
        try:
            chunk = os.read(self._messages_fd, _READ_CHUNK)
        except BlockingIOError:
            return
        except OSError as exc:
            self._shut(f"reading the browser's DevTools pipe failed: {exc}")
            return
        if not chunk:
            self._shut("the browser closed its DevTools pipe (it exited)")
            return
        self._buffer += chunk
        while (end := self._buffer.find(b"\0")) >= 0:
            raw = bytes(self._buffer[:end])
            del self._buffer[: end + 1]
            self._dispatch(raw)
        if len(self._buffer) > MAX_MESSAGE_BYTES:
            self._shut(f"the browser sent a DevTools message over {MAX_MESSAGE_BYTES} bytes")

    def _dispatch(self, raw: bytes) -> None:
        try:
            message = json.loads(raw)
        except ValueError:
            return  # not ours to crash on; a command waiting for it times out
        if not isinstance(message, dict):
            return
        future = self._pending.pop(message.get("id", -1), None) if "id" in message else None
        if future is not None and not future.done():
            future.set_result(message)
        # Events (no id) are not used: every wait here polls a condition instead.

    def _shut(self, reason: str) -> None:
        if self._closed is not None:
            return
        self._closed = reason
        with contextlib.suppress(ValueError, OSError):
            self._loop.remove_reader(self._messages_fd)
        for fd in (self._commands_fd, self._messages_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        for future in self._pending.values():
            if not future.done():
                future.set_exception(CdpError(reason))
        self._pending.clear()

    def close(self) -> None:
        """Close both pipe ends; commands waiting fail. Safe to call twice."""
        self._shut("the DevTools channel was closed by DeskLoop")

    async def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session_id: str | None = None,
        timeout: float = 10.0,
    ) -> dict[str, Any]:
        """Send one command and return its `result`.

        Raises:
            CdpError: the browser answered with an error, did not answer within
                `timeout`, or its pipe is closed.
        """
        if self._closed is not None:
            raise CdpError(self._closed)
        command_id = self._next_id
        self._next_id += 1
        message: dict[str, Any] = {"id": command_id, "method": method, "params": params or {}}
        if session_id is not None:
            message["sessionId"] = session_id
        future: asyncio.Future[dict[str, Any]] = self._loop.create_future()
        self._pending[command_id] = future
        try:
            await self._write(json.dumps(message).encode() + b"\0", timeout)
            async with asyncio.timeout(timeout):
                answer = await future
        except TimeoutError:
            raise CdpError(f"the browser did not answer {method} within {timeout:g} s") from None
        finally:
            self._pending.pop(command_id, None)
        if "error" in answer:
            error = answer["error"]
            text = error.get("message", error) if isinstance(error, dict) else error
            raise CdpError(f"{method} failed: {text}")
        result = answer.get("result", {})
        return result if isinstance(result, dict) else {}

    async def _write(self, data: bytes, timeout: float) -> None:
        view = memoryview(data)
        async with asyncio.timeout(timeout):
            while view:
                try:
                    sent = os.write(self._commands_fd, view)
                except BlockingIOError:
                    await asyncio.sleep(0.005)
                    continue
                except OSError as exc:
                    self._shut(f"writing to the browser's DevTools pipe failed: {exc}")
                    raise CdpError(self._closed or str(exc)) from exc
                view = view[sent:]


class WebPage:
    """The browser's one page, reached through a flattened CDP session."""

    def __init__(self, pipe: CdpPipe, session_id: str, target_id: str) -> None:
        self.pipe = pipe
        self.session_id = session_id
        self.target_id = target_id

    @classmethod
    async def attach(cls, pipe: CdpPipe, timeout: float = 20.0) -> WebPage:
        """Attach to the browser's first page target, waiting for it to exist.

        Raises:
            CdpError: no page target within `timeout`, or the browser went away.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            targets = await pipe.call("Target.getTargets", timeout=timeout)
            pages = [t for t in targets.get("targetInfos", []) if t.get("type") == "page"]
            if pages:
                target_id = str(pages[0]["targetId"])
                attached = await pipe.call(
                    "Target.attachToTarget", {"targetId": target_id, "flatten": True}
                )
                return cls(pipe, str(attached["sessionId"]), target_id)
            if loop.time() > deadline:
                raise CdpError(f"the browser showed no page within {timeout:g} s")
            await asyncio.sleep(0.05)

    def gone(self) -> str | None:
        """Why the page can answer no more (its browser's pipe closed), or None."""
        return self.pipe.closed

    async def navigate(self, url: str, timeout: float = 10.0) -> None:
        """Send the page to `url` (again), as if it had been opened there.

        Raises:
            CdpError: CDP failed, or the navigation was refused at once.
        """
        result = await self.pipe.call(
            "Page.navigate", {"url": url}, session_id=self.session_id, timeout=timeout
        )
        if result.get("errorText"):
            raise CdpError(f"navigating to {url} failed: {result['errorText']}")

    async def evaluate(self, expression: str, timeout: float = 10.0) -> Any:
        """The JSON value of a JavaScript expression in the page (promises awaited).

        Raises:
            CdpError: the expression threw, its value is not JSON, or CDP failed.
        """
        result = await self.pipe.call(
            "Runtime.evaluate",
            {
                "expression": expression,
                "returnByValue": True,
                "awaitPromise": True,
                "timeout": int(timeout * 1000),
            },
            session_id=self.session_id,
            timeout=timeout,
        )
        details = result.get("exceptionDetails")
        if details is not None:
            exception = details.get("exception", {})
            text = exception.get("description") or details.get("text", "an exception")
            raise CdpError(f"the page threw: {text}")
        value = result.get("result", {})
        return value.get("value")
