"""The guest channel of a VM desktop: one persistent SSH connection (paramiko).

Nothing of ours listens in the guest: the image's own sshd accepts exactly one key,
which the lab generates (`lab_key`) and hands to the guest on the kernel command
line. The guest's host key is pinned per desktop on first contact after a cold
boot (each clone makes its own host keys) and checked on every later connection.

Commands are argv lists; the remote command line is `shlex.join(argv)`, so no word
of it is ever interpreted by the remote shell. Each command runs under the
guest's `timeout`, so a command that outlives its deadline is killed in the guest,
not just abandoned. Every paramiko call runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import posixpath
import select
import shlex
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import paramiko
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from app.core.commands import CommandResult
from app.core.errors import FileTooLarge, GuestError
from app.desktops.remote.ssh_web import GuestBrowser
from app.desktops.web.cdp import WebPage

GUEST_USER = "user"
GUEST_HOME = "/home/user"
# Extra seconds we wait beyond a command's own timeout for the guest's `timeout`
# to kill it and for its exit status to arrive.
_KILL_GRACE = 3.0
_LAUNCH_LOG_DIR = ".cache/deskloop-launch"


def lab_key(path: Path) -> tuple[paramiko.Ed25519Key, str]:
    """The lab's SSH key at `path` (made on first use, mode 0600) and its public
    half's base64 body (what the guest's authorized key file receives)."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        private = Ed25519PrivateKey.generate()
        pem = private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.OpenSSH,
            serialization.NoEncryption(),
        )
        partial = path.with_suffix(".partial")
        partial.touch(mode=0o600)
        partial.write_bytes(pem)
        partial.rename(path)
    key = paramiko.Ed25519Key.from_private_key_file(str(path))
    return key, key.get_base64()


class _PinningPolicy(paramiko.MissingHostKeyPolicy):  # type: ignore[misc]
    """Accept and remember the first host key seen (the known-hosts file is emptied
    on each cold boot, when the guest makes new keys); a changed key is refused by
    paramiko itself since it is then in the known hosts."""

    def __init__(self, known_hosts: Path) -> None:
        self.known_hosts = known_hosts

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: Any) -> None:
        client.get_host_keys().add(hostname, key.get_name(), key)
        self.known_hosts.parent.mkdir(parents=True, exist_ok=True)
        client.save_host_keys(str(self.known_hosts))


