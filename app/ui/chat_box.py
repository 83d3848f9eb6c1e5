"""The Live screen's chat box: several lines, enter sends, and the script's draft sent
exactly as the script has it."""

from __future__ import annotations

from textual import events
from textual.message import Message
from textual.widgets import TextArea

NEWLINE_KEYS = frozenset({"ctrl+j", "shift+enter", "alt+enter"})
"""Keys that start a new line in the chat box (enter sends). ctrl+j reaches every
terminal's application (it is the newline character); shift+enter and alt+enter only
where the terminal tells them apart from enter."""


class ChatBox(TextArea):
    """The chat box: several lines, so a phase's message of several lines is offered,
    edited and sent with its lines and their indentation (a one-line input ran them
    together). `enter` sends (`Submitted`); `NEWLINE_KEYS` start a new line."""

    class Submitted(Message):
        """Enter in the chat box: `value` is its text as it stands."""

        def __init__(self, chat_box: ChatBox, value: str) -> None:
            super().__init__()
            self.chat_box = chat_box
            self.value = value

        @property
        def control(self) -> ChatBox:
            return self.chat_box

    def __init__(self, *, id: str | None = None, placeholder: str = "") -> None:
        super().__init__(id=id, soft_wrap=True, tab_behavior="focus", placeholder=placeholder)

    @property
    def value(self) -> str:
        return self.text

    @value.setter
    def value(self, text: str) -> None:
        # The cursor after the text: `c` then typing continues the draft, never
        # writes before it.
        self.load_text(text)
        self.move_cursor(self.document.end)

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "enter" and not self.read_only:
            event.stop()
            event.prevent_default()
            self.post_message(self.Submitted(self, self.text))
            return
        if event.key in NEWLINE_KEYS and not self.read_only:
            event.stop()
            event.prevent_default()
            start, end = self.selection
            # As typing does: over the selection, the cursor after the new line.
            self.replace("\n", start, end, maintain_selection_offset=False)
            return
        await super()._on_key(event)


def message_text(typed: str, draft: str | None) -> str:
    """What the chat box sends of `typed`. The script's draft, unchanged but for blank
    space around it, is sent exactly as the script has it (its lines, indentation and
    final newline: the record must hold the script's text). Otherwise blank lines
    around the text and trailing spaces go; a one-line message is stripped; the lines
    of a longer one keep their indentation."""
    if draft is not None and typed.strip() == draft.strip():
        return draft
    lines = typed.rstrip().split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    if len(lines) <= 1:
        return typed.strip()
    return "\n".join(lines)
