"""Web pages in a VM guest: kiosk Chromium with its DevTools pipe relayed over SSH.

On the local backend DeskLoop holds the other ends of Chromium's `--remote-debugging-pipe`
(fds 3 and 4) in its own process (app/desktops/web/kiosk.py). In a guest the browser runs in
the VM, so the pipe is carried over the guest channel instead:

* **Launch** (`LAUNCH_SCRIPT`, over SSH): the previous browser's process group is
  killed, two FIFOs are made in a 0700 folder of the session user, and Chromium is
  started detached with its fd 3 and fd 4 opened on them *read-write* (so Chromium
  never sees an end of file or a broken pipe while no relay is attached), after which
  the FIFOs' names are removed: from then on the pipes exist only as Chromium's
  descriptors, as on the local backend. Its pid goes to `PID_FILE`.
* **Relay** (`RELAY_SCRIPT`, one SSH exec channel): in the guest, `cat` copies the
  channel's stdin into `/proc/PID/fd/3` and another `cat` copies `/proc/PID/fd/4` to
  the channel's stdout; here, two threads copy between that channel and a pair of local
  pipes whose other ends a `CdpPipe` holds. So the CDP client is the same as locally.
  No port is opened anywhere: the only way in is the lab's SSH key.
* **Start states**: a saved VM keeps its browser, but a restore kills the guest's TCP
  state and with it any relay. So the relay is closed (and its guest side waited for)
  before a save (`GuestBrowser.detach`; a relay whose end was not seen in time is
  ended by the next one, from its pids), and attached again on the next page call
  after a restore: a `GuestPage` connects its relay lazily and attaches to the
  browser's page anew. A state saved after a task's `open_page` therefore restores
  with its page, as the task's other state does.

What it protects and what not: the agent has VNC only. A program running in the
guest as the session user could open `/proc/PID/fd/3` of Chromium (same user), as a
program of the lab user could on the local backend; nothing else can reach it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shlex
import threading
from collections.abc import Callable
from typing import Any

import paramiko

from app.core.errors import GuestError
from app.desktops.web.cdp import CdpError, CdpPipe, WebPage
from app.desktops.web.kiosk import chromium_argv, wait_contract

# In the session user's home (the web apps are copied to ~/.deskloop-web/<task id>/).
CDP_DIR = ".deskloop-web/.cdp"
PID_FILE = f"{CDP_DIR}/browser.pid"
LOG_DIR = ".cache/deskloop-launch"

# Fixed text; `$1..` are the folder, the log and the pid file, then Chromium's argv
# (shlex-quoted). Waits on a condition (the browser's fds exist), bounded.
LAUNCH_SCRIPT = r"""
set -u
d=$1; log=$2; pidfile=$3; shift 3
command -v -- "$1" >/dev/null || { echo "$1: not found (build the VM image 'web')" >&2; exit 127; }
mkdir -p "$d" "$(dirname "$log")" && chmod 700 "$d"
if [ -s "$pidfile" ]; then kill -- "-$(cat "$pidfile")" 2>/dev/null || true; fi
rm -f "$d/in" "$d/out" "$pidfile"
mkfifo -m 600 "$d/in" "$d/out"
setsid bash -c 'exec 3<>"$0/in" 4<>"$0/out"; rm -f "$0/in" "$0/out"; exec "$@"' "$d" "$@" \
  </dev/null >>"$log" 2>&1 &
pid=$!
i=0
until [ -p "/proc/$pid/fd/4" ] && [ ! -e "$d/out" ]; do
  i=$((i + 1))
  if [ "$i" -gt 3000 ] || ! kill -0 "$pid" 2>/dev/null; then
    echo "the browser did not start; its log: $(tail -c 600 "$log")" >&2; exit 1
  fi
  sleep 0.02
done
echo "$pid" >"$pidfile"
"""

RELAY_SCRIPT = r"""
p=$(cat "$1" 2>/dev/null)
if [ -z "$p" ] || [ ! -p "/proc/$p/fd/4" ]; then
  echo "no browser is running in the guest (the task's setup has no open_page step?)" >&2
  exit 3
