"""Tasks: browse the library by app, level and kind; read a task; validate; start."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Header, Input, Label, Markdown, Select, Static, Tree

from app.core.validation import positive_seconds
from app.core.vocabulary import UserMode
from app.tasks.model import Task
from app.ui.describe import task_markdown
from app.ui.modals import HelpScreen
from app.ui.screens.base import LabFooter, LabScreen

KIND_FILTERS = ("all", "interactive", "standard")


Choice = tuple[str, UserMode, float | None, dict[str, str], dict[str, str] | None]
"""Agent, user mode, agent timeout, the model agent's endpoint, and the LLM user's
(model, base URL, key variable; None: no LLM user)."""


def computer_tool_options() -> list[tuple[str, str]]:
    """The start dialog's computer tool choices: the families table's tools. Built when
    the dialog opens: the agents' modules are not needed to show the task list."""
    from app.agents.families import FAMILIES

    return [
        ("computer tool: as the format table says", ""),
        *(
            (f"computer tool: {tool} ({row.name})", tool)
            for row in FAMILIES.values()
            for tool in row.tools
        ),
    ]


TEXT_TURN_OPTIONS = [
    ("text without a tool call: DONE (default)", ""),
    ("text without a tool call: a question (ASK)", "ask"),
]
"""anthropic, openai-cua: what a turn of text without a tool call is (`--text-turn`)."""


def adapter_options() -> list[tuple[str, str]]:
    """The start dialog's adapter choices, one per family (built when it opens)."""
    from app.agents.families import FAMILIES

    return [
        ("as the agent spec says (default: DeskLoop's tools)", ""),
        *((f"{row.name}: {row.summary}", row.name) for row in FAMILIES.values()),
    ]


