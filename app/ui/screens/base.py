"""The base of the TUI's screens: typed access to the app's services, and help."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey
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


APP_ACTIONS = ("quit", "help")
"""The app's own keys (`q`, `?`), which the footer must always show."""


class LabFooter(Footer):
    """The compact footer with the app's keys first: at 80 columns a screen with many
    keys (Desktops) pushed `q Quit` off the right edge; the screen's own keys that
    do not fit are still listed by `?`."""

    def __init__(self) -> None:
        super().__init__(compact=True)

    def compose(self) -> ComposeResult:
        widgets = list(super().compose())
        first = [w for w in widgets if isinstance(w, FooterKey) and w.action in APP_ACTIONS]
        yield from first + [w for w in widgets if w not in first]
