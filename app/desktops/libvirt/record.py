"""What a libvirt desktop keeps in its folder on this machine: its record (`vm.json`,
`VmRecord`) and the lock that keeps a second DeskLoop process from driving it
(`FolderLock`)."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import secrets
from dataclasses import asdict, dataclass
from pathlib import Path

from app.core.errors import DesktopError
from app.vmimages.cache import Image, find_image

LOCK_FILE = ".lock"
_PASSWORD_ALPHABET = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"


@dataclass
class VmRecord:
    """What `vm.json` keeps about a desktop."""

    name: str
    image: str
    image_dir: str
    recipe_hash: str
    mac: str
    vnc_password: str
    width: int
    height: int
    memory_mib: int
    vcpus: int
    virt_type: str
    created: float
    ip: str = ""
    uri: str = ""  # "" in records made before remote hosts: the default URI
    host_dir: str = ""  # the desktop's folder on the libvirt host; "": the local folder

    @classmethod
    def load(cls, path: Path) -> VmRecord:
        try:
            data = json.loads(path.read_text())
            return cls(**data)
        except (OSError, ValueError, TypeError) as exc:
            raise DesktopError(f"{path}: unreadable desktop record: {exc}") from exc

    def save(self, path: Path) -> None:
        """Write it to `path` whole (a reader never sees half a record), mode 0600."""
        partial = path.with_name(path.name + ".partial")
        partial.write_text(json.dumps(asdict(self), indent=2) + "\n")
        partial.chmod(0o600)
        partial.rename(path)

    def image_build(self, cache: Path) -> Image:
        """The image build this desktop was made from, even if rebuilt since.

        Raises:
            DesktopError: that build is gone.
        """
        image = find_image(self.image, cache)
        image_dir = Path(self.image_dir)
        if image is not None and image.dir == image_dir:
            return image
        # The image was rebuilt since this desktop was made: keep using its build.
        manifest_path = image_dir / "manifest.json"
        try:
            manifest = json.loads(manifest_path.read_text())
        except (OSError, ValueError) as exc:
            raise DesktopError(
                f"libvirt desktop {self.name}: its image build {image_dir} is gone ({exc}); "
                f"remove it with `deskloop vm rm {self.name}`"
            ) from exc
        return Image(self.image, image_dir, manifest)


def mac_for(name: str) -> str:
    """A locally administered unicast MAC, stable for the desktop's name."""
    digest = hashlib.sha256(name.encode()).digest()
    return "52:54:00:" + ":".join(f"{b:02x}" for b in digest[:3])


def new_vnc_password() -> str:
    return "".join(secrets.choice(_PASSWORD_ALPHABET) for _ in range(8))


class FolderLock:
    """An exclusive flock on a desktop's folder for as long as this process drives it."""

    def __init__(self, folder: Path, name: str) -> None:
        self.folder = folder
        self.name = name
        self._fd: int | None = None

    def take(self) -> None:
        """Take it (made with the folder if need be); a no-op when held already.

        Raises:
            DesktopError: another process holds it.
        """
        if self._fd is not None:
            return
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = self.folder / LOCK_FILE
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DesktopError(
                f"libvirt desktop {self.name} is in use by another DeskLoop process (lock {path})"
            ) from None
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