fi
# A relay that outlived its channel (a VM saved before its end was seen) would read
# the browser's answers: end it first.
if [ -s "$2" ]; then kill $(cat "$2") 2>/dev/null; fi
exec 5<"/proc/$p/fd/4"
cat <&5 &
r=$!
exec 5<&-
echo "$$ $r" >"$2"
cat >"/proc/$p/fd/3"
kill "$r" 2>/dev/null
wait "$r" 2>/dev/null
rm -f "$2"
exit 0
"""
RELAY_PIDS = f"{CDP_DIR}/relay.pids"

_CHUNK = 65536


def _bash(script: str, *args: str) -> str:
    """A remote command line: fixed script text, every argument quoted."""
    return shlex.join(["bash", "-c", script, "bash", *args])


class Relay:
    """One SSH exec channel running `RELAY_SCRIPT`, bridged to local pipes for a `CdpPipe`."""

    def __init__(self, channel: paramiko.Channel) -> None:
        self.channel = channel
        commands_read, commands_write = os.pipe()
        messages_read, messages_write = os.pipe()
        self.pipe = CdpPipe(commands_write, messages_read)
        self._threads = [
            threading.Thread(target=self._down, args=(messages_write,), daemon=True),
            threading.Thread(target=self._up, args=(commands_read,), daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _down(self, fd: int) -> None:
        """Guest → here: the browser's messages into the CdpPipe's read end."""
        try:
            while chunk := self.channel.recv(_CHUNK):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view) :]
        except (OSError, paramiko.SSHException, EOFError):
            pass
        finally:
            os.close(fd)  # the CdpPipe sees the end: "the browser closed its pipe"

    def _up(self, fd: int) -> None:
        """Here → guest: the CdpPipe's commands into the channel; its close ends the relay."""
        try:
            while chunk := os.read(fd, _CHUNK):
                self.channel.sendall(chunk)
        except (OSError, paramiko.SSHException, EOFError):
            pass
        finally:
            os.close(fd)
            with contextlib.suppress(OSError, paramiko.SSHException, EOFError):
                self.channel.shutdown_write()

    async def close(self, timeout: float) -> str:
        """Close the pipe and wait for the guest's side to end (its `cat`s gone); what
        it said on stderr (why it would not start, if it did not)."""
        self.pipe.close()
        return await asyncio.to_thread(self._finish, timeout)

    def _finish(self, timeout: float) -> str:
        for thread in reversed(self._threads):
            thread.join(timeout)
        text = ""
        with contextlib.suppress(OSError, paramiko.SSHException, EOFError):
            if self.channel.recv_stderr_ready():
                text = self.channel.recv_stderr(4096).decode("utf-8", "replace").strip()
        self.channel.close()
        return text


class GuestPage(WebPage):
    """The guest browser's page, reached through a relay that is (re)made on demand:
    after a VM restore the old relay is gone but the browser and its page are not."""

    def __init__(self, browser: GuestBrowser) -> None:
        # No relay yet: `GuestBrowser.ensure` sets the pipe and session on first use.
        self.browser = browser
        self.session_id = ""
        self.target_id = ""

    def gone(self) -> str | None:
        # Never for good: a closed relay is made again on the next call (`ensure`).
        return None

    async def evaluate(self, expression: str, timeout: float = 10.0) -> Any:
        await self.browser.ensure(self, timeout)
        return await super().evaluate(expression, timeout)

    async def navigate(self, url: str, timeout: float = 10.0) -> None:
        await self.browser.ensure(self, timeout)
        await super().navigate(url, timeout)


