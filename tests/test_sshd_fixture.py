"""tests/sshd.py gives a real, usable SSH server: what the remote libvirt backend uses.

paramiko (commands, SFTP, direct-tcpip forwarding) with the host key verified from the
generated known_hosts, a refused stranger key, and libvirt's own `libssh` and `ssh`
transports reaching this machine's libvirtd through it.
"""

from __future__ import annotations

import os
import secrets
import shlex
import socket
import socketserver
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import libvirt
import paramiko
import pytest

from tests.sshd import SshdServer, start_sshd

pytestmark = pytest.mark.desktop  # a real sshd and libvirtd, like the other infra tests

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshdServer]:
    with start_sshd(tmp_path_factory.mktemp("sshd")) as server:
        yield server


@pytest.fixture(scope="module")
def libvirtd() -> None:
    # Idempotent: leaves a running libvirtd alone (no systemd starts it here).
    subprocess.run(["bash", str(REPO / "scripts" / "services.sh")], check=True)


def _client(server: SshdServer, key: Path, known_hosts: Path) -> paramiko.SSHClient:
    client = paramiko.SSHClient()
    client.load_host_keys(str(known_hosts))
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    client.connect(
        server.host,
        port=server.port,
        username=server.user,
        key_filename=str(key),
        look_for_keys=False,
        allow_agent=False,
        timeout=30,
    )
    return client


@pytest.fixture
def ssh(sshd: SshdServer) -> Iterator[paramiko.SSHClient]:
    client = _client(sshd, sshd.client_key, sshd.known_hosts)
    try:
        yield client
    finally:
        client.close()


def test_command_runs_as_the_current_user(ssh: paramiko.SSHClient) -> None:
    _, stdout, stderr = ssh.exec_command(shlex.join(["id", "-u"]), timeout=30)
    assert stdout.channel.recv_exit_status() == 0, stderr.read()
    assert stdout.read().decode().strip() == str(os.getuid())


def test_sftp_round_trip(ssh: paramiko.SSHClient, tmp_path: Path) -> None:
    payload = secrets.token_bytes(70_000)
    local = tmp_path / "up.bin"
    local.write_bytes(payload)
    remote = tmp_path / "remote" / "copy.bin"
    remote.parent.mkdir()
    back = tmp_path / "down.bin"
    with ssh.open_sftp() as sftp:
        sftp.put(str(local), str(remote))
        sftp.get(str(remote), str(back))
    # The server is this machine, so the remote file is visible here too.
    assert remote.read_bytes() == payload
    assert back.read_bytes() == payload


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(65536):
            self.server.received.append(data)  # type: ignore[attr-defined]
            self.request.sendall(data)


@pytest.fixture
def echo_server() -> Iterator[socketserver.ThreadingTCPServer]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    server.received = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def test_direct_tcpip_channel_carries_bytes_both_ways(
    ssh: paramiko.SSHClient, echo_server: socketserver.ThreadingTCPServer
) -> None:
    transport = ssh.get_transport()
    assert transport is not None
    port = echo_server.server_address[1]
    payload = secrets.token_bytes(100_000)
    channel = transport.open_channel("direct-tcpip", ("127.0.0.1", port), ("127.0.0.1", 0))
    try:
        channel.settimeout(30)
        channel.sendall(payload)
        echoed = b""
        while len(echoed) < len(payload):
            chunk = channel.recv(65536)
            assert chunk, f"channel closed after {len(echoed)} of {len(payload)} bytes"
            echoed += chunk
    finally:
        channel.close()
    assert echoed == payload
    assert b"".join(echo_server.received) == payload  # type: ignore[attr-defined]


def test_a_stranger_key_is_refused(sshd: SshdServer, tmp_path: Path) -> None:
    stranger = tmp_path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True)
    with pytest.raises(paramiko.AuthenticationException):
        _client(sshd, stranger, sshd.known_hosts).close()


def test_an_unknown_host_key_is_rejected(sshd: SshdServer, tmp_path: Path) -> None:
    # The same server with a known_hosts that pins another key: RejectPolicy must bite,
    # so the positive tests above really verify the generated known_hosts.
    other = tmp_path / "other_host_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    wrong = tmp_path / "known_hosts"
    kind, blob, *_ = Path(f"{other}.pub").read_text().split()
    wrong.write_text(f"[{sshd.host}]:{sshd.port} {kind} {blob}\n")
    with pytest.raises(paramiko.BadHostKeyException):
        _client(sshd, sshd.client_key, wrong).close()


def _accepted_logins(server: SshdServer) -> int:
    return server.log.read_text().count(f"Accepted publickey for {server.user} ")


@pytest.mark.usefixtures("libvirtd")
@pytest.mark.parametrize("transport", ["libssh", "ssh"])
def test_libvirt_reaches_libvirtd_through_the_server(sshd: SshdServer, transport: str) -> None:
    before = _accepted_logins(sshd)
    uri = sshd.libvirt_uri("libssh" if transport == "libssh" else "ssh")
    with sshd.user_known_hosts_restored():
        conn = libvirt.open(uri)
        try:
            assert conn.getHostname() == socket.gethostname()
            assert isinstance(conn.listAllDomains(), list)
            assert conn.getURI() == uri
        finally:
            conn.close()
    # It went through this sshd, not some other way to libvirtd.
    assert _accepted_logins(sshd) > before


@pytest.mark.usefixtures("libvirtd")
def test_libssh_verifies_the_host_key(sshd: SshdServer, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    uri = (
        f"qemu+libssh://{sshd.user}@{sshd.host}:{sshd.port}/system"
        f"?keyfile={quote(str(sshd.client_key))}&known_hosts={quote(str(empty))}"
        "&sshauth=privkey"
    )
    with pytest.raises(libvirt.libvirtError, match="host key"):
        libvirt.open(uri)
    assert empty.read_text() == ""
