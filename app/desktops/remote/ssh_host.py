"""SSH to a remote libvirt host: whom to log in as (`SshTarget`, from the URI and
`~/.ssh/config`, as the `ssh` that libvirt runs would), the login with the host-key
check the URI asks for (`connect`), and local ports forwarded through it
(`PortForward`). It knows nothing of libvirt or images:
`app.desktops.libvirt.host.RemoteHost` builds the host's files and tunnels on it. Every
function blocks."""

from __future__ import annotations

import contextlib
import getpass
import os
import select
import socket
import threading
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import paramiko

from app.core.errors import DesktopError

# The transports after which libvirt talks SSH (qemu+ssh, qemu+libssh, qemu+libssh2).
SSH_TRANSPORTS = ("ssh", "libssh", "libssh2")


@dataclass(frozen=True)
class SshTarget:
    """How to reach a libvirt URI's host over SSH, as libvirt itself would."""

    host: str
    port: int
    user: str
    keyfile: str | None
    known_hosts: str | None
    verify: bool

    @property
    def label(self) -> str:
        port = "" if self.port == 22 else f":{self.port}"
        return f"{self.user}@{self.host}{port}"

    @classmethod
    def from_uri(cls, uri: str, ssh_config: Path | None = None) -> SshTarget:
        """The SSH side of a remote libvirt URI.

        Takes the user, host and port from the URI, then `~/.ssh/config` (as the
        `ssh` that libvirt runs would); `keyfile`, `known_hosts` and `no_verify=1`
        (or libssh's `known_hosts_verify=ignore`) from its query.

        Raises:
            DesktopError: the URI names a host but not an SSH transport.
        """
        parts = urllib.parse.urlsplit(uri)
        transport = parts.scheme.partition("+")[2]
        if not parts.hostname:
            raise DesktopError(f"libvirt URI {uri!r} names no host: it is this machine")
        if transport not in SSH_TRANSPORTS:
            raise DesktopError(
                f"libvirt URI {uri!r}: DeskLoop reaches a remote host's guests and files "
                f"over SSH, so use qemu+ssh://HOST/system (or qemu+libssh://), "
                f"not {parts.scheme!r}"
            )
        query = dict(urllib.parse.parse_qsl(parts.query))
        host = parts.hostname
        port = parts.port
        user = urllib.parse.unquote(parts.username) if parts.username else None
        keyfile = query.get("keyfile")
        config_path = ssh_config if ssh_config is not None else Path.home() / ".ssh" / "config"
        if config_path.is_file():
            config = paramiko.SSHConfig.from_path(str(config_path)).lookup(host)
            host = str(config.get("hostname", host))
            if port is None and "port" in config:
                port = int(config["port"])
            user = user or config.get("user")
            files = config.get("identityfile")
            if keyfile is None and files:
                keyfile = os.path.expanduser(str(files[0]))
        verify = query.get("no_verify", "0") not in ("1", "true", "yes") and query.get(
            "known_hosts_verify", "normal"
        ) not in ("ignore", "auto")
        return cls(
            host=host,
            port=port or 22,
            user=user or getpass.getuser(),
            keyfile=keyfile,
            known_hosts=query.get("known_hosts"),
            verify=verify,
        )


class _RefuseUnknownHost(paramiko.MissingHostKeyPolicy):  # type: ignore[misc]
    def __init__(self, target: SshTarget) -> None:
        self.target = target

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: Any) -> None:
        where = self.target.known_hosts or "~/.ssh/known_hosts"
        raise DesktopError(
            f"the SSH host key of {self.target.label} is not in {where}: connect once with "
            f"`ssh -p {self.target.port} {self.target.user}@{self.target.host}` to check and "
            "add it (or put no_verify=1 in the libvirt URI to skip the check)"
        )


class _AcceptHost(paramiko.MissingHostKeyPolicy):  # type: ignore[misc]
    """no_verify=1: the user asked libvirt, and so us, not to check the host key."""

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: Any) -> None:
        return None


def connect(target: SshTarget) -> paramiko.SSHClient:
    """A logged-in SSH client for `target`, its host key checked as the URI asks
    (blocking).

    Raises:
        DesktopError: the host is unreachable, refuses the key, or its host key is
            unknown (unless the URI says not to check) or has changed.
    """
    client = paramiko.SSHClient()
    with contextlib.suppress(OSError):
        client.load_system_host_keys()
    if target.known_hosts:
        try:
            client.load_host_keys(target.known_hosts)
        except OSError as exc:
            raise DesktopError(f"cannot read known_hosts {target.known_hosts}: {exc}") from exc
    client.set_missing_host_key_policy(
        _RefuseUnknownHost(target) if target.verify else _AcceptHost()
    )
    try:
        client.connect(
            target.host,
            port=target.port,
            username=target.user,
            key_filename=target.keyfile,
            timeout=15.0,
            banner_timeout=15.0,
            auth_timeout=15.0,
            allow_agent=target.keyfile is None,
            look_for_keys=target.keyfile is None,
        )
    except DesktopError:
        client.close()
        raise
    except paramiko.BadHostKeyException as exc:
        client.close()
        raise DesktopError(
            f"the SSH host key of {target.label} does not match the known one; refusing: {exc}"
        ) from exc
    except paramiko.AuthenticationException as exc:
        client.close()
        key = f"the key {target.keyfile}" if target.keyfile else "your SSH keys"
        raise DesktopError(f"{target.label} refused {key}: {exc}") from exc
    except (OSError, paramiko.SSHException, EOFError) as exc:
        client.close()
        raise DesktopError(f"cannot reach {target.label} over SSH: {exc}") from exc
    transport = client.get_transport()
    assert transport is not None
    transport.set_keepalive(15)
    return client


class PortForward:
    """127.0.0.1:<ephemeral> here → 127.0.0.1:`port` on the remote host, one
    direct-tcpip channel per accepted connection, pumped by a thread each."""

    def __init__(self, transport: paramiko.Transport, port: int) -> None:
        self.remote_port = port
        self._transport = transport
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.local_port = int(self._listener.getsockname()[1])
        self._closed = threading.Event()
        self._pairs: list[tuple[socket.socket, paramiko.Channel]] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, name=f"forward-{port}", daemon=True).start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                conn, peer = self._listener.accept()
            except OSError:
                return
            try:
                channel = self._transport.open_channel(
                    "direct-tcpip", ("127.0.0.1", self.remote_port), peer, timeout=10.0
                )
            except (paramiko.SSHException, OSError, EOFError):
                conn.close()  # the client sees a closed connection and reports it
                continue
            with self._lock:
                self._pairs.append((conn, channel))
            threading.Thread(target=self._pump, args=(conn, channel), daemon=True).start()

    def _pump(self, conn: socket.socket, channel: paramiko.Channel) -> None:
        try:
            while not self._closed.is_set():
                ready, _, _ = select.select([conn, channel], [], [], 1.0)
                if conn in ready:
                    data = conn.recv(65536)
                    if not data:
                        break
                    channel.sendall(data)
                if channel in ready:
                    data = channel.recv(65536)
                    if not data:
                        break
                    conn.sendall(data)
        except (OSError, paramiko.SSHException, EOFError):
            pass
        finally:
            channel.close()
            conn.close()
            with self._lock, contextlib.suppress(ValueError):
                self._pairs.remove((conn, channel))

    def close(self) -> None:
        self._closed.set()
        # close() alone does not wake a thread blocked in accept(); shutdown() does.
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with self._lock:
            pairs = list(self._pairs)
        for conn, channel in pairs:
            channel.close()
            conn.close()
