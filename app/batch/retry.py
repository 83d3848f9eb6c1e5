"""Which failed tries of a slot are retried, and which mark their host down.

Both decisions read the error text an episode recorded (an error class's title at its
start, or the batch's own time-limit text), so a resumed batch decides from the
database alone. This module is the one place that knows those texts.
"""

from __future__ import annotations

from app.core.errors import AgentUnavailable, DesktopError, GuestError, VNCError
from app.users.llm import UserUnavailable

INFRASTRUCTURE_TITLES = tuple(
    cls.title for cls in (DesktopError, VNCError, GuestError, AgentUnavailable, UserUnavailable)
)
# The start of `time_limit_error`'s text, and of the store's record of an episode whose
# runner died.
_RETRIED_TEXTS = ("batch time limit", "interrupted:")


def is_infrastructure_error(error: str | None) -> bool:
    """Whether an episode's recorded error is one a fresh desktop may cure."""
    if not error:
        return False
    text = error.removeprefix("scoring failed: ")
    return text.startswith(INFRASTRUCTURE_TITLES) or text.startswith(_RETRIED_TEXTS)


# The desktop side of an episode: a failure of one of these before the agent's first
# step means the desktop never came up on its host.
_DESKTOP_TITLES = tuple(cls.title for cls in (DesktopError, VNCError, GuestError))


def failed_at_startup(status: str, steps: int, error: str | None) -> bool:
    """Whether an episode's desktop failed before the agent took a step (its host
    could not be reached, the VM did not boot, VNC or the guest never answered)."""
    return status == "error" and steps == 0 and (error or "").startswith(_DESKTOP_TITLES)


def time_limit_error(limit: float) -> str:
    """Why the batch's time limit ended an episode (the runner adds where it was)."""
    return f"batch time limit of {limit:g} s exceeded"
