"""`web_evaluate` and `web_state`: a web desktop's page, asked over its DevTools pipe.

`web_evaluate` (path: the page's task id) calls `window.evaluateTask(id, returned)`;
`web_state` (path: a name, dots for nesting) reads one value of `window.getState()`.
Both go through the guest's open page (`HostsWebPages.web_page`), which only DeskLoop
can reach; a guest without a page, or a page that throws, is a failed probe.
"""

from __future__ import annotations

from typing import Any

from app.checks.base import ProbeResult
from app.core.errors import GuestError
from app.desktops.base import Guest, HostsWebPages, PageScript
from app.desktops.web.kiosk import call_evaluate, page_state
from app.probes.registry import answer_prober, prober

_MISSING = object()


def _page(guest: Guest) -> PageScript | str:
    if not isinstance(guest, HostsWebPages):
        return "this desktop shows no web pages (web tasks run on the local backend)"
    page = guest.web_page
    if page is None:
        return "no page is open (the task's setup has no open_page step?)"
    return page


@answer_prober("web_evaluate")
async def web_evaluate(guest: Guest, task_id: str, returned: Any) -> ProbeResult:
    page = _page(guest)
    if isinstance(page, str):
        return ProbeResult.failure(page)
    try:
        # `returned`: the answer of the DONE that ended the episode (None: null).
        return ProbeResult(await call_evaluate(page, task_id, returned))
    except GuestError as exc:  # the page's errors (CdpError) among them
        return ProbeResult.failure(str(exc))


def lookup(state: Any, name: str) -> Any:
    """`name`'s value in `state`; dots reach into nested objects, and a key that holds
    dots itself (a file name such as 'clip.mp4') is matched whole before it is split.
    `_MISSING` when there is no such value."""
    if not isinstance(state, dict):
        return _MISSING
    if name in state:
        return state[name]
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        head = ".".join(parts[:cut])
        if head in state:
            found = lookup(state[head], ".".join(parts[cut:]))
            if found is not _MISSING:
                return found
    return _MISSING


@prober("web_state")
async def web_state(guest: Guest, name: str) -> ProbeResult:
    page = _page(guest)
    if isinstance(page, str):
        return ProbeResult.failure(page)
    try:
        state = await page_state(page)
    except GuestError as exc:  # the page's errors (CdpError) among them
        return ProbeResult.failure(str(exc))
    if state is None:
        return ProbeResult.failure("the page defines no window.getState()")
    value = lookup(state, name)
    if value is _MISSING:
        return ProbeResult.not_found()
    return ProbeResult(value)