class GuestBrowser:
    """Chromium in a guest reached over SSH.

    `run(command, timeout)` runs a remote command line and returns (stdout, stderr,
    status); `open_channel(command)` opens an exec channel running it. Both block
    (the guest channel's paramiko calls) and run in worker threads here.
    """

    def __init__(
        self,
        run: Callable[[str, float], tuple[bytes, bytes, int]],
        open_channel: Callable[[str], paramiko.Channel],
        home: str,
        screen: tuple[int, int],
        where: str,
    ) -> None:
        self._run = run
        self._open_channel = open_channel
        self._home = home
        self._screen = screen
        self._where = where
        self._relay: Relay | None = None
        self._count = 0
        self._lock = asyncio.Lock()
        self.page = GuestPage(self)

    async def open(self, url: str, timeout: float) -> WebPage:
        """Start a fresh browser on `url` (the previous one is killed) and wait until
        the page defines the page contract.

        Raises:
            CdpError: it did not start, or the page has no contract within `timeout`.
        """
        # A fresh profile each time, also after a restore (when the count starts anew).
        profile = f"{self._home}/.chromium-profile-{secrets.token_hex(4)}"
        await self.launch(chromium_argv(url, profile, *self._screen), timeout)
        try:
            await wait_contract(self.page, url, timeout)
        except CdpError as exc:
            raise CdpError(
                f"{self._where}: {exc}; the browser's log: {await self._log_tail()}"
            ) from None
        return self.page

    async def launch(self, argv: list[str], timeout: float) -> None:
        """Start `argv` (a browser's command line) detached in the guest with its fds 3
        and 4 on the DevTools pipes, killing the one started before.

        Raises:
            CdpError: it could not be started or exited at once (its log's tail says why).
        """
        await self.detach()
        self._count += 1
        log = f"{self._home}/{LOG_DIR}/chromium-{self._count:03d}.log"
        command = _bash(
            LAUNCH_SCRIPT, f"{self._home}/{CDP_DIR}", log, f"{self._home}/{PID_FILE}", *argv
        )
        try:
            _out, err, code = await asyncio.to_thread(self._run, command, timeout + 5.0)
        except GuestError as exc:
            raise CdpError(f"cannot start {argv[0]} in {self._where}: {exc}") from exc
        if code != 0:
            text = err.decode("utf-8", "replace").strip() or f"exit {code}"
            raise CdpError(f"cannot start {argv[0]} in {self._where}: {text}")

    async def _log_tail(self) -> str:
        """The end of the current browser's log in the guest (for an error message)."""
        log = f"{self._home}/{LOG_DIR}/chromium-{self._count:03d}.log"
        try:
            out, _err, _code = await asyncio.to_thread(
                self._run, shlex.join(["tail", "-c", "1500", log]), 20.0
            )
        except GuestError as exc:
            return f"unread ({exc})"
        return out.decode("utf-8", "replace").strip() or "empty"

    async def ensure(self, page: GuestPage, timeout: float) -> None:
        """A live relay and a page session on it (made now if there is none).

        Raises:
            CdpError: no browser runs in the guest, or it shows no page within `timeout`.
        """
        async with self._lock:
            relay = self._relay
            if relay is not None and relay.pipe.closed is None:
                return
            self._relay = None
            if relay is not None:
                await relay.close(5.0)
            command = _bash(RELAY_SCRIPT, f"{self._home}/{PID_FILE}", f"{self._home}/{RELAY_PIDS}")
            try:
                channel = await asyncio.to_thread(self._open_channel, command)
            except GuestError as exc:
                raise CdpError(f"no DevTools relay to {self._where}: {exc}") from exc
            relay = Relay(channel)
            try:
                attached = await WebPage.attach(relay.pipe, timeout)
            except CdpError as exc:
                said = await relay.close(5.0)
                raise CdpError(f"{self._where}: {said or exc}") from None
            self._relay = relay
            page.pipe = relay.pipe
            page.session_id = attached.session_id
            page.target_id = attached.target_id

    async def detach(self) -> None:
        """Close the relay and wait for its guest side to end (before a VM is saved:
        a relay left in the snapshot would read the browser's answers after a restore)."""
        async with self._lock:
            relay, self._relay = self._relay, None
            if relay is not None:
                await relay.close(10.0)
