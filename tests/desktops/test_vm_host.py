"""`RemoteHost` against a real OpenSSH server on 127.0.0.1: what the libvirt backend
does on a `qemu+ssh://` host (files confined to its cache folder, image uploads
checked by SHA-256, VNC forwarded here, guest connections tunnelled from there).
"""

from __future__ import annotations

import hashlib
import json
import socket
import subprocess
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from app.core.errors import DesktopError
from app.desktops.libvirt.host import LocalHost, RemoteHost
from app.desktops.remote.ssh_host import SshTarget
from app.vmimages.cache import Image
from tests.sshd import SshdServer, start_sshd

pytestmark = pytest.mark.desktop


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshdServer]:
    with start_sshd(tmp_path_factory.mktemp("sshd")) as server:
        yield server


def _target(server: SshdServer, **changes: object) -> SshTarget:
    fields: dict[str, object] = {
        "host": server.host,
        "port": server.port,
        "user": server.user,
        "keyfile": str(server.client_key),
        "known_hosts": str(server.known_hosts),
        "verify": True,
    }
    fields.update(changes)
    return SshTarget(**fields)  # type: ignore[arg-type]


@pytest.fixture
def host(sshd: SshdServer, tmp_path: Path) -> Iterator[RemoteHost]:
    remote = RemoteHost(_target(sshd), str(tmp_path / "remote-cache"))
    try:
        yield remote
    finally:
        remote.close()


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _small_image(folder: Path) -> Image:
    """A real (tiny) qcow2 with kernel and initrd stand-ins, and its manifest."""
    folder.mkdir(parents=True)
    subprocess.run(
        ["qemu-img", "create", "-q", "-f", "qcow2", str(folder / "disk.qcow2"), "16M"], check=True
    )
    (folder / "vmlinuz").write_bytes(b"kernel " * 40_000)
    (folder / "initrd.img").write_bytes(bytes(range(256)) * 9_000)
    manifest = {
        "name": "tiny",
        "recipe_hash": "abc123",
        "disk_sha256": _sha256(folder / "disk.qcow2"),
        "kernel_sha256": _sha256(folder / "vmlinuz"),
        "initrd_sha256": _sha256(folder / "initrd.img"),
    }
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return Image("tiny", folder, manifest)


def test_an_image_is_uploaded_once_and_checked(host: RemoteHost, tmp_path: Path) -> None:
    image = _small_image(tmp_path / "local" / "tiny-abc123")
    said: list[str] = []
    files = host.image_files(image, said.append)
    assert files.disk.startswith(host.cache + "/images/tiny-abc123/")
    for local, remote in (
        (image.disk, files.disk),
        (image.kernel, files.kernel),
        (image.initrd, files.initrd),
    ):
        assert Path(remote) != local
        assert _sha256(Path(remote)) == _sha256(local)
    assert any("uploading vmlinuz" in line for line in said)
    assert not list(Path(host.cache).rglob("*.partial"))

    said.clear()
    assert host.image_files(image, said.append) == files
    assert said == []  # the manifest there matches: nothing is sent again


def test_an_image_changed_since_its_build_is_not_used(host: RemoteHost, tmp_path: Path) -> None:
    image = _small_image(tmp_path / "local" / "tiny-abc123")
    image.kernel.write_bytes(b"tampered")
    with pytest.raises(DesktopError, match="rebuild it"):
        host.image_files(image, lambda _text: None)
    folder = Path(host.cache) / "images" / "tiny-abc123"
    assert not (folder / "manifest.json").exists()  # so the next try uploads again
    assert not list(folder.glob("*.partial"))


