"""The table of probers by kind, and running one safely."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from app.checks.base import Probe, ProbeResult
from app.core.errors import DeskLoopError
from app.desktops.base import Guest

Prober = Callable[[Guest, str], Awaitable[ProbeResult]]

PROBERS: dict[str, Prober] = {}


def prober(kind: str) -> Callable[[Prober], Prober]:
    """Register the decorated coroutine function as the prober for `kind`."""

    def decorate(fn: Prober) -> Prober:
        if kind in PROBERS:
            raise ValueError(f"prober {kind!r} registered twice")
        PROBERS[kind] = fn
        return fn

    return decorate


async def gather_probe(guest: Guest, probe: Probe) -> ProbeResult:
    """Run one probe; problems become a failed result naming the probe."""
    fn = PROBERS.get(probe.kind)
    if fn is None:
        return ProbeResult.failure(f"no prober for {probe.kind!r} (known: {sorted(PROBERS)})")
    try:
        return await fn(guest, probe.path)
    except DeskLoopError as exc:
        return ProbeResult.failure(f"{probe.kind} of {probe.path} failed: {exc}")
