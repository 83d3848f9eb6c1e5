"""A real OpenSSH server on 127.0.0.1 for tests of remote libvirt hosts.

`start_sshd(tmp)` runs `/usr/sbin/sshd` (scripts/setup.sh --tests installs it, with no
system service) on a free port with keys, authorized_keys, known_hosts and config all
in `tmp`, and returns once the server sends its SSH banner. Use it as a context
manager or call `stop()`; in a fixture:

    @pytest.fixture(scope="module")
    def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshdServer]:
        with start_sshd(tmp_path_factory.mktemp("sshd")) as server:
            yield server

Only public-key logins with `client_key` work; the host key is pinned in
`known_hosts` as `[127.0.0.1]:PORT ssh-ed25519 ...`, so clients can verify it strictly.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import signal
import socket
import subprocess
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Literal

SSHD = Path("/usr/sbin/sshd")
HOST = "127.0.0.1"
# Generous: sshd starts in well under a second, but these machines can be loaded.
START_TIMEOUT = 30.0
# sshd refuses to start without its privilege separation directory, which only the
# (never started) system service would create: /run is a tmpfs.
PRIVSEP_DIR = Path("/run/sshd")


class SshdError(RuntimeError):
    """The test sshd could not be configured or started."""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def _keygen(path: Path) -> None:
    proc = subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", path.name, "-f", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SshdError(f"ssh-keygen for {path} failed: {proc.stderr.strip()}")


def _public_key(path: Path) -> str:
    """`ssh-ed25519 AAAA...` of a key pair, without its comment."""
    kind, blob, *_ = Path(f"{path}.pub").read_text().split()
    return f"{kind} {blob}"


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"


class SshdServer:
    """One running sshd. Made by `start_sshd`; `stop()` or leave the `with` block."""

    def __init__(self, tmp: Path, port: int) -> None:
        self.tmp = tmp
        self.host = HOST
        self.port = port
        # The key and config files make no difference between users, but the tests
        # run as root, and the remote backend logs in as the user in the URI.
        self.user = getpass.getuser()
        self.host_key = tmp / "ssh_host_ed25519_key"
        self.client_key = tmp / "client_ed25519_key"
        self.authorized_keys = tmp / "authorized_keys"
        self.known_hosts = tmp / "known_hosts"
        self.config = tmp / "sshd_config"
        self.pid_file = tmp / "sshd.pid"
        self.log = tmp / "sshd.log"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        if self._proc is None:
            raise SshdError("sshd is not running")
        return self._proc.pid

    @contextlib.contextmanager
    def user_known_hosts_restored(self) -> Iterator[None]:
        """Take back what the block writes to ~/.ssh/known_hosts for our host key.

        libvirt's `ssh` transport gives ssh no known_hosts file, so with no_verify=1
        (StrictHostKeyChecking=no) ssh records every new host key there, creating
        ~/.ssh if needed. Only lines with this server's (fresh, unique) key are
        removed, and ~/.ssh and the file if the block made them and left them empty.
        """
        ssh_dir = Path.home() / ".ssh"
        user_known = ssh_dir / "known_hosts"
        dir_existed, file_existed = ssh_dir.exists(), user_known.exists()
        blob = self.known_hosts.read_text().split()[2]
        try:
            yield
        finally:
            if user_known.exists():
                lines = user_known.read_text().splitlines(keepends=True)
                kept = [line for line in lines if blob not in line.split()]
                if kept != lines:
                    user_known.write_text("".join(kept))
                if not file_existed and not kept:
                    user_known.unlink()
            if not dir_existed and ssh_dir.exists() and not any(ssh_dir.iterdir()):
                ssh_dir.rmdir()

    @contextlib.contextmanager
    def trusted_by_user(self) -> Iterator[None]:
        """Pin this server's host key in ~/.ssh/known_hosts while the block runs.

        libvirt's `ssh` transport runs /usr/bin/ssh, which checks only the user's
        known hosts; pinned there, `libvirt_uri("ssh", no_verify=False)` verifies
        the host key as a real lab's URI would.
        """
        with self.user_known_hosts_restored():
            ssh_dir = Path.home() / ".ssh"
            ssh_dir.mkdir(mode=0o700, exist_ok=True)
            with (ssh_dir / "known_hosts").open("a") as f:
                f.write(self.known_hosts.read_text().strip() + "\n")
            yield

    def libvirt_uri(
        self,
        transport: Literal["ssh", "libssh"] = "ssh",
        path: str = "/system",
        *,
        no_verify: bool = True,
    ) -> str:
        """A `qemu+ssh://` or `qemu+libssh://` URI that logs in with `client_key`.

        `ssh` runs /usr/bin/ssh, which gets only `-i keyfile` from libvirt and no
        known_hosts file: `no_verify=1` stops it asking about the unknown host key
        (it still records the key in ~/.ssh/known_hosts; see test_sshd_fixture.py).
        `libssh` checks the host key against our `known_hosts`.
        """
        keyfile = urllib.parse.quote(str(self.client_key), safe="/")
        base = f"qemu+{transport}://{self.user}@{self.host}:{self.port}{path}"
        if transport == "ssh":
            return f"{base}?keyfile={keyfile}" + ("&no_verify=1" if no_verify else "")
        if transport == "libssh":
            known_hosts = urllib.parse.quote(str(self.known_hosts), safe="/")
            return f"{base}?keyfile={keyfile}&known_hosts={known_hosts}&sshauth=privkey"
        raise ValueError(f"libvirt_uri: unknown transport {transport!r} (ssh or libssh)")

    def _write_files(self) -> None:
        for key in (self.host_key, self.client_key):
            if not key.exists():
                _keygen(key)
        self.authorized_keys.write_text(_public_key(self.client_key) + "\n")
        self.known_hosts.write_text(f"[{self.host}]:{self.port} {_public_key(self.host_key)}\n")
        self.config.write_text(
            "\n".join(
                [
                    f"ListenAddress {self.host}",
                    f"Port {self.port}",
                    f"HostKey {self.host_key}",
                    f"AuthorizedKeysFile {self.authorized_keys}",
                    f"PidFile {self.pid_file}",
                    "PubkeyAuthentication yes",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "PermitRootLogin prohibit-password",
                    "AllowTcpForwarding yes",
                    # No PAM: no login accounting or session modules for a test server.
                    "UsePAM no",
                    # pytest's tmp dirs need not have the modes sshd insists on.
                    "StrictModes no",
                    "Subsystem sftp internal-sftp",
                    # DEBUG1 logs each direct-tcpip request (its target), which tests check.
                    "LogLevel DEBUG1",
                    "",
                ]
            )
        )

    def _check_config(self) -> None:
        proc = subprocess.run(
            [str(SSHD), "-t", "-f", str(self.config)],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise SshdError(f"sshd -t rejects {self.config}: {proc.stderr.strip()}")

    def _banner(self) -> bool:
        """True once the port answers with an SSH-2.0 banner."""
        try:
            with socket.create_connection((self.host, self.port), timeout=2) as sock:
                data = b""
                while b"\n" not in data and len(data) < 256:
                    chunk = sock.recv(256)
                    if not chunk:
                        break
                    data += chunk
        except OSError:
            return False
        return data.startswith(b"SSH-2.0-")

    def start(self, timeout: float = START_TIMEOUT) -> None:
        """Write the files, check the config, run sshd and wait for its banner."""
        if not SSHD.exists():
            raise SshdError(f"{SSHD} is missing: run scripts/setup.sh --tests (openssh-server)")
        self._write_files()
        PRIVSEP_DIR.mkdir(mode=0o755, exist_ok=True)
        self._check_config()
        with self.log.open("wb") as log:
            # -D: stay in the foreground as our child; -e: log to stderr (the file).
            self._proc = subprocess.Popen(
                [str(SSHD), "-D", "-e", "-f", str(self.config)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        deadline = time.monotonic() + timeout
        while not self._banner():
            if self._proc.poll() is not None:
                code = self._proc.returncode
                self._proc = None
                raise SshdError(
                    f"sshd exited with status {code} before answering on port "
                    f"{self.port}; {self.log}:\n{_tail(self.log)}"
                )
            if time.monotonic() > deadline:
                self.stop()
                raise SshdError(
                    f"sshd did not answer on {self.host}:{self.port} within {timeout:g} s; "
                    f"{self.log}:\n{_tail(self.log)}"
                )
            time.sleep(0.02)

    def _sessions(self) -> list[int]:
        """Pids of the per-connection sshd processes (children of the listener)."""
        pids: list[int] = []
        for status in Path("/proc").glob("[0-9]*/status"):
            with contextlib.suppress(OSError):
                for line in status.read_text().splitlines():
                    if line.startswith("PPid:"):
                        if int(line.split()[1]) == self.pid:
                            pids.append(int(status.parent.name))
                        break
        return pids

    def stop(self) -> None:
        """Stop the listener and any session it still serves; idempotent."""
        proc = self._proc
        if proc is None:
            return
        # Each connection has its own sshd process that outlives the listener (in its
        # own session); a test must not leave root logins behind.
        sessions = self._sessions() if proc.poll() is None else []
        proc.terminate()
        for pid in sessions:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        self._proc = None

    def __enter__(self) -> SshdServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def start_sshd(tmp: Path, timeout: float = START_TIMEOUT) -> SshdServer:
    """Start an sshd on a free port of 127.0.0.1 with its files in `tmp`.

    Another process may take the free port between our probe and sshd's bind; then
    sshd exits at once and we try another port (a few times).
    """
    tmp.mkdir(parents=True, exist_ok=True)
    for attempt in range(3):
        server = SshdServer(tmp, _free_port())
        try:
            server.start(timeout)
        except SshdError as err:
            if "Address already in use" in str(err) and attempt < 2:
                continue
            raise
        return server
    raise AssertionError("unreachable")
