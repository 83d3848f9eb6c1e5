"""Make a desktop for a backend name (the `--backend` option)."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from app.core.errors import DesktopError
from app.core.settings import read_settings

if TYPE_CHECKING:
    # Only named in annotations: the CLI imports this module for BACKENDS when it builds
    # its parser, and the desktop base (numpy, the VNC client) cost `tasks list` 0.14 s.
    from app.desktops.base import Desktop

BACKENDS = ("local", "libvirt")


def make_desktop(
    backend: str,
    *,
    width: int = 1280,
    height: int = 800,
    image: str | None = None,
    uri: str | None = None,
    index: int = 0,
    progress: Callable[[str], None] | None = None,
) -> Desktop:
    """A new, not yet started desktop of `backend`; `reset()` starts it. `progress`
    hears what takes minutes (a VM's cold boot, a start state saved); by default it
    goes to stderr, which a full-screen interface must not write to: the TUI passes
    its own.

    libvirt: the VM `run-IMAGE` (domain deskloop-run-IMAGE), kept between runs so
    its start states are reused; `image` defaults to $DESKLOOP_IMAGE, else gimp.
    `uri` is the libvirt connection (default $DESKLOOP_LIBVIRT_URI, else
    qemu:///system). `index` tells apart desktops that run at once on one URI (a
    batch's pool): each gets its own VM, `run-IMAGE-INDEX`. A URI other than the
    default adds a short hash of it to the name, because a VM's folder (its lock, disk
    and start states) is named after the VM alone, whatever its host.

    The local backend ignores `image`, `uri` and `index`: one local desktop runs every
    app, and each gets its own X display.

    Raises:
        DesktopError: unknown backend, or a negative index.
    """
    if index < 0:
        raise DesktopError(f"desktop index must be >= 0, got {index}")
    if backend == "local":
        from app.desktops.local.desktop import LocalDesktop

        return LocalDesktop(width=width, height=height)
    if backend == "libvirt":
        from app.desktops.libvirt import DEFAULT_IMAGE, LibvirtConfig, LibvirtDesktop

        image_name = image or read_settings().image or DEFAULT_IMAGE
        config = LibvirtConfig() if uri is None else LibvirtConfig(uri=uri)
        return LibvirtDesktop(
            name=libvirt_desktop_name(image_name, uri, index, default_uri=LibvirtConfig().uri),
            image=image_name,
            width=width,
            height=height,
            config=config,
            # Cold boots and start-state saves take minutes under TCG: say so.
            progress=progress or _to_stderr,
        )
    raise DesktopError(f"unknown backend {backend!r}; available: {', '.join(BACKENDS)}")


def _to_stderr(text: str) -> None:
    print(f"[libvirt] {text}", file=sys.stderr, flush=True)


def libvirt_desktop_name(image: str, uri: str | None, index: int, *, default_uri: str) -> str:
    """`run-IMAGE[-HASH][-INDEX]`: stable for one (image, URI, index), so a VM and its
    start states are found again by the next run on that host and place."""
    name = f"run-{image}"
    if uri is not None and uri != default_uri:
        name += "-" + hashlib.sha256(uri.encode()).hexdigest()[:6]
    if index:
        name += f"-{index}"
    return name