class StartEpisodeScreen(ModalScreen[Choice | None]):
    """Choose the agent, a model agent's endpoint and timeout, and who plays the user;
    dismisses with a `Choice`."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(None)", "Cancel")]

    def __init__(self, task: Task) -> None:
        super().__init__()
        self.task_ = task

    def compose(self) -> ComposeResult:
        from app.agents.adapters.deskloop.config import DeskLoopConfig
        from app.agents.spec import AGENT_SPECS
        from app.ui.services.episode import HUMAN

        # The fields scroll (with the model fields they are taller than a 100×30
        # terminal allows); Start and Cancel, below them, stay in view.
        with Vertical(id="dialog"):
            with VerticalScroll(id="dialog-fields"):
                yield Static(f"[b]Start an episode of {self.task_.id}[/b]", id="dialog-title")
                yield Label(f"Agent ({AGENT_SPECS} | {HUMAN}: you drive)")
                yield Input(value="reference", id="agent")
                yield Label("Model agents: adapter, model, base URL, key variable")
                with Horizontal(id="model-fields"):
                    yield Select(adapter_options(), value="", allow_blank=False, id="adapter")
                    yield Input(placeholder="model (or in the spec)", id="model")
                with Horizontal(id="endpoint-fields"):
                    yield Input(
                        placeholder="base URL, e.g. http://127.0.0.1:8000/v1", id="base-url"
                    )
                    yield Input(placeholder="key variable (default per adapter)", id="api-key-env")
                with Horizontal(id="format-fields"):
                    yield Select(
                        computer_tool_options(), value="", allow_blank=False, id="computer-tool"
                    )
                    yield Select(TEXT_TURN_OPTIONS, value="", allow_blank=False, id="text-turn")
                yield Label("Agent timeout, seconds per model call (model agents)")
                yield Input(placeholder=f"default {DeskLoopConfig.deadline:g}", id="agent-timeout")
                yield Static("", id="agent-timeout-error")
                yield Label("User")
                yield Select(
                    [
                        ("person (you, in the chat pane)", "person"),
                        ("simulated (phase script)", "simulated"),
                        ("LLM user (phase script; a model answers the rest)", "llm"),
                    ],
                    value="person",
                    allow_blank=False,
                    id="user",
                )
                yield Label("LLM user: model, base URL (key variable: the agent's, or default)")
                with Horizontal(id="llm-user-fields"):
                    yield Input(placeholder="model for the LLM user", id="user-model")
                    yield Input(placeholder="base URL (default: the agent's)", id="user-base-url")
                yield Static("", id="user-error")
            with Horizontal(id="dialog-buttons"):
                yield Button("Start", id="start", variant="primary")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        # The scrolling fields would take the focus first; Enter in the agent field starts.
        self.query_one("#agent", Input).focus()
        self.watch(self.query_one("#user", Select), "expanded", self._user_list_toggled, init=False)

    def _user_list_toggled(self, expanded: bool) -> None:
        # Once the user is chosen, Enter starts: the cursor goes to Start, and a
        # second Enter never reopens the list.
        if not expanded:
            self.query_one("#start", Button).focus()

    @on(Input.Submitted)
    @on(Button.Pressed, "#start")
    def start(self) -> None:
        agent = self.query_one("#agent", Input).value.strip()
        user = self.query_one("#user", Select).value
        typed = self.query_one("#agent-timeout", Input).value.strip()
        timeout: float | None = None
        if typed:
            try:
                timeout = positive_seconds(typed)
            except ValueError as exc:
                self.query_one("#agent-timeout-error", Static).update(
                    f"[red]Agent timeout {exc}[/red]"
                )
                return
        endpoint = {
            name: value
            for name, value in (
                ("adapter", str(self.query_one("#adapter", Select).value or "")),
                ("model", self.query_one("#model", Input).value.strip()),
                ("base_url", self.query_one("#base-url", Input).value.strip()),
                ("api_key_env", self.query_one("#api-key-env", Input).value.strip()),
                ("computer_tool", str(self.query_one("#computer-tool", Select).value or "")),
                ("text_turn", str(self.query_one("#text-turn", Select).value or "")),
            )
            if value
        }
        if agent and user == "person":
            self.dismiss((agent, "person", timeout, endpoint, None))
        elif agent and user == "simulated":
            self.dismiss((agent, "simulated", timeout, endpoint, None))
        elif agent and user == "llm":
            model = self.query_one("#user-model", Input).value.strip()
            if not model:
                self.query_one("#user-error", Static).update(
                    "[red]The LLM user needs a model (LLM user: model)[/red]"
                )
                return
            llm = {"model": model}
            base_url = self.query_one("#user-base-url", Input).value.strip()
            base_url = base_url or endpoint.get("base_url", "")
            if base_url:
                llm["base_url"] = base_url
            if endpoint.get("api_key_env"):
                llm["api_key_env"] = endpoint["api_key_env"]
            # The store's user mode: a model playing the user is a simulated user.
            self.dismiss((agent, "simulated", timeout, endpoint, llm))

    @on(Button.Pressed, "#cancel")
    def cancel(self) -> None:
        self.dismiss(None)


class TasksScreen(LabScreen):
    TITLE = "Tasks"
    HELP = """\
The task library (`--tasks-dir`), grouped by app and level. A task marked
**interactive** has phases: later user messages delivered by triggers.

- **↑/↓, enter** move in the tree; the right pane shows the task: instruction,
  phases with their triggers, setup steps and the checks that score it.
