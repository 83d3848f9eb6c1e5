"""The client's framebuffer: the screen as the server's updates left it, and the two
waits on it, `frame()` (a fresh full screen) and `settle()` (a change, then quiet).

- Each FramebufferUpdate is applied *atomically*: its rects are read first (see
  `wire.read_rects`) and applied together, so a frame is never torn between two
  updates.
- Each applied update is remembered (`UpdateRecord`): how many pixels really changed
  (the bounding box of the differing pixels in each rect, so a rect that repaints
  what is already there counts for nothing) and whether it covered the whole screen.
- `frame()` sends a non-incremental request and returns only after an update whose
  header arrived after that request and which covered the whole screen.
- `settle()` keeps incremental requests outstanding (`wants_updates`, which the
  connection's reader honours after each update) and watches the changed areas, so
  tiny changes such as blinking text cursors do not count.

The framebuffer does no I/O of its own: the two waits send requests and wait for
updates through an `UpdateLink`, the connection that feeds it.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from itertools import pairwise
from typing import Protocol

import numpy as np
import numpy.typing as npt

from app.core.errors import VNCError
from app.core.frames import Frame, SettleResult
from app.rfb import wire
from app.rfb.pace import Pace

# Updates kept in the history `frame` and `settle` read; more than any settle needs.
_HISTORY = 512


class UpdateLink(Protocol):
    """What the waits need from the connection."""

    async def send(self, data: bytes, timeout: float) -> None: ...

    async def wait_update(self, deadline: float) -> bool:
        """Wait for the next applied update; False when `deadline` passes first."""
        ...


@dataclass(frozen=True)
class UpdateRecord:
    """One applied FramebufferUpdate, as `frame` and `settle` need to know it."""

    seq: int
    monotonic: float
    changed_area: int  # pixels in the boxes that really changed, summed over rects
    full: bool  # the update's rects covered the whole framebuffer


class Framebuffer:
    """The pixels of one connection's screen and the updates applied to them."""

    def __init__(self, width: int, height: int, where: str) -> None:
        self.where = where
        # BGRX little-endian pixels as uint32 (X masked off): compares and CopyRects are
        # one machine word per pixel; RGB is produced only when a frame is read.
        self._fb: npt.NDArray[np.uint32] = np.zeros((height, width), dtype=np.uint32)
        self._updates_started = 0  # FramebufferUpdate headers received
        self._updates_done = 0  # FramebufferUpdates fully applied
        self._history: deque[UpdateRecord] = deque(maxlen=_HISTORY)
        self._continuous = 0  # settle() calls that want incremental requests kept outstanding
        self._last_settle_end = 0.0
        self.pace = Pace()
        """The pauses this screen makes inside its bursts, per kind of action."""
        self._open_burst: _Burst | None = None
        # The first full picture after connecting is not a screen change for settle().
        self._filled = False

    @property
    def width(self) -> int:
        return int(self._fb.shape[1])

    @property
    def height(self) -> int:
        return int(self._fb.shape[0])

    @property
    def wants_updates(self) -> bool:
        """A settle is waiting: answer each update with a new incremental request."""
        return self._continuous > 0

    def update_request(self, *, incremental: bool) -> bytes:
        return wire.framebuffer_update_request(incremental, self.width, self.height)

    # ---------------------------------------------------------------- updates

    def begin_update(self) -> int:
        """Count an update whose header has arrived; its sequence number.

        Counted before its rects are read: `frame()` must skip an update that had
        begun before its request was sent.
        """
        self._updates_started += 1
        return self._updates_started

    def apply(self, seq: int, rects: list[wire.Rect]) -> None:
        """Apply update `seq`'s rects together and record what changed.

        Raises:
            VNCError: a CopyRect whose source lies outside the screen.
        """
        changed = 0
        # A coverage mask only when the rects could cover the screen: small updates
        # (the common case while settling) skip the allocation.
        pixel_area = sum(r.w * r.h for r in rects if r.carries_pixels)
        covered: npt.NDArray[np.bool_] | None = None
        if pixel_area >= self._fb.size:
            covered = np.zeros(self._fb.shape, dtype=np.bool_)
        for rect in rects:
            x, y, w, h = rect.x, rect.y, rect.w, rect.h
            if not rect.carries_pixels:  # DesktopSize: a new, black screen
                if (h, w) != self._fb.shape:
                    self._fb = np.zeros((h, w), dtype=np.uint32)
                    if covered is not None:
                        covered = np.zeros((h, w), dtype=np.bool_)
                    changed += w * h
                continue
            if w == 0 or h == 0:
                continue
            if rect.encoding == wire.ENCODING_RAW:
                new = np.frombuffer(rect.data, dtype="<u4").reshape(h, w) & np.uint32(0xFFFFFF)
            else:
                sx, sy = rect.src_x, rect.src_y
                if sx + w > self.width or sy + h > self.height:
                    raise VNCError(
                        f"VNC protocol error from {self.where}: CopyRect source "
                        f"{w}x{h}+{sx}+{sy} outside the {self.width}x{self.height} screen"
                    )
                new = self._fb[sy : sy + h, sx : sx + w].copy()
            target = self._fb[y : y + h, x : x + w]
            changed += _changed_box_area(target, new)
            target[...] = new
            if covered is not None:
                covered[y : y + h, x : x + w] = True
        self._updates_done = seq
        full = covered is not None and bool(covered.all())
        if not self._filled:
            changed = 0
            self._filled = full
        self._history.append(UpdateRecord(seq, time.monotonic(), changed, full))

    def snapshot(self) -> Frame:
        """The screen as RGB, as the last applied update left it."""
        bgrx = self._fb.view(np.uint8).reshape(self.height, self.width, 4)
        # One channel at a time: 3x faster than copying a reversed-channel view.
        rgb = np.empty((self.height, self.width, 3), dtype=np.uint8)
        rgb[:, :, 0] = bgrx[:, :, 2]
        rgb[:, :, 1] = bgrx[:, :, 1]
        rgb[:, :, 2] = bgrx[:, :, 0]
        return Frame(pixels=rgb, monotonic=time.monotonic(), wall=time.time())

    # ---------------------------------------------------------------- waits

    async def frame(self, link: UpdateLink, timeout: float) -> Frame:
        """The whole screen as RGB, from an update the server sent after this call.

        Raises:
            VNCError: no complete update within `timeout`, or the connection dropped.
        """
        deadline = time.monotonic() + timeout
        while True:
            # Updates whose header already arrived may predate the request: skip them.
            after = self._updates_started
            await link.send(self.update_request(incremental=False), timeout)
            while self._updates_done <= after:
                if not await link.wait_update(deadline):
                    raise VNCError(
                        f"VNC server {self.where} sent no full frame within {timeout:g} s"
                    )
            if any(r.full for r in self._history if r.seq > after):
                return self.snapshot()
            # Only a partial update arrived (an answer to an older incremental request,
            # or a resize): ask again rather than guess whether ours is still pending.

    async def settle(
        self,
        link: UpdateLink,
        *,
        last_input: float,
        timeout: float,
        quiet: float,
        change_wait: float,
        min_area: int,
        kind: str | None = None,
    ) -> SettleResult:
        """Wait for a visible change, then for `quiet` seconds without one.

        A change is an update whose really-changed boxes total more than `min_area`
        pixels; changes since `last_input` (when input was last sent) count, so an
        update that arrived between sending input and this call is not missed.
        Without a change within `change_wait` the screen is reported as unchanged
        and settled.

        `kind`, the kind of the action just sent, makes the quiet this screen's own
        (`app.rfb.pace`): `quiet` becomes the most it may be, and what this settle
        sees teaches the kind's pace.
        """
        start = time.monotonic()
        deadline = start + timeout
        self._learn_late(last_input)
        window = quiet
        if kind is not None:
            quiet = self.pace.quiet(kind, quiet)
        # Changes an earlier settle already reported do not count again.
        since = max(min(start, last_input), self._last_settle_end)
        self._continuous += 1
        settled = False
        try:
            await link.send(self.update_request(incremental=True), timeout)
            last_change = self._last_change(since, min_area)
            while last_change is None:
                first_deadline = min(start + change_wait, deadline)
                if not await link.wait_update(first_deadline):
                    settled = True
                    return SettleResult(False, True, time.monotonic() - start)
                last_change = self._last_change(since, min_area)
            while True:
                # Measure quiet from the start at least: the server may still hold
                # changes it could not send before our request was outstanding.
                quiet_until = max(last_change, start) + quiet
                if time.monotonic() >= deadline:
                    return SettleResult(True, False, time.monotonic() - start)
                if not await link.wait_update(min(quiet_until, deadline)):
                    settled = time.monotonic() >= quiet_until
                    return SettleResult(True, settled, time.monotonic() - start)
                last_change = self._last_change(since, min_area) or last_change

        finally:
            self._continuous -= 1
            self._last_settle_end = time.monotonic()
            self._open_burst = None
            if kind is not None and settled:
                self._learn_burst(kind, since, min_area, window)

    def _changes(self, since: float, min_area: int) -> list[float]:
        """When the changes since `since` came, oldest first."""
        return [
            r.monotonic for r in self._history if r.monotonic >= since and r.changed_area > min_area
        ]

    def _learn_burst(self, kind: str, since: float, min_area: int, window: float) -> None:
        """Teach the pace what a settled burst did, and remember a burst that changed
        the screen: a change after it and before the next input is a pause its kind
        makes (`_learn_late`)."""
        times = self._changes(since, min_area)
        self.pace.burst(kind, [later - earlier for earlier, later in pairwise(times)])
        if times:
            self._open_burst = _Burst(kind, times[-1], window, min_area)

    def _learn_late(self, next_input: float) -> None:
        """A change that came after the last settle ended and before this input: the
        burst was taken for over too early, and its kind's pace learns the pause."""
        burst, self._open_burst = self._open_burst, None
        if burst is None:
            return
        late = [t for t in self._changes(self._last_settle_end, burst.min_area) if t < next_input]
        if late and late[0] - burst.last <= burst.window:
            self.pace.late(burst.kind, late[0] - burst.last)

    def _last_change(self, since: float, min_area: int) -> float | None:
        for record in reversed(self._history):
            if record.monotonic < since:
                return None
            if record.changed_area > min_area:
                return record.monotonic
        return None


@dataclass(frozen=True)
class _Burst:
    """A settled burst whose tail may still come: what `_learn_late` needs of it."""

    kind: str
    last: float  # its last change
    window: float  # the caller's quiet window: longer pauses are not learned
    min_area: int


def _changed_box_area(old: npt.NDArray[np.uint32], new: npt.NDArray[np.uint32]) -> int:
    """Area of the bounding box of the pixels that differ (0 when none do)."""
    diff = old != new
    rows = np.flatnonzero(diff.any(axis=1))
    if rows.size == 0:
        return 0
    cols = np.flatnonzero(diff.any(axis=0))
    return int((rows[-1] - rows[0] + 1) * (cols[-1] - cols[0] + 1))