def test_two_desktops_may_upload_one_build_at_once(
    sshd: SshdServer, host: RemoteHost, tmp_path: Path
) -> None:
    image = _small_image(tmp_path / "local" / "tiny-abc123")
    other = RemoteHost(_target(sshd), host.cache)
    try:
        with ThreadPoolExecutor(2) as pool:
            uploads = [pool.submit(h.image_files, image, lambda _t: None) for h in (host, other)]
            first, second = (u.result(timeout=120) for u in uploads)
    finally:
        other.close()
    assert first == second
    assert _sha256(Path(first.disk)) == _sha256(image.disk)
    assert _sha256(Path(first.initrd)) == _sha256(image.initrd)
    assert not list(Path(host.cache).rglob("*.partial"))


def test_overlays_and_files_stay_inside_the_cache_folder(host: RemoteHost, tmp_path: Path) -> None:
    image = _small_image(tmp_path / "local" / "tiny-abc123")
    files = host.image_files(image, lambda _text: None)
    vm = host.vm_dir("desk-1")
    host.mkdir(vm + "/states/boot")
    host.new_overlay(files.disk, vm + "/disk.qcow2")
    info = subprocess.run(
        ["qemu-img", "info", "--output=json", vm + "/disk.qcow2"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert json.loads(info.stdout)["backing-filename"] == files.disk
    host.rename(vm + "/disk.qcow2", vm + "/states/boot/disk.qcow2")
    assert host.exists(vm + "/states/boot/disk.qcow2")
    assert not host.exists(vm + "/disk.qcow2")

    outside = tmp_path / "not-ours"
    outside.mkdir()
    with pytest.raises(DesktopError, match="not under"):
        host.remove_tree(str(outside))
    with pytest.raises(DesktopError, match="not under"):
        host.remove_tree(host.cache + "/../not-ours")
    with pytest.raises(DesktopError, match="not under"):
        host.rename(vm + "/states", str(outside / "x"))
    assert outside.is_dir()

    host.remove_tree(vm)
    assert not Path(vm).exists()
    assert host.ids() == (LocalHost(tmp_path).ids())  # the same machine, the same user


class _Echo:
    """A TCP echo server on 127.0.0.1 (stands for QEMU's VNC port and a guest's sshd)."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.server.getsockname()[1])
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._echo, args=(conn,), daemon=True).start()

    @staticmethod
    def _echo(conn: socket.socket) -> None:
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)


def test_a_port_on_the_host_is_forwarded_here(host: RemoteHost) -> None:
    echo = _Echo()
    local = host.forward(echo.port)
    assert local != echo.port
    assert host.forward(echo.port) == local  # one forward per port
    payload = bytes(range(256)) * 4096  # 1 MiB, both ways, on two connections at once
    for _ in range(2):
        with socket.create_connection(("127.0.0.1", local), timeout=10) as conn:
            received = bytearray()
            sender = threading.Thread(target=conn.sendall, args=(payload,))
            sender.start()
            while len(received) < len(payload):
                chunk = conn.recv(65536)
                assert chunk, "the forward closed early"
                received += chunk
            sender.join()
            assert bytes(received) == payload
    host.drop_forward(echo.port)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", local), timeout=5).recv(1)


def test_a_guest_socket_is_opened_from_the_host(host: RemoteHost) -> None:
    echo = _Echo()
    channel = host.guest_socket("127.0.0.1", echo.port)
    try:
        channel.sendall(b"hello guest")
        assert channel.recv(100) == b"hello guest"
    finally:
        channel.close()


def test_an_unknown_host_key_is_refused_unless_the_uri_says_no_verify(
    sshd: SshdServer, tmp_path: Path
) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    with pytest.raises(DesktopError, match=r"not in .*known_hosts.*no_verify=1"):
        RemoteHost(_target(sshd, known_hosts=str(empty)), str(tmp_path / "c"))
    RemoteHost(_target(sshd, known_hosts=str(empty), verify=False), str(tmp_path / "c")).close()


def test_a_key_the_host_does_not_accept_is_named(sshd: SshdServer, tmp_path: Path) -> None:
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    with pytest.raises(DesktopError, match=f"refused the key {other}"):
        RemoteHost(_target(sshd, keyfile=str(other)), str(tmp_path / "c"))
