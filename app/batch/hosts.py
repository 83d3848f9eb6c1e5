"""The libvirt hosts of a batch's pool: `URI[*N]` entries, from the command line
(`--libvirt-uri`) or $DESKLOOP_LIBVIRT_URIS, each a libvirt URI and its capacity.

Every malformed entry, capacity below 1 or repeated URI is refused here, naming the
entry, before the batch records anything.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from app.core.errors import DeskLoopError
from app.core.settings import read_settings

URIS_ENV = "DESKLOOP_LIBVIRT_URIS"
# driver[+transport]://[user@][host][:port]/[path][?params], as libvirt writes them.
# No commas (they separate the entries of $DESKLOOP_LIBVIRT_URIS) and no '*' (it
# starts the capacity).
_URI = re.compile(r"[A-Za-z][A-Za-z0-9]*(\+[A-Za-z0-9]+)?://[^/\s,*]*/[^\s,*]*")


@dataclass(frozen=True)
class Host:
    """A libvirt URI of a batch's pool and how many desktops it runs at once."""

    uri: str
    capacity: int = 1

    def __str__(self) -> str:
        return f"{self.uri}*{self.capacity}"


def parse_host(text: str, where: str = "--libvirt-uri") -> Host:
    """`URI` (capacity 1) or `URI*N`, e.g. `qemu+ssh://user@lab2/system*4`.

    Raises:
        DeskLoopError: not a libvirt URI, or a capacity that is not a whole number >= 1.
    """
    raw = text.strip()
    uri, star, count = raw.rpartition("*")
    if not star:
        uri, count = raw, "1"
    example = "e.g. qemu:///system*2 or qemu+ssh://user@host/system*4"
    if not _URI.fullmatch(uri):
        raise DeskLoopError(
            f"{where} {text!r}: {uri!r} is not a libvirt URI "
            f"(driver[+transport]://[host]/path, {example})"
        )
    if not count.isdigit():
        raise DeskLoopError(
            f"{where} {text!r}: the capacity after '*' must be a whole number ({example})"
        )
    capacity = int(count)
    if capacity < 1:
        raise DeskLoopError(
            f"{where} {text!r}: capacity {capacity}: a host runs at least 1 desktop; "
            "leave a host out of the pool instead"
        )
    return Host(uri, capacity)


def parse_hosts(items: Sequence[str], where: str = "--libvirt-uri") -> tuple[Host, ...]:
    """A pool from `URI[*N]` items; a URI may appear only once."""
    hosts = tuple(parse_host(item, where) for item in items)
    seen: set[str] = set()
    for host in hosts:
        if host.uri in seen:
            raise DeskLoopError(
                f"{where}: {host.uri} is given twice; give it once with its whole "
                f"capacity ({host.uri}*N)"
            )
        seen.add(host.uri)
    return hosts


def hosts_from_env(environ: Mapping[str, str] | None = None) -> tuple[Host, ...]:
    """The pool in $DESKLOOP_LIBVIRT_URIS (comma separated `URI[*N]`), or ()."""
    value = read_settings(environ).libvirt_uris
    items = [item.strip() for item in value.split(",")]
    if not any(items):
        return ()
    if not all(items):
        raise DeskLoopError(f"{URIS_ENV}={value!r}: an empty entry between commas")
    return parse_hosts(items, URIS_ENV)


def describe_pool(hosts: Sequence[Host]) -> str:
    return " + ".join(str(host) for host in hosts)
