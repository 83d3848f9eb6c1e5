"""The table of probers by kind, and running one safely."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from app.checks.base import Probe, ProbeResult
from app.core.errors import DeskLoopError
from app.desktops.base import Guest

Prober = Callable[[Guest, str], Awaitable[ProbeResult]]

AnswerProber = Callable[[Guest, str, Any], Awaitable[ProbeResult]]

PROBERS: dict[str, Prober] = {}
ANSWER_PROBERS: dict[str, AnswerProber] = {}
"""Probers that also take the answer the agent returned with DONE (a web page's
`evaluateTask(id, returned)`)."""


def prober(kind: str) -> Callable[[Prober], Prober]:
    """Register the decorated coroutine function as the prober for `kind`."""

    def decorate(fn: Prober) -> Prober:
        if kind in PROBERS or kind in ANSWER_PROBERS:
            raise ValueError(f"prober {kind!r} registered twice")
        PROBERS[kind] = fn
        return fn

    return decorate


def answer_prober(kind: str) -> Callable[[AnswerProber], AnswerProber]:
    """Register the decorated coroutine function, which also takes the returned
    answer, as the prober for `kind`."""

    def decorate(fn: AnswerProber) -> AnswerProber:
        if kind in PROBERS or kind in ANSWER_PROBERS:
            raise ValueError(f"prober {kind!r} registered twice")
        ANSWER_PROBERS[kind] = fn
        return fn

    return decorate


async def gather_probe(guest: Guest, probe: Probe, returned: Any = None) -> ProbeResult:
    """Run one probe (`returned`: the agent's DONE answer, for probers that take it);
    problems become a failed result naming the probe."""
    try:
        if probe.kind in ANSWER_PROBERS:
            return await ANSWER_PROBERS[probe.kind](guest, probe.path, returned)
        fn = PROBERS.get(probe.kind)
        if fn is None:
            known = sorted([*PROBERS, *ANSWER_PROBERS])
            return ProbeResult.failure(f"no prober for {probe.kind!r} (known: {known})")
        return await fn(guest, probe.path)
    except DeskLoopError as exc:
        return ProbeResult.failure(f"{probe.kind} of {probe.path} failed: {exc}")
