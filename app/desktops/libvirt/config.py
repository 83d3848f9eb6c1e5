"""Settings of libvirt desktops (`LibvirtConfig`), desktop names, and the recipe
templates the settings point at (`fill_template`)."""

from __future__ import annotations

import os
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape

from app.core.errors import DesktopError
from app.core.settings import read_settings
from app.desktops.libvirt.host import VmHost, is_local_uri, open_host
from app.vmimages.cache import cache_dir
from app.vmimages.recipes import RECIPES_DIR

DOMAIN_PREFIX = "deskloop-"
DEFAULT_URI = "qemu:///system"
DEFAULT_IMAGE = "gimp"
# The /24 of the isolated network; override with $DESKLOOP_SUBNET (e.g. 10.99.1).
DEFAULT_SUBNET = "10.213.77"

# Tasks wait 90 s for GIMP's or Kdenlive's window, written for a native desktop where
# they open in 3-13 s; under TCG they take about 2 min (FIELD_NOTES), so waits are
# stretched this much there (270 s for those windows).
TCG_TIME_SCALE = 3.0


def detect_virt_type(exists: Callable[[str], bool] = os.path.exists) -> tuple[str, str]:
    """('kvm' | 'qemu', why): the libvirt domain type a host can run; `exists`
    looks at that host's files (this machine's by default).

    Ordinary KVM (kvm_intel / kvm_amd loaded) boots stock guest kernels. A PVM
    `/dev/kvm` (the kvm_pvm module) runs only specially built guest kernels, so
    such hosts use software emulation (TCG), as do hosts without /dev/kvm.
    $DESKLOOP_VIRT_TYPE overrides the choice.
    """
    forced = read_settings().virt_type
    if forced:
        return forced, "set by DESKLOOP_VIRT_TYPE"
    if exists("/sys/module/kvm_pvm"):
        return "qemu", "software emulation (TCG): /dev/kvm is PVM, which cannot boot a stock kernel"
    if not exists("/dev/kvm"):
        return "qemu", "software emulation (TCG): no /dev/kvm"
    for module in ("kvm_intel", "kvm_amd"):
        if exists(f"/sys/module/{module}"):
            return "kvm", f"hardware virtualization (KVM, {module})"
    return "qemu", "software emulation (TCG): neither kvm_intel nor kvm_amd is loaded"


@dataclass
class LibvirtConfig:
    """Settings for libvirt desktops; every field has an environment override."""

    uri: str = field(default_factory=lambda: read_settings().libvirt_uri or DEFAULT_URI)
    virt_type: str | None = None  # None: detect_virt_type()
    vcpus: int = field(default_factory=lambda: read_settings().vm_vcpus or 2)
    memory_mib: int | None = None  # None: the image's default
    subnet: str = field(default_factory=lambda: read_settings().subnet or DEFAULT_SUBNET)
    cache: Path = field(default_factory=cache_dir)
    recipes: Path = RECIPES_DIR
    boot_timeout: float = field(default_factory=lambda: read_settings().boot_timeout or 420.0)
    """Seconds a cold boot may take to a usable desktop; eight VMs booting at once on
    two loaded cores under emulation need more (over 7 minutes at load 30)."""
    restore_timeout: float = 120.0
    time_scale: float | None = field(default_factory=lambda: read_settings().time_scale)
    """Multiplier for waits written for a native desktop; None: TCG_TIME_SCALE under
    software emulation, 1 under KVM."""
    remote_cache: str | None = field(default_factory=lambda: read_settings().remote_cache)
    """On a remote libvirt host: the absolute folder for images and desktop files
    there; None: ~/.cache/deskloop of the SSH user."""

    def virt(self, exists: Callable[[str], bool] = os.path.exists) -> tuple[str, str]:
        if self.virt_type:
            return self.virt_type, "set in the configuration"
        return detect_virt_type(exists)

    @property
    def local(self) -> bool:
        return is_local_uri(self.uri)

    def open_host(self) -> VmHost:
        """The machine that runs this URI's domains (blocking; connects over SSH)."""
        return open_host(self.uri, self.cache, self.remote_cache)

    def scale_for(self, virt_type: str) -> float:
        if self.time_scale is not None:
            return self.time_scale
        return TCG_TIME_SCALE if virt_type == "qemu" else 1.0


def validate_name(name: str) -> str:
    if not name or len(name) > 40 or not all(c.isalnum() or c in "-_" for c in name):
        raise DesktopError(
            f"desktop name {name!r}: use 1-40 letters, digits, '-' or '_' "
            f"(the libvirt domain is {DOMAIN_PREFIX}NAME)"
        )
    return name


def fill_template(template_path: Path, values: dict[str, str]) -> str:
    """A recipe template (`$name` placeholders) filled with XML-escaped `values`."""
    try:
        text = template_path.read_text()
    except OSError as exc:
        raise DesktopError(f"cannot read the template {template_path}: {exc}") from exc
    try:
        return string.Template(text).substitute(
            {k: escape(v, {"'": "&apos;", '"': "&quot;"}) for k, v in values.items()}
        )
    except (KeyError, ValueError) as exc:
        raise DesktopError(f"{template_path}: bad or missing placeholder {exc}") from exc
