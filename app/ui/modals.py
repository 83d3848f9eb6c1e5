"""Dialogs shared by the screens: help, errors."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Markdown, Static


class HelpScreen(ModalScreen[None]):
    """The current screen's help text (`?`)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "dismiss", "Close"),
    ]

    def __init__(self, title: str, text: str, heading: str = "help") -> None:
        super().__init__()
        self.title_text = title
        self.text = text
        self.heading = heading

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="dialog"):
            yield Static(Text(f"{self.title_text} — {self.heading}", "bold"), id="dialog-title")
            yield Markdown(self.text)
            yield Static("[dim]esc closes[/dim]")


class ErrorScreen(ModalScreen[None]):
    """A failed operation, with the reason the lab gave."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,enter", "dismiss", "Close")]

    def __init__(self, title: str, text: str) -> None:
        super().__init__()
        self.title_text = title
        self.text = text

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="dialog", classes="error"):
            yield Static(Text(self.title_text, "bold"), id="dialog-title")
            yield Static(self.text, markup=False, id="error-text")
            yield Button("Close", id="close", variant="error")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(None)
