"""Which failed tries of a slot are retried, and which mark their host down.

Both decisions read what an episode recorded: its status, its steps and its error's
kind (`app.core.vocabulary.ErrorKind`, stored beside the error's text), so a resumed
batch decides from the database alone. The text is for people; nothing here reads it.
"""

from __future__ import annotations

from app.core.errors import DeskLoopError, is_infrastructure, is_of_the_desktop
from app.core.vocabulary import ErrorKind


class TimeLimitExceeded(DeskLoopError):
    """The batch's time limit for one episode ran out (the runner adds where it was).
    Infrastructure: a slow or stuck desktop is the usual cause, so the try is retried."""

    title = "Batch time limit"
    kind = "time_limit"

    def __init__(self, limit: float) -> None:
        super().__init__(f"batch time limit of {limit:g} s exceeded")
        self.limit = limit


def is_retried(status: str, kind: ErrorKind | None) -> bool:
    """Whether a try that ended so is one a fresh desktop may cure. An error of no
    recorded kind (None) is not: nothing says it would go differently."""
    return status == "error" and is_infrastructure(kind)


def failed_at_startup(status: str, steps: int, kind: ErrorKind | None) -> bool:
    """Whether an episode's desktop failed before the agent took a step (its host
    could not be reached, the VM did not boot, VNC or the guest never answered)."""
    return status == "error" and steps == 0 and is_of_the_desktop(kind)
