"""The libvirt connection and what arrives on it: `open_connection` (with libvirt's
event loop running), domain state names, and `DomainWatch`, a domain's lifecycle
followed through libvirt events rather than by polling."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

import libvirt

from app.core.errors import DesktopError
from app.desktops.libvirt.config import DEFAULT_URI

_event_lock = threading.Lock()
_event_thread: threading.Thread | None = None


def _ensure_event_loop() -> None:
    """Register libvirt's default event loop once and run it on a daemon thread.

    It must be registered before the first connection is opened; lifecycle
    callbacks and connection keepalives are dispatched from it.
    """
    global _event_thread
    with _event_lock:
        if _event_thread is not None:
            return
        libvirt.virEventRegisterDefaultImpl()

        def run() -> None:
            while True:
                libvirt.virEventRunDefaultImpl()

        _event_thread = threading.Thread(target=run, name="libvirt-events", daemon=True)
        _event_thread.start()


def _silence_libvirt_stderr() -> None:
    # libvirt prints every error to stderr as well as raising it; we report them.
    libvirt.registerErrorHandler(lambda _ctx, _err: None, None)


def open_connection(uri: str) -> libvirt.virConnect:
    """A libvirt connection with the event loop running (blocking).

    Raises:
        DesktopError: libvirtd is not reachable at `uri`.
    """
    _ensure_event_loop()
    _silence_libvirt_stderr()
    try:
        conn = libvirt.open(uri)
    except libvirt.libvirtError as exc:
        hint = " (start it with scripts/services.sh)" if uri == DEFAULT_URI else ""
        raise DesktopError(f"cannot connect to libvirt at {uri}{hint}: {exc}") from exc
    with contextlib.suppress(libvirt.libvirtError):
        conn.setKeepAlive(5, 3)
    return conn


def state_name(code: int) -> str:
    """libvirt's domain state code in words ('running', 'shut off', ...)."""
    names = {
        libvirt.VIR_DOMAIN_RUNNING: "running",
        libvirt.VIR_DOMAIN_PAUSED: "paused",
        libvirt.VIR_DOMAIN_SHUTDOWN: "shutting down",
        libvirt.VIR_DOMAIN_SHUTOFF: "shut off",
        libvirt.VIR_DOMAIN_CRASHED: "crashed",
        libvirt.VIR_DOMAIN_PMSUSPENDED: "suspended",
    }
    return names.get(code, "unknown")


_EVENT_STATES = {
    libvirt.VIR_DOMAIN_EVENT_STARTED: "running",
    libvirt.VIR_DOMAIN_EVENT_RESUMED: "running",
    libvirt.VIR_DOMAIN_EVENT_SUSPENDED: "paused",
    libvirt.VIR_DOMAIN_EVENT_STOPPED: "shut off",
    libvirt.VIR_DOMAIN_EVENT_SHUTDOWN: "shutting down",
    libvirt.VIR_DOMAIN_EVENT_CRASHED: "crashed",
    libvirt.VIR_DOMAIN_EVENT_UNDEFINED: "undefined",
}


class DomainWatch:
    """The state of one domain as libvirt's lifecycle events report it.

    Events arrive on libvirt's event thread and are handed to `loop` (the asyncio
    loop of whoever drives the desktop; set it before waiting). `on_change` hears
    every new state there.
    """

    def __init__(self, what: str, on_change: Callable[[str], None]) -> None:
        self.what = what
        """The desktop, as error messages name it."""
        self.state = "undefined"
        self.loop: asyncio.AbstractEventLoop | None = None
        self._on_change = on_change
        self._changed = asyncio.Event()
        self._callback_id: int | None = None

    @property
    def watching(self) -> bool:
        return self._callback_id is not None

    def start(self, conn: libvirt.virConnect, dom: libvirt.virDomain) -> None:
        """Take the domain's state now and follow its events (blocking)."""
        self._on_state(state_name(dom.state()[0]))
        self._callback_id = conn.domainEventRegisterAny(
            dom, libvirt.VIR_DOMAIN_EVENT_ID_LIFECYCLE, self._lifecycle, None
        )

    def stop(self, conn: libvirt.virConnect | None) -> None:
        """Stop following events (blocking; harmless when not following)."""
        if conn is not None and self._callback_id is not None:
            with contextlib.suppress(libvirt.libvirtError):
                conn.domainEventDeregisterAny(self._callback_id)
        self._callback_id = None

    async def wait(self, states: tuple[str, ...], timeout: float, doing: str) -> None:
        """Until the domain is in one of `states`.

        Raises:
            DesktopError: it was not within `timeout` seconds.
        """
        deadline = time.monotonic() + timeout
        while self.state not in states:
            self._changed.clear()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DesktopError(
                    f"{self.what}: {doing}: domain is {self.state}, "
                    f"not {' or '.join(states)} after {timeout:g} s"
                )
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining):
                    await self._changed.wait()

    def _lifecycle(
        self, _conn: libvirt.virConnect, _dom: libvirt.virDomain, event: int, _detail: int, _o: Any
    ) -> None:
        # Runs on the libvirt event thread: hand the news to the asyncio loop.
        state = _EVENT_STATES.get(event)
        if state is not None and self.loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed
                self.loop.call_soon_threadsafe(self._on_state, state)

    def _on_state(self, state: str) -> None:
        self.state = state
        self._on_change(state)
        self._changed.set()
