"""How long a screen pauses inside the burst of changes an action sets off, learned
from the screen itself, one kind of action at a time (`Pace`).

A step is settled when its burst of changes is over. A fixed quiet window must be
as long as the longest pause any app ever makes inside a burst (GIMP: a menu item's
highlight, then 60–80 ms later the dialog it opens), so every step pays for the
slowest: measured on GIMP's reference solutions, the fixed 100 ms window was two
thirds of the harness's time per step. But the pauses belong to kinds of action: a
pointer move or typed text repaints once, while a click or a shortcut may open a
window that draws in parts. So `Pace` keeps, for each kind, the pauses seen inside
recent bursts, and waits a margin over the longest pause that came twice:

- a pause seen once may be a timer of the app's own that happened to fire inside a
  burst (GIMP, measured: one run in four saw a ~100 ms one after a pointer move,
  never again); one seen twice is how the kind draws. So the quiet covers the second
  longest pause kept, not the longest;
- a kind is trusted below the caller's quiet window only after `SAMPLES` bursts of
  it were seen whole; until then it gets the whole window;
- a burst taken for over too early shows itself: a change that comes after its
  settle ended and before the next input (`late`) is a pause the kind makes, and it
  is learned like any other, so once it came twice the kind's bursts wait for it;
- the quiet never drops below `FLOOR` (more than a frame of the server's own clock:
  Xvnc sends at most 60 updates a second, so a burst's parts arrive a multiple of
  ~17 ms apart: GIMP's answer to a tool shortcut pauses 17 or 34 ms)
  and never exceeds the caller's window: a screen that pauses longer than the
  window was never waited for, and is not now.

The wait for an action's first visible change is not learned: it is the caller's.
Cut short, it would show an agent the screen from before its click as the screen
after it, and invite the click again (under load, Tk's answer to a key took longer
than any of the first changes seen before it); waiting it out costs only the
actions that change nothing.
"""

from __future__ import annotations

from collections import deque

FLOOR = 0.02
"""The shortest quiet (s): above one tick of Xvnc's 60 Hz update clock (16.7 ms), so
a burst whose parts the server sends a tick apart is not cut between them before
its pause was ever seen. Measured on GIMP (bench/bench_episode.py): 25 ms cost ~5 ms
a step more and 15 ms saved ~2 ms."""
MARGIN = 1.5
"""The quiet is this many times the longest pause seen twice."""
SAMPLES = 8
"""Bursts of a kind seen before its own pace replaces the caller's window."""
KEEP = 32
"""Pauses kept per kind: recent ones, so a screen that slows
down (a loaded machine) is followed within a few dozen steps."""


class Pace:
    """The pauses seen inside bursts of changes, per kind of action."""

    def __init__(self) -> None:
        self._pauses: dict[str, deque[float]] = {}
        self._bursts: dict[str, int] = {}

    def quiet(self, kind: str | None, window: float) -> float:
        """How long the screen must stay still after a `kind` action (at most `window`)."""
        pauses = self._pauses.get(kind or "")
        if kind is None or self._bursts.get(kind, 0) < SAMPLES or pauses is None:
            return window
        recurring = sorted(pauses)[-2] if len(pauses) > 1 else 0.0
        return min(window, max(FLOOR, MARGIN * recurring))

    def burst(self, kind: str, pauses: list[float]) -> None:
        """A settle after a `kind` action saw these pauses between its changes."""
        self._bursts[kind] = self._bursts.get(kind, 0) + 1
        kept = self._pauses.setdefault(kind, deque(maxlen=KEEP))
        kept.extend(pauses)
        if not pauses:
            kept.append(0.0)

    def late(self, kind: str, pause: float) -> None:
        """A change came `pause` seconds after the burst's last change, once its
        settle had ended."""
        self._pauses.setdefault(kind, deque(maxlen=KEEP)).append(pause)