- **s** start an episode of the selected task: pick the agent and the user
  (*person*: you answer questions and review DONE in the Live screen;
  *simulated*: the task's phase script). A model agent's timeout is the most
  seconds one call to its endpoint may take; an endpoint that cannot answer in
  time ends the episode as an infrastructure error.
- **k** cycle the filter: all / interactive / standard tasks.
- **v** validate: reload every task file and list the ones that fail, with the
  file and field at fault.
"""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "start", "Start episode"),
        Binding("k", "cycle_kind", "Filter kind"),
        Binding("v", "validate", "Validate"),
    ]

    class EpisodeRequested(Message):
        def __init__(
            self,
            task: Task,
            agent: str,
            user: UserMode,
            agent_timeout: float | None = None,
            endpoint: dict[str, str] | None = None,
            llm_user: dict[str, str] | None = None,
        ) -> None:
            super().__init__()
            self.llm_user = llm_user
            self.task = task
            self.agent = agent
            self.user = user
            self.agent_timeout = agent_timeout
            self.endpoint = endpoint or {}

    def __init__(self) -> None:
        super().__init__()
        self.kind_filter = "all"
        self.selected: Task | None = None
        self._rendering = False
        """Whether the detail pane is being rendered (see `show_task`)."""

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal():
            with Vertical(id="task-side"):
                yield Static("", id="task-filter")
                yield Tree("tasks", id="task-tree")
            with VerticalScroll(id="task-detail"):
                yield Markdown("Select a task.", id="task-md")
        yield LabFooter()

    def on_mount(self) -> None:
        self.fill()
        self.query_one(Tree).focus()

    def fill(self) -> None:
        tree: Tree[Task | None] = self.query_one(Tree)
        tree.clear()
        tree.root.expand()
        tree.show_root = False
        tasks = [
            t
            for t in self.lab.tasks
            if self.kind_filter == "all" or (t.interactive == (self.kind_filter == "interactive"))
        ]
        by_app: dict[str, dict[str, list[Task]]] = {}
        for task in sorted(tasks, key=lambda t: (t.app, t.level, t.id)):
            by_app.setdefault(task.app, {}).setdefault(task.level, []).append(task)
        first = None
        if self.selected is not None and self.selected not in tasks:
            # The filter hid it: `s` must never start a task the tree does not show.
            self.selected = None
        for app_name, levels in by_app.items():
            app_node = tree.root.add(f"[b]{app_name}[/b]", expand=True)
            for level, members in levels.items():
                level_node = app_node.add(level, expand=True)
                for task in members:
                    mark = "[magenta]◆[/magenta] " if task.interactive else "  "
                    leaf = level_node.add_leaf(f"{mark}{task.id}", data=task)
                    if first is None or (self.selected and task.id == self.selected.id):
                        first = leaf
        if first is not None and first.data is not None:
            self._show(first.data)
            # Stay on the selected task (or start on the first), so its details show
            # and `s` works at once.
            self.call_after_refresh(tree.move_cursor, first)
        errors = len(self.lab.task_errors)
        note = f" · [red]{errors} invalid (v)[/red]" if errors else ""
        self.query_one("#task-filter", Static).update(
            f"{len(tasks)} tasks · showing {self.kind_filter} (k) · "
            f"[magenta]◆[/magenta] interactive{note}"
        )

    @on(Tree.NodeHighlighted)
    def show_task(self, event: Tree.NodeHighlighted[Task | None]) -> None:
        task = event.node.data
        if task is not None:
            self._show(task)

    def _show(self, task: Task) -> None:
        self.selected = task
        if not self._rendering:
            self._rendering = True
            self.run_worker(self._render_detail(), group="task-detail", exit_on_error=False)

    async def _render_detail(self) -> None:
        """Render the selected task's details, one update at a time, until the pane
        shows the latest selection. Markdown updates started while one runs pile up
        their blocks (each removes only the blocks there when it was started), which
        left the pane showing earlier tasks after quick moves."""
        markdown = self.query_one("#task-md", Markdown)
        shown: Task | None = None
        try:
            while shown is not self.selected and self.selected is not None:
                shown = self.selected
                await markdown.update(task_markdown(shown))
        finally:
            self._rendering = False

    def action_cycle_kind(self) -> None:
        self.kind_filter = KIND_FILTERS[(KIND_FILTERS.index(self.kind_filter) + 1) % 3]
        self.fill()

    def action_validate(self) -> None:
        self.lab.reload_tasks()
        self.fill()
        errors = self.lab.task_errors
        if errors:
            text = f"**{len(errors)} task file(s) failed validation**\n\n" + "\n\n".join(
                f"- {e}" for e in errors
            )
        else:
            text = f"All {len(self.lab.tasks)} tasks in `{self.lab.tasks_dir}` are valid."
        self.app.push_screen(HelpScreen("Tasks", text, heading="validation"))

    def action_start(self) -> None:
        task = self.selected
        if task is None:
            self.notify("Select a task first.", severity="warning")
            return

        def chosen(choice: Choice | None) -> None:
            if choice is not None:
                self.post_message(self.EpisodeRequested(task, *choice))

        self.app.push_screen(StartEpisodeScreen(task), chosen)

    def on_tasks_screen_episode_requested(self, event: EpisodeRequested) -> None:
        from app.core.errors import DeskLoopError

        try:
            self.lab.start_episode(
                event.task,
                event.agent,
                event.user,
                event.agent_timeout,
                endpoint=event.endpoint,
                llm_user=event.llm_user,
            )
        except DeskLoopError as exc:
            from app.ui.modals import ErrorScreen

            self.app.push_screen(ErrorScreen(f"Cannot start: {exc.title}", str(exc)))
