"""Every libvirt desktop DeskLoop made, and operations on them, for the TUI's Desktops.

`list_libvirt` adds to `libvirt.list_vms` what a person needs to use a desktop from
the TUI: its screen size, its VNC address and password while it runs, its saved
start states with their times, and which process (if any) holds its lock. It never
raises because libvirtd is away: the listing then carries the reason, so a screen can
say so instead of failing.

`vm_command` runs one `deskloop vm` action (`app.desktops.libvirt.actions`) in a
child process, which reports progress and its end as JSON lines on its stdout. The
TUI drives desktops it did not make that way, not in-process:

- a `LibvirtDesktop` holds its desktop's folder lock for as long as it lives; the
  child's lives only as long as the action, so other DeskLoop processes can use the
  VM as soon as it is done, and the domain is left running, as `deskloop vm` leaves it;
- an action blocks in libvirt, SFTP and SSH calls in worker threads for up to
  minutes (a cold boot, an image upload), which a cancelled coroutine cannot
  interrupt; a child is stopped by a signal, and its lock goes with it;
- a crash in libvirt's own code (its libssh transport has segfaulted in its event
  thread here) takes the child down, not the TUI.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from app.core.errors import DesktopError

if TYPE_CHECKING:
    # The TUI imports this module for its listing types at start; the libvirt backend
    # (libvirt's bindings, SSH, the VM recipes) is imported by the functions that use
    # it, when a listing or an action runs: it was 0.16 s of the TUI's first screen.
    from app.desktops.libvirt import LibvirtConfig, VmRecord
    from app.rfb.client import VncEndpoint


@dataclass(frozen=True)
class SavedState:
    """A saved start state of a libvirt desktop (`states/KEY/`)."""

    key: str
    saved: float | None
    """Wall time it was saved (meta.json), None when unreadable."""


@dataclass(frozen=True)
class VmListing:
    """One libvirt desktop as the TUI shows it."""

    name: str
    domain: str
    state: str
    """libvirt's word for it ('running', 'shut off', ...), 'undefined' when only the
    folder is left."""
    image: str
    width: int | None
    height: int | None
    vnc: VncEndpoint | None
    """Set while it runs and its record (the password) is readable."""
    states: tuple[SavedState, ...]
    """Saved start states, newest first."""
    locked_by: int | None
    """The pid of the DeskLoop process driving it, if any (it refuses others)."""
    dir: Path

    @property
    def running(self) -> bool:
        return self.state == "running"


@dataclass(frozen=True)
class BackendListing:
    """The desktops of one backend, or why they could not be listed."""

    backend: str
    where: str
    desktops: tuple[VmListing, ...] = ()
    error: str | None = None


def list_libvirt(config: LibvirtConfig | None = None) -> BackendListing:
    """Every DeskLoop libvirt desktop (domains `deskloop-*` and cache folders), blocking.

    libvirtd being unreachable is an answer, not an error: `error` says why and names
    the URI.
    """
    import libvirt

    from app.desktops.libvirt import LibvirtConfig, VmRecord, list_vms
    from app.desktops.libvirt.record import LOCK_FILE
    from app.rfb.client import VncEndpoint

    config = config or LibvirtConfig()
    try:
        summaries = list_vms(config)
        ports = _vnc_ports(config.uri, [s.domain for s in summaries if s.state == "running"])
    except DesktopError as exc:
        return BackendListing("libvirt", config.uri, error=str(exc))
    except libvirt.libvirtError as exc:
        return BackendListing(
            "libvirt", config.uri, error=f"listing domains at {config.uri} failed: {exc}"
        )
    desktops = []
    for summary in summaries:
        record: VmRecord | None = None
        with contextlib.suppress(DesktopError):
            record = VmRecord.load(summary.dir / "vm.json")
        # A remote host's VNC port is on its loopback: reachable only through the SSH
        # forward of the process that drives the desktop (or `deskloop vm view`).
        port = ports.get(summary.domain) if config.local else None
        vnc = VncEndpoint("127.0.0.1", port, record.vnc_password) if port and record else None
        desktops.append(
            VmListing(
                name=summary.name,
                domain=summary.domain,
                state=summary.state,
                image=summary.image,
                width=record.width if record else None,
                height=record.height if record else None,
                vnc=vnc,
                states=_saved_states(summary.dir, summary.states),
                locked_by=lock_holder(summary.dir / LOCK_FILE),
                dir=summary.dir,
            )
        )
    return BackendListing("libvirt", config.uri, tuple(desktops))


def _vnc_ports(uri: str, domains: list[str]) -> dict[str, int]:
    """Domain → VNC port from the live XML (QEMU picks the port at each start)."""
    if not domains:
        return {}
    import libvirt

    from app.desktops.libvirt import open_connection
    from app.desktops.libvirt.domain import vnc_port

    conn = open_connection(uri)
    ports: dict[str, int] = {}
    try:
        for name in domains:
            try:
                port = vnc_port(conn.lookupByName(name))
            except libvirt.libvirtError:
                continue  # gone since it was listed
            if port:
                ports[name] = port
    finally:
        conn.close()
    return ports


def _saved_states(folder: Path, keys: tuple[str, ...]) -> tuple[SavedState, ...]:
    states = []
    for key in keys:
        meta = folder / "states" / key / "meta.json"
        saved: float | None = None
        with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
            saved = float(json.loads(meta.read_text())["saved"])
        if meta.is_file():  # a state without meta.json is half-written: not restorable
            states.append(SavedState(key, saved))
    return tuple(sorted(states, key=lambda s: s.saved or 0.0, reverse=True))


def lock_holder(path: Path) -> int | None:
    """The pid holding an flock on `path` (from /proc/locks), or None.

    Read-only: taking the lock to test it could make its owner's own attempt fail.
    """
    try:
        st = path.stat()
        table = Path("/proc/locks").read_text()
    except OSError:
        return None
    wanted = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in table.splitlines():
        fields = line.split()
        # "1: FLOCK  ADVISORY  WRITE 6531 fe:00:1517799 0 EOF" ("->" marks waiters)
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == wanted:
            with contextlib.suppress(ValueError):
                return int(fields[4])
    return None


async def vm_command(
    action: str,
    name: str,
    *args: str,
    progress: Callable[[str], None] = lambda _line: None,
) -> None:
    """Run `deskloop vm ACTION NAME ARGS...` (ARGS: the state's key for snapshot and
    revert) in a child process, passing each progress report to `progress`.
    Cancelling interrupts it as Ctrl-C would the command.

    Raises:
        DesktopError: the action failed; the message is its error's.
    """
    from app.desktops.libvirt.actions import VM_ACTIONS, Done, Failed, Progress, child_argv, decode

    if action not in VM_ACTIONS:
        raise DesktopError(f"vm action {action!r}: expected one of {', '.join(VM_ACTIONS)}")
    proc = await asyncio.create_subprocess_exec(
        *child_argv(action, name, *args),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # Not in the TUI's process group: the terminal's Ctrl-C is the TUI's, not its.
        start_new_session=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    errors = asyncio.ensure_future(proc.stderr.read())
    failed: Failed | None = None
    done = False
    try:
        async for line in proc.stdout:
            report = decode(line)
            if isinstance(report, Progress) and report.text.strip():
                progress(report.text.strip())
            elif isinstance(report, Failed):
                failed = report
            elif isinstance(report, Done):
                done = True
        code = await proc.wait()
        err = (await errors).decode(errors="replace").strip()
    except asyncio.CancelledError:
        await _interrupt(proc)
        raise
    finally:
        errors.cancel()
    if code == 0 and done:
        return
    if failed is not None:
        why = failed.message
    else:
        # It ended without saying why (killed, or a crash in libvirt's C code): what it
        # wrote to stderr is all there is to show.
        why = "\n".join(err.splitlines()[-15:]) or f"exit status {code}"
    # Named as the command that does the same, so a person can run it to see more.
    command = " ".join(["deskloop", "vm", action, name, *args])
    raise DesktopError(f"`{command}` failed: {why}")


async def _interrupt(proc: asyncio.subprocess.Process) -> None:
    """SIGTERM (the CLI then stops cleanly and releases the lock), SIGKILL after 20 s."""
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        async with asyncio.timeout(20.0):
            await proc.wait()
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()


@dataclass(frozen=True)
class VmStats:
    """What libvirt reports of one running domain at one moment."""

    cpu_seconds: float
    """CPU time its vCPUs and QEMU have used so far (libvirt's `cpu.time`)."""
    rss_bytes: int | None
    """QEMU's resident memory on the host (`balloon.rss`), None when not reported."""
    guest_bytes: int | None
    """The memory the guest has now (`balloon.current`), None when not reported."""
    vcpus: int | None


def vm_stats(config: LibvirtConfig | None = None) -> dict[str, VmStats]:
    """Running DeskLoop domains' CPU time and memory, by desktop name (blocking: one
    `virConnectGetAllDomainStats` call, which takes no desktop's lock).

    Raises:
        DesktopError: libvirtd cannot be reached.
    """
    import libvirt

    from app.desktops.libvirt import DOMAIN_PREFIX, LibvirtConfig, open_connection

    config = config or LibvirtConfig()
    conn = open_connection(config.uri)
    try:
        wanted = (
            libvirt.VIR_DOMAIN_STATS_CPU_TOTAL
            | libvirt.VIR_DOMAIN_STATS_BALLOON
            | libvirt.VIR_DOMAIN_STATS_VCPU
        )
        records = conn.getAllDomainStats(wanted, libvirt.VIR_CONNECT_GET_ALL_DOMAINS_STATS_ACTIVE)
        result = {}
        for dom, stats in records:
            if not dom.name().startswith(DOMAIN_PREFIX) or "cpu.time" not in stats:
                continue
            result[dom.name()[len(DOMAIN_PREFIX) :]] = VmStats(
                cpu_seconds=stats["cpu.time"] / 1e9,  # nanoseconds
                rss_bytes=_kib(stats.get("balloon.rss")),
                guest_bytes=_kib(stats.get("balloon.current")),
                vcpus=stats.get("vcpu.current"),
            )
        return result
    except libvirt.libvirtError as exc:
        raise DesktopError(f"reading domain stats at {config.uri} failed: {exc}") from exc
    finally:
        conn.close()


def _kib(value: object) -> int | None:
    return int(value) * 1024 if isinstance(value, int) else None
