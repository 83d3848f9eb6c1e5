"""Dialogs shared by the screens: help, errors, a choice, a line of text, YAML."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Markdown, OptionList, Static, TextArea
from textual.widgets.option_list import Option

from app.core.errors import DeskLoopError


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


class ChoiceScreen(ModalScreen[str | None]):
    """Pick one of a few values; dismisses with its key, or None on escape."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, question: str, choices: list[tuple[str, str]]) -> None:
        super().__init__()
        self.title_text = title
        self.question = question
        self.choices = choices
        """(key, label) pairs, in the order shown."""

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="dialog"):
            yield Static(Text(self.title_text, "bold"), id="dialog-title")
            yield Static(self.question)
            yield OptionList(*(Option(label, id=key) for key, label in self.choices), id="choices")
            yield Static("[dim]enter chooses · esc cancels[/dim]")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ConfirmScreen(ModalScreen[bool]):
    """A yes/no question before something that cannot be undone (quit or abort while an
    episode runs); dismisses with True for yes (`y`), False for no (`n`, esc)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
    ]

    def __init__(self, title: str, question: str, yes: str) -> None:
        super().__init__()
        self.title_text = title
        self.question = question
        self.yes = yes

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="dialog"):
            yield Static(Text(self.title_text, "bold"), id="dialog-title")
            yield Static(self.question, markup=False)
            with Horizontal(id="dialog-buttons"):
                yield Button(f"{self.yes} (y)", id="yes", variant="error")
                yield Button("Cancel (n)", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()  # enter is the safe answer

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class PromptScreen(ModalScreen[str | None]):
    """One line of text (may be empty); dismisses with it on enter, None on escape."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, question: str, placeholder: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.question = question
        self.placeholder = placeholder

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="dialog"):
            yield Static(Text(self.title_text, "bold"), id="dialog-title")
            yield Static(self.question)
            yield Input(placeholder=self.placeholder, id="prompt")
            yield Static("[dim]enter confirms · esc cancels[/dim]")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Submitted)
    def confirm(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        self.dismiss(None)


class YamlScreen(ModalScreen[Any]):
    """YAML text, checked by `parse` before it closes: a bad text keeps the dialog
    open with `parse`'s message (which names the field). Dismisses with what `parse`
    returned, or None on escape."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+s", "save", "Save", priority=True),
    ]

    def __init__(self, title: str, text: str, parse: Callable[[str], Any]) -> None:
        super().__init__()
        self.title_text = title
        self.text = text
        self.parse = parse

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="dialog"):
            yield Static(Text(self.title_text, "bold"), id="dialog-title")
            yield TextArea(self.text, language=None, id="yaml-text")
            yield Static("", id="yaml-error", markup=False)
            with Horizontal(id="dialog-buttons"):
                yield Button("Save", id="save", variant="primary")
                yield Button("Cancel", id="cancel")
            yield Static("[dim]ctrl+s saves · esc cancels[/dim]")

    def on_mount(self) -> None:
        self.query_one(TextArea).focus()

    @on(Button.Pressed, "#save")
    def action_save(self) -> None:
        text = self.query_one(TextArea).text
        try:
            value = self.parse(text)
        except (DeskLoopError, ValueError) as exc:
            self.query_one("#yaml-error", Static).update(Text(str(exc), "red"))
            return
        self.dismiss(value)

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)
