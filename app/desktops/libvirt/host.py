"""The machine a libvirt daemon runs on, as the libvirt backend needs to reach it.

A libvirt desktop's files (disk overlay, saved memory, console log, the image it
boots) must lie on the host that runs its QEMU, and its VNC port and guest SSH are
reachable only from there (VNC on that host's 127.0.0.1, the guest on its isolated
network). `LocalHost` is this machine: plain files and direct connections.
`RemoteHost` is a host named in a `qemu+ssh://` (or `qemu+libssh://`) URI: one
paramiko SSH connection carries its file operations (SFTP, and argv commands such
as `qemu-img`), uploads images there once (checked by SHA-256), and tunnels VNC
(a local port forward) and guest SSH (a direct-tcpip channel per connection), so
nothing on that host listens beyond its loopback. Logging in there and forwarding
ports through the login are `app.desktops.remote.ssh_host`'s part.

What a desktop keeps for itself (vm.json, the pinned guest host key, start-state
metadata, its lock) stays in this machine's cache; only what QEMU reads or writes
goes to the host. Every method blocks: callers run them in worker threads.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import posixpath
import secrets
import shlex
import shutil
import stat
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import paramiko

from app.core.errors import DesktopError
from app.desktops.remote.ssh_host import PortForward, SshTarget, connect
from app.vmimages.cache import Image


@dataclass(frozen=True)
class ImageFiles:
    """Where an image's boot files are on the host that runs the desktop."""

    disk: str
    kernel: str
    initrd: str


class VmHost(Protocol):
    """What the libvirt backend does on the host that runs its domains."""

    local: bool
    label: str

    def vm_dir(self, name: str) -> str: ...
    def describe(self, path: str) -> str: ...
    def exists(self, path: str) -> bool: ...
    def mkdir(self, path: str) -> None: ...
    def remove_tree(self, path: str) -> None: ...
    def rename(self, source: str, target: str) -> None: ...
    def chmod(self, path: str, mode: int) -> None: ...
    def new_overlay(self, backing: str, overlay: str) -> None: ...
    def image_files(self, image: Image, progress: Callable[[str], None]) -> ImageFiles: ...
    def ids(self) -> tuple[int, int]: ...
    def release_lease(self, bridge: str, ip: str, mac: str) -> bool: ...
    def forward(self, port: int) -> int: ...
    def drop_forward(self, port: int) -> None: ...
    def guest_socket(self, ip: str, port: int) -> Any: ...
    def close(self) -> None: ...


def is_local_uri(uri: str) -> bool:
    """Whether the libvirt daemon at `uri` runs on this machine (no host name in it)."""
    return not urllib.parse.urlsplit(uri).hostname


# ---------------------------------------------------------------- this machine


