"""Every DESKLOOP_* setting a person can give in the environment: its name, what it
changes and its default, read and checked here and nowhere else.

Callers ask `read_settings()` for the values (it reads the environment each time, so a
test or a shell that changes a variable is seen). A value that cannot be used is
refused, when it is read, with a SettingError naming the variable, the value and what
was expected.
`SETTINGS` lists them all; docs/configuration.md is checked against it.

Not here: the variables DeskLoop sets for its own child processes (the local desktop's
process markers in app/desktops/local/reaper.py) and the test suite's own knobs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal, TypeVar

from app.core.errors import DeskLoopError
from app.core.vocabulary import ErrorKind

GraphicsChoice = Literal["auto", "kitty", "sixel", "halfblock"]
GRAPHICS_CHOICES: tuple[GraphicsChoice, ...] = ("auto", "kitty", "sixel", "halfblock")
VirtType = Literal["kvm", "qemu"]
VIRT_TYPES: tuple[VirtType, ...] = ("kvm", "qemu")


class SettingError(DeskLoopError):
    """A DESKLOOP_* variable holds a value that cannot be used: the same on a retry."""

    kind: ClassVar[ErrorKind] = "other"


@dataclass(frozen=True)
class Setting:
    name: str
    default: str
    """The default as a person reads it."""
    meaning: str


SETTINGS: tuple[Setting, ...] = (
    Setting("DESKLOOP_DB", "sessions/deskloop.db", "the episode database (`--db` overrides)"),
    Setting(
        "DESKLOOP_CACHE",
        "$XDG_CACHE_HOME/deskloop or ~/.cache/deskloop",
        "VM images, their layers, VM files and other caches",
    ),
    Setting(
        "DESKLOOP_TASK_CACHE",
        "on: the cache folder's tasks/",
        "parsed task files kept between runs: `on`, `off`, or the folder to keep them in",
    ),
    Setting(
        "DESKLOOP_IMAGE",
        "the task's app (gimp, blender, kdenlive, web)",
        "the VM image a libvirt desktop boots",
    ),
    Setting(
        "DESKLOOP_LIBVIRT_URI",
        "qemu:///system",
        "the libvirt host of VMs (`--uri` overrides)",
    ),
    Setting(
        "DESKLOOP_LIBVIRT_URIS",
        "none: one host, DESKLOOP_LIBVIRT_URI",
        "a batch's pool of libvirt hosts, comma separated `URI[*N]`",
    ),
    Setting(
        "DESKLOOP_VIRT_TYPE",
        "detected: kvm where it can boot a stock kernel, else qemu",
        "`kvm` or `qemu` (software emulation) for new VMs",
    ),
    Setting("DESKLOOP_VM_VCPUS", "2", "vCPUs of a new VM"),
    Setting(
        "DESKLOOP_BOOT_TIMEOUT", "420", "seconds a VM's cold boot may take to a usable desktop"
    ),
    Setting(
        "DESKLOOP_TIME_SCALE",
        "3 under software emulation, 1 under KVM",
        "multiplier for waits written for a native desktop",
    ),
    Setting("DESKLOOP_SUBNET", "10.213.77", "the /24 of DeskLoop's libvirt network"),
    Setting(
        "DESKLOOP_REMOTE_CACHE",
        "~/.cache/deskloop of the SSH user",
        "on a remote libvirt host, the absolute folder for images and VM files",
    ),
    Setting(
        "DESKLOOP_GRAPHICS",
        "auto",
        "how the TUI draws the live desktop: " + ", ".join(GRAPHICS_CHOICES),
    ),
    Setting("DESKLOOP_NOVNC_DIR", "/usr/share/novnc", "where noVNC's files are installed"),
)
NAMES = frozenset(s.name for s in SETTINGS)


class Settings:
    """The settings given in an environment; None where a variable is not set.

    Each is parsed when asked for, so a bad value stops only the work that needs it
    (a wrong $DESKLOOP_VM_VCPUS does not stop `deskloop tasks list`).

    Raises (on reading an attribute):
        SettingError: that variable's value cannot be used; the message names it.
    """

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._env = dict(environ)

    def _text(self, name: str) -> str | None:
        return self._env.get(name, "").strip() or None

    def _path(self, name: str) -> Path | None:
        value = self._text(name)
        return Path(value).expanduser() if value else None

    @property
    def db(self) -> Path | None:
        return self._path("DESKLOOP_DB")

    @property
    def cache(self) -> Path | None:
        return self._path("DESKLOOP_CACHE")

    @property
    def cache_root(self) -> Path:
        """Where DeskLoop caches (VM images, parsed tasks): $DESKLOOP_CACHE, else
        $XDG_CACHE_HOME/deskloop, else ~/.cache/deskloop."""
        given = self.cache
        if given is not None:
            return given
        xdg = self._path("XDG_CACHE_HOME")
        return (xdg if xdg is not None else Path.home() / ".cache") / "deskloop"

    @property
    def task_cache(self) -> Path | None:
        """The folder of the parsed-task cache; None when it is off."""
        raw = self._env.get("DESKLOOP_TASK_CACHE", "").strip()
        if raw.lower() in ("off", "0", "no", "false"):
            return None
        if raw.lower() in ("", "on", "1", "yes", "true"):
            return self.cache_root / "tasks"
        return Path(raw).expanduser()

    @property
    def image(self) -> str | None:
        return self._text("DESKLOOP_IMAGE")

    @property
    def libvirt_uri(self) -> str | None:
        return self._text("DESKLOOP_LIBVIRT_URI")

    @property
    def libvirt_uris(self) -> str:
        """Raw: app/batch/hosts.py parses the pool (its errors name the entry)."""
        return self._env.get("DESKLOOP_LIBVIRT_URIS", "")

    @property
    def virt_type(self) -> VirtType | None:
        return _choice(self._env, "DESKLOOP_VIRT_TYPE", VIRT_TYPES)

    @property
    def vm_vcpus(self) -> int | None:
        return _positive_int(self._env, "DESKLOOP_VM_VCPUS")

    @property
    def boot_timeout(self) -> float | None:
        return _positive_float(self._env, "DESKLOOP_BOOT_TIMEOUT")

    @property
    def time_scale(self) -> float | None:
        return _positive_float(self._env, "DESKLOOP_TIME_SCALE")

    @property
    def subnet(self) -> str | None:
        return self._text("DESKLOOP_SUBNET")

    @property
    def remote_cache(self) -> str | None:
        return self._text("DESKLOOP_REMOTE_CACHE")

    @property
    def graphics(self) -> GraphicsChoice | None:
        return _choice(self._env, "DESKLOOP_GRAPHICS", GRAPHICS_CHOICES)

    @property
    def novnc_dir(self) -> Path:
        """Where noVNC's files are (the TUI's viewers and the participant view)."""
        return self._path("DESKLOOP_NOVNC_DIR") or Path("/usr/share/novnc")


def read_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """The settings in `environ` (default: this process's environment, as it is now)."""
    return Settings(os.environ if environ is None else environ)


C = TypeVar("C", bound=str)


def _choice(env: Mapping[str, str], name: str, choices: tuple[C, ...]) -> C | None:
    raw = env.get(name, "")
    value = raw.strip().lower()
    if not value:
        return None
    for choice in choices:
        if value == choice:
            return choice
    raise SettingError(f"${name}={raw!r}: expected one of {', '.join(choices)}")


def _positive_float(env: Mapping[str, str], name: str) -> float | None:
    raw = env.get(name, "")
    if not raw.strip():
        return None
    try:
        value = float(raw)
    except ValueError:
        raise SettingError(f"${name}={raw!r}: expected a number such as 3") from None
    if not value > 0:
        raise SettingError(f"${name}={raw!r}: must be positive")
    return value


def _positive_int(env: Mapping[str, str], name: str) -> int | None:
    raw = env.get(name, "")
    if not raw.strip():
        return None
    try:
        value = int(raw)
    except ValueError:
        raise SettingError(f"${name}={raw!r}: expected a whole number such as 2") from None
    if value < 1:
        raise SettingError(f"${name}={raw!r}: must be at least 1")
    return value
