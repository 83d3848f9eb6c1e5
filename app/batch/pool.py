"""The desktops of one batch run: made on hosts with free capacity, lent to one try of
a slot at a time (a `Lease`), reused by the next try of the same image, and a host
whose desktop failed at start-up kept out while another host is up (`DesktopPool`).

Desktops come from a `DesktopFactory` (default: `app.episode.launch.make_spec_desktop`),
so any backend plugs in and tests pass fakes to check the placement alone. Which image
a task's desktop has is the composition root's answer (`app.episode.launch.task_image`),
the same as for every other way of starting an episode.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from app.batch.options import BatchOptions
from app.core.errors import DeskLoopError
from app.desktops.base import Desktop
from app.episode.launch import DesktopSpec

DesktopFactory = Callable[[DesktopSpec], Desktop]


@dataclass
class Lease:
    """A desktop of the pool, lent to one try of a slot."""

    host: int
    """The host's position in the pool."""
    index: int
    image: str | None
    desktop: Desktop
    uri: str | None

    def where(self, backend: str) -> str:
        """The host for people and records: its URI (the desktop's own when the pool
        names none), else the backend."""
        if self.uri is not None:
            return self.uri
        return self.desktop.info().details.get("uri") or backend


@dataclass
class _Host:
    uri: str | None
    capacity: int
    idle: list[Lease] = field(default_factory=list)
    busy: set[int] = field(default_factory=set)
    down: str | None = None
    """Why the host is out of the pool (a desktop failed at start-up), or None."""

    def used(self) -> set[int]:
        return self.busy | {lease.index for lease in self.idle}

    def load(self) -> float:
        return len(self.used()) / self.capacity


class DesktopPool:
    """The desktops of one batch run, placed on hosts with free capacity.

    A desktop is lent for one try and given back after it; the next try that needs
    its image reuses it (the runner resets it first), so a VM's cold boot is paid
    once per place, not once per episode. A try asks for a desktop:

    1. an idle desktop of its image, else
    2. a new one on the host with the lowest share of its capacity in use, else
    3. a new one in place of an idle desktop of another image, which is closed;

    looking first at hosts that are up and not in `avoid` (the hosts on which this
    slot already failed), then at every host that is up. A host whose desktop failed
    at start-up is down: it gets nothing while another host is up, and comes back
    once a desktop on it works again. When every host is down, all of them count as
    up (the try fails fast and uses up the slot's retries rather than waiting
    forever). When nothing fits, the try waits for a desktop to be given back.
    """

    def __init__(
        self,
        backend: str,
        hosts: Sequence[tuple[str | None, int]],
        factory: DesktopFactory,
        log: Callable[[str], None] | None = None,
    ) -> None:
        if not hosts or any(capacity < 1 for _, capacity in hosts):
            raise DeskLoopError("a desktop pool needs hosts, each with capacity >= 1")
        self.backend = backend
        self._hosts = [_Host(uri, capacity) for uri, capacity in hosts]
        self._factory = factory
        self._log = log or (lambda text: None)
        self._changed = asyncio.Event()
        self.made: list[DesktopSpec] = []
        """Every desktop made, in order."""
        self.failures: dict[str, list[str]] = {}
        """Start-up failures by host (see `Lease.where`), in order."""

    def is_down(self, host: int) -> bool:
        return self._hosts[host].down is not None

    def in_use(self, host: int) -> int:
        """Places of `host` taken by desktops, lent or idle."""
        return len(self._hosts[host].used())

    async def acquire(self, image: str | None, avoid: Collection[int] = ()) -> Lease:
        while True:
            pick = self._pick(image, avoid)
            if pick is not None:
                break
            # No await between _pick and clear(): no give-back can slip in between.
            self._changed.clear()
            await self._changed.wait()
        number, reuse, evict = pick
        host = self._hosts[number]
        if reuse is not None:
            host.idle.remove(reuse)
            host.busy.add(reuse.index)
            return reuse
        if evict is not None:
            host.idle.remove(evict)
            index = evict.index
        else:
            index = min(set(range(host.capacity)) - host.used())
        # Hold the place before any await, so no other try counts it as free.
        host.busy.add(index)
        try:
            if evict is not None:
                await self._close(evict)
            spec = DesktopSpec(self.backend, host.uri, index, image)
            desktop = self._factory(spec)
        except BaseException:
            host.busy.discard(index)
            self._changed.set()
            raise
        self.made.append(spec)
        return Lease(number, index, image, desktop, host.uri)

    def _pick(
        self, image: str | None, avoid: Collection[int]
    ) -> tuple[int, Lease | None, Lease | None] | None:
        numbers = range(len(self._hosts))
        up = [n for n in numbers if self._hosts[n].down is None] or list(numbers)
        for tier in ([n for n in up if n not in avoid], up):
            for n in tier:
                for lease in self._hosts[n].idle:
                    if lease.image == image:
                        return n, lease, None
            free = [n for n in tier if len(self._hosts[n].used()) < self._hosts[n].capacity]
            if free:
                # Spread the load; ties go to the host given first.
                return min(free, key=lambda n: (self._hosts[n].load(), n)), None, None
            for n in tier:
                if self._hosts[n].idle:
                    return n, None, self._hosts[n].idle[0]
        return None

    def give_back(self, lease: Lease, *, host_ok: bool = True) -> None:
        """The desktop is fine for another episode. `host_ok`: it came up, so its
        host is up again if it was down."""
        host = self._hosts[lease.host]
        host.busy.discard(lease.index)
        host.idle.append(lease)
        if host_ok and host.down is not None:
            self._log(f"host {lease.where(self.backend)} works again")
            host.down = None
        self._changed.set()

    async def discard(self, lease: Lease, *, host_error: str | None = None) -> None:
        """Close a desktop that failed; `host_error`: it failed at start-up, so its
        host is down."""
        host = self._hosts[lease.host]
        if host_error is not None:
            where = lease.where(self.backend)
            self.failures.setdefault(where, []).append(host_error)
            # Down at once, before the close, so no try waiting now picks it.
            host.down = host_error
        try:
            await self._close(lease)
        finally:
            host.busy.discard(lease.index)
            self._changed.set()

    async def close(self) -> None:
        """Close every idle desktop (at the end of a run)."""
        for host in self._hosts:
            while host.idle:
                await self._close(host.idle.pop())

    async def _close(self, lease: Lease) -> None:
        try:
            await lease.desktop.close()
        except DeskLoopError as exc:
            # A desktop that failed may fail to close too; the next one must not wait.
            self._log(f"closing a desktop on {lease.where(self.backend)}: {exc}")


def pool_hosts(options: BatchOptions) -> list[tuple[str | None, int]]:
    """The pool's hosts: the libvirt URIs given, else the backend's default host, as
    large as the concurrency and the warm desktops together."""
    if options.hosts:
        return [(host.uri, host.capacity) for host in options.hosts]
    return [(None, options.concurrency + options.warm)]