class LocalHost:
    """This machine: paths are local files, ports are reached directly."""

    local = True
    label = "this machine"

    def __init__(self, cache: Path) -> None:
        self.cache = cache

    def vm_dir(self, name: str) -> str:
        return str(self.cache / "vms" / name)

    def describe(self, path: str) -> str:
        return path

    def exists(self, path: str) -> bool:
        return Path(path).exists()

    def mkdir(self, path: str) -> None:
        Path(path).mkdir(parents=True, exist_ok=True, mode=0o700)

    def remove_tree(self, path: str) -> None:
        shutil.rmtree(path, ignore_errors=True)

    def rename(self, source: str, target: str) -> None:
        Path(source).rename(target)

    def chmod(self, path: str, mode: int) -> None:
        Path(path).chmod(mode)

    def new_overlay(self, backing: str, overlay: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            Path(overlay).unlink()
        proc = subprocess.run(
            _overlay_argv(backing, overlay), capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            raise DesktopError(
                f"cannot make the overlay {overlay} on {backing}: {proc.stderr.strip()}"
            )
        Path(overlay).chmod(0o600)

    def image_files(self, image: Image, progress: Callable[[str], None]) -> ImageFiles:
        return ImageFiles(str(image.disk), str(image.kernel), str(image.initrd))

    def ids(self) -> tuple[int, int]:
        return os.getuid(), os.getgid()

    def release_lease(self, bridge: str, ip: str, mac: str) -> bool:
        tool = shutil.which("dhcp_release")
        if tool is None:
            return False
        subprocess.run([tool, bridge, ip, mac], capture_output=True, timeout=10, check=False)
        return True

    def forward(self, port: int) -> int:
        return port

    def drop_forward(self, port: int) -> None:
        pass

    def guest_socket(self, ip: str, port: int) -> Any:
        return None  # paramiko connects directly

    def close(self) -> None:
        pass


def _overlay_argv(backing: str, overlay: str) -> list[str]:
    return ["qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b", backing, overlay]


# ---------------------------------------------------------------- a remote host

# Images are big (0.8-2 GB): upload in blocks and say how far it got.
_UPLOAD_BLOCK = 1 << 20
_UPLOAD_REPORT_EVERY = 5.0


class RemoteHost:
    """A libvirt host reached over SSH (the URI's host, user, port and key)."""

    local = False

    def __init__(self, target: SshTarget, cache: str | None = None) -> None:
        """Connect (blocking). `cache`: the DeskLoop folder on that host (absolute;
        default `~/.cache/deskloop` of the SSH user there).

        Raises:
            DesktopError: SSH fails, or the host lacks what the backend needs.
        """
        self.target = target
        self.label = target.label
        self._lock = threading.Lock()
        self._forwards: dict[int, PortForward] = {}
        self._client = connect(target)
        self._sftp = self._client.open_sftp()
        home = self._sftp.normalize(".")
        self.cache = cache or posixpath.join(home, ".cache", "deskloop")
        if not self.cache.startswith("/"):
            raise DesktopError(f"the cache folder on {self.label} must be absolute: {self.cache!r}")
        self._ids: tuple[int, int] | None = None

    def _transport(self) -> paramiko.Transport:
        transport = self._client.get_transport()
        if transport is None or not transport.is_active():
            raise DesktopError(f"the SSH connection to {self.label} is closed")
        return transport

    # ------------------------------------------------------------ commands

    def run(self, argv: list[str], timeout: float = 120.0) -> tuple[int, str, str]:
        """Run `argv` on the host (quoted with shlex.join: the remote shell only
        splits it back); (exit code, stdout, stderr)."""
        channel = self._transport().open_session(timeout=15.0)
        try:
            channel.settimeout(timeout)
            channel.exec_command(shlex.join(argv))
            channel.shutdown_write()
            out = channel.makefile("rb").read()
            err = channel.makefile_stderr("rb").read()
            code = channel.recv_exit_status()
        except TimeoutError as exc:
            raise DesktopError(f"{argv[0]} on {self.label} ran past {timeout:g} s") from exc
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise DesktopError(f"{argv[0]} on {self.label} failed over SSH: {exc}") from exc
        finally:
            channel.close()
        return code, out.decode(errors="replace"), err.decode(errors="replace")

    def _check(self, argv: list[str], what: str, timeout: float = 120.0) -> str:
        code, out, err = self.run(argv, timeout)
        if code == 127:
            raise DesktopError(f"{what} on {self.label}: {argv[0]} is not installed there")
        if code != 0:
            raise DesktopError(f"{what} on {self.label}: {(err or out).strip() or f'exit {code}'}")
        return out

    # ------------------------------------------------------------ files

    def vm_dir(self, name: str) -> str:
        return posixpath.join(self.cache, "vms", name)

    def describe(self, path: str) -> str:
        return f"{self.label}:{path}"

    def _inside_cache(self, path: str) -> str:
        # Deletions and renames stay inside our folder on someone else's machine.
        norm = posixpath.normpath(path)
        if not norm.startswith(self.cache.rstrip("/") + "/"):
            raise DesktopError(f"refusing to change {path} on {self.label}: not under {self.cache}")
        return norm

    def exists(self, path: str) -> bool:
        try:
            self._sftp.stat(path)
            return True
        except FileNotFoundError:
            return False
        except (OSError, paramiko.SSHException) as exc:
            raise DesktopError(f"cannot check {self.describe(path)}: {exc}") from exc

    def mkdir(self, path: str) -> None:
        self._check(["mkdir", "-p", "-m", "700", "--", self._inside_cache(path)], "mkdir")

    def remove_tree(self, path: str) -> None:
        self._check(["rm", "-rf", "--", self._inside_cache(path)], "removing files")

    def rename(self, source: str, target: str) -> None:
        try:
            self._sftp.posix_rename(self._inside_cache(source), self._inside_cache(target))
        except (OSError, paramiko.SSHException) as exc:
            raise DesktopError(f"cannot rename {self.describe(source)} to {target}: {exc}") from exc

    def chmod(self, path: str, mode: int) -> None:
        try:
            self._sftp.chmod(path, mode)
        except (OSError, paramiko.SSHException) as exc:
            raise DesktopError(f"cannot chmod {self.describe(path)}: {exc}") from exc

    def new_overlay(self, backing: str, overlay: str) -> None:
        overlay = self._inside_cache(overlay)
        self._check(["rm", "-f", "--", overlay], "removing the old overlay")
        self._check(_overlay_argv(backing, overlay), f"making the overlay {overlay}")
        self.chmod(overlay, 0o600)

    def ids(self) -> tuple[int, int]:
        if self._ids is None:
            uid = self._check(["id", "-u"], "id").strip()
            gid = self._check(["id", "-g"], "id").strip()
            self._ids = int(uid), int(gid)
        return self._ids

    def release_lease(self, bridge: str, ip: str, mac: str) -> bool:
        code, _out, _err = self.run(["dhcp_release", bridge, ip, mac], 15.0)
        return code != 127

    # ------------------------------------------------------------ images

    def image_files(self, image: Image, progress: Callable[[str], None]) -> ImageFiles:
        """The image on the host, uploaded first if the host lacks this build.

        A build is complete there when its manifest is: it is written last, after
        every file's SHA-256 was checked on the host, so an interrupted upload is
        redone, never used.
        """
        folder = posixpath.join(self.cache, "images", image.dir.name)
        files = ImageFiles(
            posixpath.join(folder, "disk.qcow2"),
            posixpath.join(folder, "vmlinuz"),
            posixpath.join(folder, "initrd.img"),
        )
        with self._lock:
            if self._has_build(folder, image):
                return files
            self.mkdir(folder)
            sums = {
                "disk.qcow2": str(image.manifest["disk_sha256"]),
                "vmlinuz": str(image.manifest["kernel_sha256"]),
                "initrd.img": str(image.manifest["initrd_sha256"]),
            }
            for name, sha in sums.items():
                self._upload(image.dir / name, posixpath.join(folder, name), sha, progress)
            manifest = json.dumps(image.manifest, indent=2) + "\n"
            partial = posixpath.join(folder, f"manifest.json.{secrets.token_hex(4)}.partial")
            with self._sftp.open(partial, "wb") as f:
                f.write(manifest.encode())
            self._sftp.posix_rename(partial, posixpath.join(folder, "manifest.json"))
        return files

    def _has_build(self, folder: str, image: Image) -> bool:
        try:
            with self._sftp.open(posixpath.join(folder, "manifest.json"), "rb") as f:
                theirs = json.loads(f.read())
        except (OSError, ValueError):
            return False
        keys = ("recipe_hash", "disk_sha256", "kernel_sha256", "initrd_sha256")
        return all(theirs.get(k) == image.manifest.get(k) for k in keys)

    def _upload(self, source: Path, target: str, sha256: str, say: Callable[[str], None]) -> None:
        size = source.stat().st_size
        # Two desktops of a batch may upload the same build at once: each to its own file.
        partial = f"{target}.{secrets.token_hex(4)}.partial"
        t0 = last = time.monotonic()
        say(f"uploading {source.name} ({size / 2**20:.0f} MiB) to {self.describe(target)}")
        digest = hashlib.sha256()
        try:
            with source.open("rb") as src, self._sftp.open(partial, "wb") as dst:
                dst.set_pipelined(True)
                done = 0
                while block := src.read(_UPLOAD_BLOCK):
                    digest.update(block)
                    dst.write(block)
                    done += len(block)
                    if time.monotonic() - last > _UPLOAD_REPORT_EVERY:
                        last = time.monotonic()
                        rate = done / 2**20 / (last - t0)
                        say(f"  {source.name}: {100 * done / size:.0f}% ({rate:.0f} MiB/s)")
        except (OSError, paramiko.SSHException) as exc:
            with contextlib.suppress(OSError, paramiko.SSHException):
                self._sftp.remove(partial)
            raise DesktopError(f"cannot upload {source} to {self.describe(target)}: {exc}") from exc
        if digest.hexdigest() != sha256:
            with contextlib.suppress(OSError, paramiko.SSHException):
                self._sftp.remove(partial)
            raise DesktopError(
                f"{source} changed since its image was built (SHA-256 differs from its "
                "manifest); rebuild it with `deskloop image build`"
            )
        out = self._check(["sha256sum", "--", partial], "checking the upload", timeout=600.0)
        if out.split()[:1] != [sha256]:
            raise DesktopError(f"the upload {self.describe(partial)} arrived damaged (SHA-256)")
        self._sftp.posix_rename(partial, target)
        self._sftp.chmod(target, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
        say(f"  {source.name}: uploaded in {time.monotonic() - t0:.0f} s")

    # ------------------------------------------------------------ network reach

    def forward(self, port: int) -> int:
        """A local port that reaches 127.0.0.1:`port` on the host (kept until close)."""
        with self._lock:
            fwd = self._forwards.get(port)
            if fwd is None:
                fwd = PortForward(self._transport(), port)
                self._forwards[port] = fwd
            return fwd.local_port

    def drop_forward(self, port: int) -> None:
        with self._lock:
            fwd = self._forwards.pop(port, None)
        if fwd is not None:
            fwd.close()

    def guest_socket(self, ip: str, port: int) -> paramiko.Channel:
        """A channel to `ip`:`port` opened from the host (for paramiko's `sock=`)."""
        return self._transport().open_channel(
            "direct-tcpip", (ip, port), ("127.0.0.1", 0), timeout=10.0
        )

    def close(self) -> None:
        with self._lock:
            forwards = list(self._forwards.values())
            self._forwards.clear()
        for fwd in forwards:
            fwd.close()
        with contextlib.suppress(Exception):
            self._sftp.close()
        self._client.close()


def open_host(uri: str, cache: Path, remote_cache: str | None = None) -> VmHost:
    """The host behind a libvirt URI (blocking: a remote host is connected)."""
    if is_local_uri(uri):
        return LocalHost(cache)
    return RemoteHost(SshTarget.from_uri(uri), remote_cache)
