"""Saved start states of a libvirt desktop, and where each part of one lives.

A state `KEY` is `states/KEY/meta.json` in the desktop's folder here (its guest
address and when it was made) and `states/KEY/memory.save` (the domain's memory,
`virDomainSave`) with `states/KEY/disk.qcow2` (its disk overlay, frozen read-only) in
the desktop's folder on the libvirt host: the same folder when the host is this
machine. A state without meta.json is half-written and never restored.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

from app.desktops.libvirt.host import VmHost
from app.vmimages.cache import Image

BOOT_STATE = "boot"


@dataclass
class StartState:
    """A saved start state: its metadata in `dir` here, and its memory and frozen
    disk in `host_dir` on the libvirt host (the same folder on this machine)."""

    key: str
    dir: Path
    host_dir: str
    ip: str
    made_seconds: float

    @classmethod
    def at(cls, folder: Path, host_folder: str, key: str, ip: str, made: float) -> StartState:
        """State `key` of the desktop whose folders are `folder` here and
        `host_folder` on the libvirt host."""
        return cls(key, folder / "states" / key, f"{host_folder}/states/{key}", ip, made)

    @property
    def memory(self) -> str:
        return f"{self.host_dir}/memory.save"

    @property
    def disk(self) -> str:
        return f"{self.host_dir}/disk.qcow2"

    def write_meta(self) -> None:
        """Record it as complete (last, after its files are in place)."""
        meta = {
            "key": self.key,
            "ip": self.ip,
            "made_seconds": self.made_seconds,
            "saved": time.time(),
        }
        (self.dir / "meta.json").write_text(json.dumps(meta) + "\n")


def state_key(image: Image, width: int, height: int, setup: str) -> str:
    """The key of a start state: the image build, the screen size and the setup."""
    material = f"{image.recipe_hash}\0{width}x{height}\0{setup}"
    return hashlib.sha256(material.encode()).hexdigest()[:20]


def state_keys(folder: Path) -> list[str]:
    """The keys of the complete states of the desktop whose folder is `folder`."""
    states = folder / "states"
    if not states.is_dir():
        return []
    return sorted(p.name for p in states.iterdir() if (p / "meta.json").is_file())


def find_state(folder: Path, host_folder: str, key: str, host: VmHost) -> StartState | None:
    """The saved state `key`, if its metadata is here and its files on the host
    (blocking: a remote host is asked over SSH)."""
    try:
        meta = json.loads((folder / "states" / key / "meta.json").read_text())
    except (OSError, ValueError):
        return None
    state = StartState.at(
        folder, host_folder, key, str(meta["ip"]), float(meta.get("made_seconds", 0))
    )
    if not (host.exists(state.memory) and host.exists(state.disk)):
        return None
    return state
