"""One error base class for the lab; one subclass per subsystem.

Library errors (OSError from a socket, yaml errors, sqlite errors) are translated
into these where they enter the app, so the CLI and the UI can show a title and a
message without knowing which library failed.
"""

from __future__ import annotations


class DeskLoopError(Exception):
    """Base of every error DeskLoop raises on purpose."""

    title = "DeskLoop error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class TaskError(DeskLoopError):
    """A task file is missing, malformed or refers to something that is not there."""

    title = "Invalid task"


class ActionError(DeskLoopError):
    """An agent action is malformed (unknown key name, bad coordinates...)."""

    title = "Invalid action"


class VNCError(DeskLoopError):
    """The VNC connection failed, timed out or the server spoke nonsense."""

    title = "VNC error"


class DesktopError(DeskLoopError):
    """A desktop could not be started, reset or driven."""

    title = "Desktop error"


class GuestError(DeskLoopError):
    """A command or file operation in the desktop's guest failed or was refused."""

    title = "Guest error"


class StoreError(DeskLoopError):
    """The episode database could not be opened, migrated or queried."""

    title = "Store error"


class EndpointRefused(DeskLoopError):
    """A model endpoint answered the request with a refusal (HTTP 4xx other than 429:
    a bad key, an unknown model, a malformed request). Sending it again will not help,
    so it is never retried, and neither is the episode it ended."""

    title = "Endpoint refused"


class EndpointUnavailable(DeskLoopError):
    """A model endpoint did not answer usefully (429, 5xx, timeouts, connection
    failures) within its retries and the call's deadline: an infrastructure error,
    which a batch retries."""

    title = "Endpoint unavailable"


class AgentError(DeskLoopError):
    """An agent could not be built or produced an unusable answer."""

    title = "Agent error"


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
