"""Make a desktop for a backend name (the `--backend` option)."""

from __future__ import annotations

from app.desktops.base import Desktop
from app.errors import DesktopError

BACKENDS = ("local",)


def make_desktop(backend: str, *, width: int = 1280, height: int = 800) -> Desktop:
    """A new, not yet started desktop of `backend`; `reset()` starts it.

    Raises:
        DesktopError: unknown backend.
    """
    if backend == "local":
        from app.desktops.local import LocalDesktop

        return LocalDesktop(width=width, height=height)
    raise DesktopError(f"unknown backend {backend!r}; available: {', '.join(BACKENDS)}")
