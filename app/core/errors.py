"""One error base class for the lab; one subclass per subsystem.

Library errors (OSError from a socket, yaml errors, sqlite errors) are translated
into these where they enter the app, so the CLI and the UI can show a title and a
message without knowing which library failed.

Each class also says what failed, as a typed `kind` (`app.core.vocabulary.ErrorKind`),
and what follows from it: whether the error is `infrastructure` (not the agent's
fault; a retry on a fresh desktop may succeed), `of_the_desktop` (the desktop, its VNC
or its guest failed: before the agent's first step, that is a start-up failure, the
desktop never came up on its host) or the agent's own (`agents_own`: a failed attempt). The episode
runner records the kind beside the error's text, and every decision about an error
(a batch's retries, a host taken out of its pool, the figures' outcomes) reads the
kind, never the text, which is only for people.
"""

from __future__ import annotations

from typing import ClassVar

from app.core.vocabulary import (
    AGENT_ERROR_KINDS,
    DESKTOP_ERROR_KINDS,
    INFRASTRUCTURE_ERROR_KINDS,
    ErrorKind,
)


def is_infrastructure(kind: ErrorKind | None) -> bool:
    """Whether an error of this kind is the infrastructure's (None: the kind is unknown,
    as for episodes recorded before kinds were; never retried, counted as errors)."""
    return kind in INFRASTRUCTURE_ERROR_KINDS


def is_of_the_desktop(kind: ErrorKind | None) -> bool:
    """Whether an error of this kind is the desktop side's (desktop, VNC, guest)."""
    return kind in DESKTOP_ERROR_KINDS


def is_agents_own(kind: ErrorKind | None) -> bool:
    """Whether an error of this kind is the agent's own doing, an attempt that failed."""
    return kind in AGENT_ERROR_KINDS


class DeskLoopError(Exception):
    """Base of every error DeskLoop raises on purpose."""

    title = "DeskLoop error"
    kind: ClassVar[ErrorKind] = "other"
    """What failed; a subclass names its own. A class with subclasses of another kind
    declares it `ClassVar[ErrorKind]`: mypy would take a bare word for the only one."""
    infrastructure: ClassVar[bool] = False
    """Derived from `kind` for every class (see `__init_subclass__`)."""
    of_the_desktop: ClassVar[bool] = False
    """Derived from `kind` for every class."""
    agents_own: ClassVar[bool] = False
    """Derived from `kind` for every class."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        # Derived, never written by hand: the store keeps only the kind, so a fact that
        # could differ from its kind's would be lost between the runner and the batch.
        super().__init_subclass__(**kwargs)
        cls.infrastructure = is_infrastructure(cls.kind)
        cls.of_the_desktop = is_of_the_desktop(cls.kind)
        cls.agents_own = is_agents_own(cls.kind)

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


def describe_error(exc: BaseException) -> str:
    """An error as people read it: `Title: message`, or the type's name for a bug."""
    if isinstance(exc, DeskLoopError):
        return f"{exc.title}: {exc}"
    return f"{type(exc).__name__}: {exc}"


def error_kind(exc: BaseException) -> ErrorKind:
    """What failed: a DeskLoop error's kind; `internal` for any other exception (a bug)."""
    return exc.kind if isinstance(exc, DeskLoopError) else "internal"


class TaskError(DeskLoopError):
    """A task file is missing, malformed or refers to something that is not there."""

    title = "Invalid task"
    kind: ClassVar[ErrorKind] = "task"


class ActionError(DeskLoopError):
    """An agent action is malformed (unknown key name, bad coordinates...)."""

    title = "Invalid action"
    kind: ClassVar[ErrorKind] = "action"


class VNCError(DeskLoopError):
    """The VNC connection failed, timed out or the server spoke nonsense."""

    title = "VNC error"
    kind: ClassVar[ErrorKind] = "vnc"


class DesktopError(DeskLoopError):
    """A desktop could not be started, reset or driven."""

    title = "Desktop error"
    kind: ClassVar[ErrorKind] = "desktop"


class GuestError(DeskLoopError):
    """A command or file operation in the desktop's guest failed or was refused."""

    title = "Guest error"
    kind: ClassVar[ErrorKind] = "guest"


class FileTooLarge(GuestError):
    """A guest file is over the size a read allows: it exists, but was not read.
    Scoring tells it from an unreadable file by this type (and shows its size)."""

    def __init__(self, message: str, *, size: int | None, limit: int) -> None:
        super().__init__(message)
        self.size = size
        """The file's size in bytes; None when it only grew past `limit` while read."""
        self.limit = limit


class StoreError(DeskLoopError):
    """The episode database could not be opened, migrated or queried."""

    title = "Store error"
    kind: ClassVar[ErrorKind] = "store"


class EndpointRefused(DeskLoopError):
    """A model endpoint answered the request with a refusal (HTTP 4xx other than 429:
    a bad key, an unknown model, a malformed request). Sending it again will not help,
    so it is never retried, and neither is the episode it ended."""

    title = "Endpoint refused"
    kind: ClassVar[ErrorKind] = "endpoint_refused"


class EndpointUnavailable(DeskLoopError):
    """A model endpoint did not answer usefully (429, 5xx, timeouts, connection
    failures) within its retries and the call's deadline: an infrastructure error,
    which a batch retries."""

    title = "Endpoint unavailable"
    kind: ClassVar[ErrorKind] = "endpoint"


class AgentError(DeskLoopError):
    """An agent could not be built or produced an unusable answer."""

    title = "Agent error"
    kind: ClassVar[ErrorKind] = "agent"


class AgentRefused(AgentError):
    """The agent's model endpoint refused its request (`EndpointRefused`: a bad key, an
    unknown model). Neither the infrastructure's nor the agent's doing: the lab's
    settings are wrong, so a retry would be refused again and the figures do not count
    it as the agent's failure. Worded as any agent error."""

    kind: ClassVar[ErrorKind] = "endpoint_refused"


class MalformedAction(AgentError):
    """The agent answered, but not with a usable action (bad JSON, unknown tool, a
    key name that does not exist). The runner records the step as rejected with this
    reason and lets the agent try again within the step budget."""

    title = "Malformed action"

    def __init__(self, message: str, raw: object = None) -> None:
        super().__init__(message)
        self.raw = raw


class AgentUnavailable(AgentError):
    """The agent's backend (a model endpoint) failed after its retries: an
    infrastructure error, recorded as the episode's `error`, never as an agent FAIL."""

    title = "Agent unavailable"
    kind: ClassVar[ErrorKind] = "agent_unavailable"