class SSHGuest:
    """`Guest` over SSH to a VM's session user (DISPLAY etc. come from the guest's
    /etc/environment). File paths: '~' and relative paths are in the user's home;
    absolute paths are allowed where the unprivileged user may go (the VM is the
    sandbox)."""

    def __init__(
        self,
        host: str,
        key: paramiko.PKey,
        known_hosts: Path,
        *,
        port: int = 22,
        user: str = GUEST_USER,
        home: str = GUEST_HOME,
        where: str = "VM",
        sock_factory: Callable[[], Any] | None = None,
        screen: tuple[int, int] = (1280, 800),
    ) -> None:
        """`sock_factory`: a new socket-like channel to the guest's sshd for each
        connection attempt (a direct-tcpip channel through a libvirt host), instead
        of a TCP connection from here. `screen`: the session's size (a web page's
        browser window fills it)."""
        self.host = host
        self.port = port
        self.user = user
        self._home = home
        self._key = key
        self._known_hosts = known_hosts
        self._where = where
        self._sock_factory = sock_factory
        self._client: paramiko.SSHClient | None = None
        self._sftp: paramiko.SFTPClient | None = None
        self._lock = threading.Lock()
        self._launches = itertools.count(1)
        self._closed = False
        self._connecting: asyncio.Task[None] | None = None
        # A web page's browser in the guest (app/desktops/remote/ssh_web.py).
        self.browser = GuestBrowser(
            lambda remote, deadline: self._exec_blocking(remote, deadline, ["chromium"]),
            self._open_stream,
            home,
            screen,
            where,
        )

    @property
    def home(self) -> str:
        return self._home

    # ------------------------------------------------------------ connection

    async def connect(self, timeout: float = 60.0) -> None:
        """Connect, retrying until sshd answers (it starts late in a boot).

        Raises:
            GuestError: no SSH session within `timeout`, or the host key changed.
        """
        await asyncio.to_thread(self._connect_blocking, timeout)

    def connect_soon(self, timeout: float = 60.0) -> None:
        """Start connecting in the background; every call waits for it first.

        A restored desktop is usable on screen before its sshd has answered: the
        runner can look and act while the guest channel comes up.
        """
        self._connecting = asyncio.get_running_loop().create_task(self.connect(timeout))

    async def connected(self) -> None:
        """Wait for a background connection (raising its error, if it failed)."""
        task = self._connecting
        if task is not None:
            await asyncio.shield(task)

    def _connect_blocking(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while True:
            with self._lock:
                if self._closed:
                    raise GuestError(f"the SSH channel to {self._where} is closed")
                self._drop_locked()
                client = paramiko.SSHClient()
                if self._known_hosts.exists():
                    client.load_host_keys(str(self._known_hosts))
                client.set_missing_host_key_policy(_PinningPolicy(self._known_hosts))
                try:
                    sock = self._sock_factory() if self._sock_factory is not None else None
                    client.connect(
                        self.host,
                        port=self.port,
                        username=self.user,
                        pkey=self._key,
                        timeout=min(10.0, max(deadline - time.monotonic(), 1.0)),
                        banner_timeout=10.0,
                        auth_timeout=10.0,
                        allow_agent=False,
                        look_for_keys=False,
                        sock=sock,
                    )
                    transport = client.get_transport()
                    assert transport is not None
                    transport.set_keepalive(15)
                    self._client = client
                    return
                except paramiko.BadHostKeyException as exc:
                    client.close()
                    raise GuestError(
                        f"{self._where}: the SSH host key of {self.host} changed "
                        f"(pinned in {self._known_hosts}); refusing to connect: {exc}"
                    ) from exc
                except paramiko.AuthenticationException as exc:
                    client.close()
                    if "timeout" not in str(exc).lower():
                        raise GuestError(
                            f"{self._where}: the guest refused the lab's SSH key: {exc}"
                        ) from exc
                    # A starved guest (eight booting on two cores) answered too late:
                    # not a refusal, so try again until the deadline.
                    last = str(exc)
                except (OSError, paramiko.SSHException, EOFError) as exc:
                    client.close()
                    last = str(exc) or type(exc).__name__
            if time.monotonic() >= deadline:
                raise GuestError(
                    f"{self._where}: no SSH session with {self.user}@{self.host}:{self.port} "
                    f"within {timeout:g} s (last error: {last})"
                )
            time.sleep(0.25)

    def _drop_locked(self) -> None:
        if self._sftp is not None:
            with contextlib.suppress(Exception):
                self._sftp.close()
            self._sftp = None
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.close()
            self._client = None

    def drop(self) -> None:
        """Forget the connection (the VM was restored: its TCP state is gone)."""
        with self._lock:
            self._drop_locked()

    def close(self) -> None:
        """Close the connection and refuse every later call."""
        if self._connecting is not None and not self._connecting.done():
            self._connecting.cancel()
        with self._lock:
            self._closed = True
            self._drop_locked()

    def _transport(self) -> paramiko.Transport:
        with self._lock:
            if self._closed:
                raise GuestError(f"the SSH channel to {self._where} is closed")
            client = self._client
        transport = client.get_transport() if client is not None else None
        if transport is None or not transport.is_active():
            raise GuestError(f"{self._where}: not connected over SSH (call reset() first)")
        return transport

    def _sftp_client(self) -> paramiko.SFTPClient:
        transport = self._transport()
        with self._lock:
            if self._sftp is None:
                try:
                    self._sftp = paramiko.SFTPClient.from_transport(transport)
                except (paramiko.SSHException, OSError) as exc:
                    raise GuestError(f"{self._where}: cannot open SFTP: {exc}") from exc
                if self._sftp is None:
                    raise GuestError(f"{self._where}: the guest refused an SFTP channel")
                self._sftp.chdir(self._home)
            return self._sftp

    # ------------------------------------------------------------ commands

    def expand(self, arg: str) -> str:
        """`~` and a leading `~/` name the session user's home in the guest."""
        if arg == "~":
            return self._home
        if arg.startswith("~/"):
            return posixpath.join(self._home, arg[2:])
        return arg

    def _argv(self, argv: list[str]) -> list[str]:
        if not argv or not all(isinstance(a, str) for a in argv):
            raise GuestError(f"a command must be a non-empty list of strings, got {argv!r}")
        return [self.expand(a) for a in argv]

    async def run(self, argv: list[str], timeout: float = 30.0) -> CommandResult:
        args = self._argv(argv)
        await self.connected()
        # coreutils `timeout` in the guest kills the command at its deadline (and
        # SIGKILLs it 2 s later if it ignores SIGTERM); exit 124/137 then.
        remote = shlex.join(["timeout", "-k", "2", f"{timeout:g}", *args])
        started = time.monotonic()
        stdout, stderr, code = await asyncio.to_thread(
            self._exec_blocking, remote, timeout + _KILL_GRACE, args
        )
        if code in (124, 137) and time.monotonic() - started >= timeout:
            raise GuestError(f"{args!r} ran past its {timeout:g} s timeout in {self._where}")
        return CommandResult(tuple(args), code, stdout, stderr)

    def _exec_blocking(
        self, remote: str, deadline_s: float, args: list[str]
    ) -> tuple[bytes, bytes, int]:
        transport = self._transport()
        try:
            channel = transport.open_session(timeout=10.0)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise GuestError(f"{self._where}: cannot open an SSH channel: {exc}") from exc
        deadline = time.monotonic() + deadline_s
        out = bytearray()
        err = bytearray()
        try:
            channel.exec_command(remote)
            channel.shutdown_write()
            while True:
                while channel.recv_ready():
                    out += channel.recv(65536)
                while channel.recv_stderr_ready():
                    err += channel.recv_stderr(65536)
                if channel.exit_status_ready() and not (
                    channel.recv_ready() or channel.recv_stderr_ready()
                ):
                    return bytes(out), bytes(err), channel.recv_exit_status()
                if time.monotonic() > deadline:
                    raise GuestError(f"{args!r} ran past its deadline in {self._where}")
                # The channel's fileno wakes on stdout data and on exit; stderr-only
                # output is picked up on the next short tick.
                select.select([channel], [], [], 0.02)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise GuestError(f"{self._where}: {args!r} failed over SSH: {exc}") from exc
        finally:
            channel.close()

    async def launch(self, argv: list[str]) -> None:
        args = self._argv(argv)
        await self.connected()
        name = "".join(c if c.isalnum() or c in "-_." else "_" for c in posixpath.basename(args[0]))
        log = f"{_LAUNCH_LOG_DIR}/launch-{next(self._launches):03d}-{name}.log"
        # The shell only sees fixed text and one shlex-quoted argv. setsid -f detaches
        # the program from the SSH session, so it outlives this channel.
        script = (
            f"command -v -- {shlex.quote(args[0])} >/dev/null || "
            f"{{ echo {shlex.quote(f'{args[0]}: not found')} >&2; exit 127; }}; "
            f"mkdir -p {_LAUNCH_LOG_DIR} && "
            f"exec setsid -f {shlex.join(args)} >{log} 2>&1 </dev/null"
        )
        _out, err, code = await asyncio.to_thread(self._exec_blocking, script, 15.0, args)
        if code != 0:
            text = err.decode("utf-8", "replace").strip()
            raise GuestError(f"cannot launch {args!r} in {self._where}: {text or f'exit {code}'}")

    def _open_stream(self, remote: str) -> paramiko.Channel:
        """An exec channel running `remote`, left open for the caller to stream over."""
        transport = self._transport()
        try:
            channel = transport.open_session(timeout=10.0)
            channel.exec_command(remote)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise GuestError(f"{self._where}: cannot open an SSH channel: {exc}") from exc
        return channel

    # ------------------------------------------------------------ web pages

    @property
    def web_page(self) -> WebPage:
        """The guest browser's page. Never None: after a VM restore a page opened
        before the save is still there, and the first call finds it (or says that no
        browser runs in the guest)."""
        return self.browser.page

    async def open_page(self, url: str, timeout: float = 30.0) -> WebPage:
        """Kiosk Chromium on `url` in the guest, its DevTools pipe relayed over this
        channel (app/desktops/remote/ssh_web.py); waits for the page contract."""
        await self.connected()
        return await self.browser.open(url, timeout)

    async def close_web(self) -> None:
        """End the DevTools relay (before the VM is saved); the browser keeps running."""
        await self.browser.detach()

    # ------------------------------------------------------------ files

    def _path(self, path: str) -> str:
        expanded = self.expand(path)
        return expanded if expanded.startswith("/") else posixpath.join(self._home, expanded)

    async def read_file(self, path: str, max_bytes: int = 64 * 1024 * 1024) -> bytes:
        await self.connected()
        return await asyncio.to_thread(self._read_blocking, path, max_bytes)

    def _read_blocking(self, path: str, max_bytes: int) -> bytes:
        full = self._path(path)
        sftp = self._sftp_client()
        try:
            with sftp.open(full, "rb") as f:
                info = f.stat()
                if info.st_mode is not None and not stat.S_ISREG(info.st_mode):
                    raise GuestError(f"{path!r} in {self._where} is not a regular file")
                if info.st_size is not None and info.st_size > max_bytes:
                    raise FileTooLarge(
                        f"{path!r} in {self._where} is {info.st_size} bytes, "
                        f"over the {max_bytes}-byte limit",
                        size=info.st_size,
                        limit=max_bytes,
                    )
                data = f.read(max_bytes + 1)
        except FileNotFoundError:
            raise GuestError(f"{path!r} does not exist in {self._where}") from None
        except PermissionError:
            raise GuestError(f"{path!r} in {self._where}: permission denied") from None
        except (OSError, paramiko.SSHException) as exc:
            raise GuestError(f"cannot read {path!r} in {self._where}: {exc}") from exc
        if len(data) > max_bytes:
            raise FileTooLarge(
                f"{path!r} in {self._where} grew over the {max_bytes}-byte limit",
                size=None,
                limit=max_bytes,
            )
        return bytes(data)

    async def write_file(self, path: str, data: bytes) -> None:
        await self.connected()
        await asyncio.to_thread(self._write_blocking, path, data)

    def _write_blocking(self, path: str, data: bytes) -> None:
        full = self._path(path)
        sftp = self._sftp_client()
        try:
            self._makedirs(sftp, posixpath.dirname(full))
            partial = f"{full}.deskloop-partial"
            with sftp.open(partial, "wb") as f:
                f.set_pipelined(True)
                f.write(data)
            sftp.posix_rename(partial, full)
        except PermissionError:
            raise GuestError(f"cannot write {path!r} in {self._where}: permission denied") from None
        except (OSError, paramiko.SSHException) as exc:
            raise GuestError(f"cannot write {path!r} in {self._where}: {exc}") from exc

    @staticmethod
    def _makedirs(sftp: paramiko.SFTPClient, folder: str) -> None:
        missing = []
        while folder not in ("", "/"):
            try:
                sftp.stat(folder)
                break
            except FileNotFoundError:
                missing.append(folder)
                folder = posixpath.dirname(folder)
        for item in reversed(missing):
            sftp.mkdir(item)

    async def exists(self, path: str) -> bool:
        await self.connected()
        return await asyncio.to_thread(self._exists_blocking, path)

    def _exists_blocking(self, path: str) -> bool:
        sftp = self._sftp_client()
        try:
            sftp.stat(self._path(path))
            return True
        except FileNotFoundError:
            return False
        except (OSError, paramiko.SSHException) as exc:
            raise GuestError(f"cannot check {path!r} in {self._where}: {exc}") from exc
