"""Make a desktop for a backend name (the `--backend` option)."""

from __future__ import annotations

import os
import sys

from app.desktops.base import Desktop
from app.errors import DesktopError

BACKENDS = ("local", "libvirt")


def make_desktop(
    backend: str, *, width: int = 1280, height: int = 800, image: str | None = None
) -> Desktop:
    """A new, not yet started desktop of `backend`; `reset()` starts it.

    libvirt: the VM `run-IMAGE` (domain deskloop-run-IMAGE), kept between runs so
    its start states are reused; `image` defaults to $DESKLOOP_IMAGE, else gimp.

    Raises:
        DesktopError: unknown backend.
    """
    if backend == "local":
        from app.desktops.local import LocalDesktop

        return LocalDesktop(width=width, height=height)
    if backend == "libvirt":
        from app.desktops.libvirt import DEFAULT_IMAGE, LibvirtDesktop

        name = image or os.environ.get("DESKLOOP_IMAGE", DEFAULT_IMAGE)
        return LibvirtDesktop(
            name=f"run-{name}",
            image=name,
            width=width,
            height=height,
            # Cold boots and start-state saves take minutes under TCG: say so.
            progress=lambda text: print(f"[libvirt] {text}", file=sys.stderr, flush=True),
        )
    raise DesktopError(f"unknown backend {backend!r}; available: {', '.join(BACKENDS)}")
