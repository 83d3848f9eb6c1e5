"""The Author screen's review pane: what a recording compiled to, and the draft's form.

On the left the sub-goals (their actions, what each changed, the boundaries' notes);
on the right the task's id, title, instruction and one phase message per boundary,
and the checks to accept, edit, drop or add by hand (validated as YAML), with the
write and verify buttons. The pane owns the checks as they are reviewed and reads the
form back as the service's `DraftForm`; the screen (`app.ui.screens.author`) owns
the stages, its keys and the work (compiling, writing, verifying). Apart from the
screen because the review is a whole form of its own: the screen only fills it and
reads it back.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Checkbox, DataTable, Input, Label, Static, TextArea

from app.authoring.review import CheckItem, DraftForm, Review, parse_check
from app.proving.prove import DEFAULT_REPEATS
from app.ui.modals import YamlScreen

STATE_MARK = {"proposed": "?", "accepted": "✓", "dropped": "✗"}


class ReviewPane(Horizontal):
    """The review stage: the compiled sub-goals beside the draft's form and checks."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.checks: list[CheckItem] = []

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="author-compiled"):
            yield Static("", id="author-summary", markup=False)
            yield Static("", id="author-subgoals")
        with VerticalScroll(id="author-form"):
            yield Label("Task id")
            yield Input(id="author-task-id")
            yield Label("Title")
            yield Input(id="author-title")
            yield Label("Instruction (the first user message)")
            yield TextArea(id="author-instruction")
            yield Vertical(id="author-messages")
            yield Label("Checks (✓ accepted, ? proposed, ✗ dropped)")
            yield DataTable(id="author-checks", cursor_type="row")
            yield Static("[dim]space accept · enter edit · delete drop · n add by hand[/dim]")
            yield Checkbox("replace a task of this id", id="author-overwrite")
            with Horizontal(classes="author-row"):
                yield Label("reference replays when verifying", id="author-repeats-label")
                yield Input(str(DEFAULT_REPEATS), id="author-repeats", type="integer")
            with Horizontal(classes="author-buttons"):
                yield Button("Write (F5)", id="author-write", variant="primary")
                yield Button("Verify (F6)", id="author-verify")
            yield Static("", id="author-result", markup=False)

    def on_mount(self) -> None:
        self.query_one("#author-checks", DataTable).add_columns("", "check", "why")

    def fill(self, review: Review, checks: list[CheckItem]) -> None:
        """Show `review` with its proposed `checks`, the form filled from its start."""
        self.checks = checks
        self.query_one("#author-summary", Static).update(review.summary)
        text = Text()
        for n, (actions, note) in enumerate(review.subgoals(), 1):
            text.append(f"sub-goal {n}\n", "bold")
            for line in actions:
                text.append(f"  {line}\n")
            if n <= len(review.changed):
                for line in review.changed[n - 1].splitlines()[1:] or ["nothing changed"]:
                    text.append(f"  Δ {line.strip()}\n", "dim")
            if note is not None:
                text.append(f"  — boundary {n}: ", "magenta")
                text.append(f"{note or '(no note)'}\n")
        self.query_one("#author-subgoals", Static).update(text)
        start = review.start.task
        task_id = start.id
        self.query_one("#author-task-id", Input).value = task_id
        self.query_one("#author-title", Input).value = task_id
        self.query_one("#author-instruction", TextArea).text = ""
        messages = self.query_one("#author-messages", Vertical)
        messages.remove_children()
        widgets: list[Label | Input] = []
        for n, mark in enumerate(review.recording.marks, 1):
            widgets.append(Label(f"Phase {n} message (after boundary {n})"))
            widgets.append(Input(mark.note, id=f"author-msg-{n}"))
        messages.mount_all(widgets)
        self.query_one("#author-result", Static).update("")
        self.fill_checks()

    def fill_checks(self, cursor: int | None = None) -> None:
        table = self.query_one("#author-checks", DataTable)
        table.clear()
        for item in self.checks:
            style = {"accepted": "green", "dropped": "dim strike"}.get(item.state, "yellow")
            table.add_row(Text(STATE_MARK[item.state], style), Text(item.text, style), item.why)
        if cursor is not None and self.checks:
            table.move_cursor(row=min(cursor, len(self.checks) - 1))

    def _selected_check(self) -> int | None:
        table = self.query_one("#author-checks", DataTable)
        if not self.checks:
            return None
        return table.cursor_row

    def new_check(self) -> None:
        def added(check: dict[str, Any] | None) -> None:
            if check is not None:
                self.checks.append(CheckItem(check, "added by hand", "accepted"))
                self.fill_checks(cursor=len(self.checks) - 1)

        self.app.push_screen(
            YamlScreen(
                "A check, by hand",
                "{check: file_exists, path: ~/Desktop/out.png}",
                parse_check,
            ),
            added,
        )

    def toggle_check(self) -> None:
        row = self._selected_check()
        if row is None:
            return
        item = self.checks[row]
        item.state = "proposed" if item.state == "accepted" else "accepted"
        self.fill_checks(cursor=row)

    def drop_check(self) -> None:
        row = self._selected_check()
        if row is None:
            return
        self.checks[row].state = "dropped"
        self.fill_checks(cursor=row)

    @on(DataTable.RowSelected, "#author-checks")
    def edit_check(self, event: DataTable.RowSelected) -> None:
        row = event.cursor_row
        item = self.checks[row]

        def edited(check: dict[str, Any] | None) -> None:
            if check is not None:
                item.check, item.state = check, "accepted"
                self.fill_checks(cursor=row)

        self.app.push_screen(YamlScreen(f"Check {row + 1}", item.text, parse_check), edited)

    def form(self, review: Review) -> DraftForm:
        """What was typed for `review` (the one this pane was filled with)."""
        messages = [
            self.query_one(f"#author-msg-{n}", Input).value
            for n in range(1, len(review.recording.marks) + 1)
        ]
        return DraftForm(
            task_id=self.query_one("#author-task-id", Input).value,
            title=self.query_one("#author-title", Input).value,
            instruction=self.query_one("#author-instruction", TextArea).text,
            messages=messages,
            checks=self.checks,
            overwrite=self.query_one("#author-overwrite", Checkbox).value,
            proposed_for=review.start.task.id,
        )

    def repeats(self) -> int:
        """The reference replays asked for when verifying (the default if not a count)."""
        text = self.query_one("#author-repeats", Input).value.strip()
        return int(text) if text.isdigit() and int(text) > 0 else DEFAULT_REPEATS
