"""The connections to a running libvirt desktop: VNC to QEMU's server (forwarded over
SSH from a remote host) and the guest channel (`SSHGuest`), and the wait for a
usable X session through them after a cold boot."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from pathlib import Path

import paramiko

from app.core.errors import DesktopError, GuestError, VNCError
from app.desktops.libvirt.host import VmHost
from app.desktops.remote.ssh_guest import SSHGuest
from app.rfb.client import VNCSession

# Seconds between typed characters on QEMU's VNC server: it passes key events to the
# guest 10 ms apart (a press, a release, and Shift around some characters).
QEMU_TYPE_DELAY = 0.05


class GuestLink:
    """VNC and SSH to one desktop's domain, made anew by each `attach`: a restore
    kills the guest's old TCP state. `where` names the desktop in errors."""

    def __init__(
        self,
        where: str,
        known_hosts: Path,
        screen: Callable[[], tuple[int, int]] = lambda: (1280, 800),
    ) -> None:
        """`screen`: the desktop's size now (its record, once read, decides it)."""
        self.where = where
        self.known_hosts = known_hosts
        self.screen = screen
        self.guest: SSHGuest | None = None
        self.vnc: VNCSession | None = None
        self.vnc_port = 0
        """Where VNC is reached here (QEMU's own port for a local host)."""
        self._host: VmHost | None = None
        self._host_port = 0  # QEMU's VNC port on the libvirt host

    async def attach(
        self,
        host: VmHost,
        ip: str,
        key: paramiko.PKey,
        host_port: int,
        vnc_password: str,
        timeout: float,
        wait_ssh: bool = True,
    ) -> float:
        """Connect VNC (QEMU's `host_port` on `host`) and SSH to the guest at `ip`;
        the seconds connecting took. With `wait_ssh=False` SSH comes up in the
        background (guest calls wait)."""
        if self.guest is not None:
            self.guest.close()
        guest = SSHGuest(
            ip,
            key,
            self.known_hosts,
            where=self.where,
            # On a remote host the guest's network is only reachable from there.
            sock_factory=None if host.local else lambda: host.guest_socket(ip, 22),
            screen=self.screen(),
        )
        self.guest = guest
        await self._close_vnc()
        if self._host_port and self._host_port != host_port and self._host is not None:
            await asyncio.to_thread(self._host.drop_forward, self._host_port)
        port = await asyncio.to_thread(host.forward, host_port)
        self._host, self._host_port, self.vnc_port = host, host_port, port
        # QEMU maps keysyms to scancodes without adding Shift, and drops key events
        # that overflow its queue (VNCClient.explicit_shift and .type_delay).
        vnc = VNCSession(
            "127.0.0.1",
            port,
            vnc_password,
            timeout=10.0,
            explicit_shift=True,
            type_delay=QEMU_TYPE_DELAY,
        )
        self.vnc = vnc
        t0 = time.monotonic()
        if wait_ssh:
            await asyncio.gather(guest.connect(max(timeout, 5.0)), vnc.connected())
        else:
            guest.connect_soon(max(timeout, 5.0))
            await vnc.connected()
        return time.monotonic() - t0

    async def detach(self) -> None:
        """Drop both connections (the guest's SSH can be made again by `attach`)."""
        if self.guest is not None:
            # A web page's relay ends first, and its guest side with it: a VM saved
            # now must not keep a reader of the browser's answers (app/desktops/remote/ssh_web.py).
            with contextlib.suppress(GuestError):
                await self.guest.close_web()
            self.guest.drop()
        await self._close_vnc()
        self.vnc = None
        if self._host is not None and self._host_port:
            await asyncio.to_thread(self._host.drop_forward, self._host_port)
        self.vnc_port = self._host_port = 0

    def close_guest(self) -> None:
        if self.guest is not None:
            self.guest.close()
            self.guest = None

    async def wait_x_session(
        self, width: int, height: int, deadline: float, timeout: float, console: str
    ) -> None:
        """Until X runs at `width`x`height` with openbox managing it.

        Raises:
            DesktopError: not by `deadline` (`timeout` and `console` are for the message).
        """
        assert self.guest is not None
        want = f"{width} {height}"
        last = ""
        while True:
            try:
                geometry = await self.guest.run(["xdotool", "getdisplaygeometry"], 10.0)
                wm = await self.guest.run(["xprop", "-root", "_NET_SUPPORTING_WM_CHECK"], 10.0)
                if geometry.stdout_text().strip() == want and b"window id" in wm.stdout:
                    return
                last = " / ".join(
                    (r.stdout_text() + r.stderr.decode(errors="replace")).strip()
                    for r in (geometry, wm)
                )
            except GuestError as exc:
                last = str(exc)
            if time.monotonic() > deadline:
                with contextlib.suppress(GuestError):
                    status = await self.guest.run(
                        ["systemctl", "status", "--no-pager", "-n", "15",
                         "deskloop-session", "deskloop-xserver"], 15.0
                    )  # fmt: skip
                    last += "\n" + status.stdout_text()[-2500:]
                raise DesktopError(
                    f"{self.where}: the X session was not ready within "
                    f"{timeout:.0f} s (last: {last!r}; console: {console})"
                )
            await asyncio.sleep(0.5)

    async def wait_screen(self, width: int, height: int, deadline: float) -> None:
        """Until VNC shows a `width`x`height` screen, then until it has gone quiet.

        Raises:
            DesktopError: no such screen by `deadline`.
        """
        assert self.vnc is not None
        last = ""
        while True:
            try:
                size = await self.vnc.size()
                frame = await self.vnc.frame(10.0)
                if size == (width, height) and frame.width == width:
                    break
                await self.vnc.reconnect()
            except VNCError as exc:
                last = str(exc)
            if time.monotonic() > deadline:
                raise DesktopError(
                    f"{self.where}: VNC never showed a {width}x{height} screen (last: {last})"
                )
            await asyncio.sleep(0.5)
        await self.settle_screen()

    async def settle_screen(self) -> None:
        with contextlib.suppress(VNCError, DesktopError):
            assert self.vnc is not None
            await self.vnc.settle(timeout=20.0, quiet=1.0, change_wait=0.5)

    async def _close_vnc(self) -> None:
        if self.vnc is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(2.0):
                    await self.vnc.close()
