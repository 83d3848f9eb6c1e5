"""The base of the TUI's screens: typed access to the app's services, and help."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.screen import Screen
from textual.worker import Worker

if TYPE_CHECKING:
    from app.ui.app import DeskLoopApp


class LabScreen(Screen[None]):
    HELP: ClassVar[str] = ""
    """Markdown shown by `?`."""

    @property
    def lab(self) -> DeskLoopApp:
        from app.ui.app import DeskLoopApp

        app = self.app
        assert isinstance(app, DeskLoopApp)
        return app

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        # Worker messages do not bubble: hand failures to the app's one handler.
        self.lab.on_worker_state_changed(event)
