"""Author: a task by demonstration, the whole flow of `deskloop author` on one screen.

Four stages: *start* (the app or a task, asset files, the task id), *record* (the
desktop live, its VNC address for the author's viewer, the boundaries and windows as
they come), *review* (what the recording compiled to; the instruction, title, phase
messages and checks to edit; write the task) and *verify* (the proof, live).
The work is done by `app.ui.services.authoring`; this screen only shows its state.
The review's form (the sub-goals, the task's words, the checks) is a pane of its own,
`app.ui.screens.author_review`; this screen fills it and reads it back.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import ClassVar

from rich.console import Group
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import (
    Button,
    ContentSwitcher,
    DataTable,
    Header,
    Input,
    Label,
    RichLog,
    Select,
    Static,
)

from app.authoring.draft import WrittenTask
from app.authoring.review import (
    CheckItem,
    DraftForm,
    Review,
    load_review,
    proposals,
    write_task,
)
from app.authoring.start_state import AUTHOR_APPS
from app.core.errors import DeskLoopError
from app.proving.prove import Proof, proof_rows
from app.rfb.client import VncEndpoint
from app.ui.graphics import make_frame_view
from app.ui.halfblock import FrameView
from app.ui.modals import ErrorScreen, PromptScreen
from app.ui.screens.author_review import ReviewPane
from app.ui.screens.base import LabFooter, LabScreen
from app.ui.screens.live import LiveScreen
from app.ui.services.authoring import (
    RecordingSession,
    StartRequest,
    parse_assets,
    recording_folder,
    verify_task,
)
from app.ui.services.desktops import open_viewer
from app.ui.services.frame_feed import frame_feed

POLL_SECONDS = 0.25
"""How often the screen reads the recording's state (the recorder only counts)."""

Stage = str
PANES: dict[Stage, str] = {
    "start": "author-start",
    "record": "author-record-pane",
    "review": "author-review",
    "verify": "author-verify-pane",
}
STAGE_KEYS: dict[str, Stage] = {
    "mark": "record",
    "end": "record",
    "viewer": "record",
    "new_check": "review",
    "toggle_check": "review",
    "drop_check": "review",
    "write": "review",
    "verify": "review",
    "back": "verify",
}


class AuthorScreen(LabScreen):
    TITLE = "Author"
    HELP = """\
Author a task by demonstration: record the work once, review what it compiled to,
write the task into the library and prove it (what `deskloop author` does).

- **Start**: choose the app and asset files (paths, uploaded to the desktop and
  opened in the app), or a task to start from (its setup and files); the task id;
  **Record** (or enter). Or type a recording folder and **Review** it.
- **Record**: the desktop live on the left; connect any VNC viewer to the address
  and password shown (**o** opens TigerVNC's) and do the work there.
  **m** marks a sub-goal boundary (with an optional note: the next phase's
  message), **x** ends. In the viewer, ctrl+alt+shift+M marks and
  ctrl+alt+shift+Q ends too. Windows and boundaries are listed as they come.
- **Review**: the sub-goals with their actions and boundaries; edit the task id,
  title, instruction and one phase message per boundary. Checks: **space**
  accepts a proposed check (or un-accepts), **enter** edits it as YAML, **delete**
  drops it, **n** adds one by hand (YAML, validated: the error names the field).
  Only accepted (✓) checks are written. **F5** writes the task into the library
  (a validation error names the field; nothing typed is lost), **F6** verifies it.
- **Verify**: the reference replayed (each must score 1), the null agent and the
  untouched start (each 0), one skip replay per sub-goal (each must fail), with
  their progress live; checks too weak to tell a sub-goal happened are named.
  **b** goes back to the review.
- **F8** starts over with a new recording; **esc** leaves a text box.
"""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("m", "mark", "Mark boundary"),
        Binding("x", "end", "End recording"),
        Binding("o", "viewer", "VNC viewer"),
        Binding("n", "new_check", "Add check"),
        Binding("space", "toggle_check", "Accept", show=False),
        Binding("delete", "drop_check", "Drop", show=False),
        Binding("f5", "write", "Write", priority=True),
        Binding("f6", "verify", "Verify", priority=True),
        Binding("b", "back", "Back to review"),
        Binding("f8", "new", "New recording", priority=True),
        Binding("escape", "unfocus", "Leave box", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.stage: Stage = "start"
        self.session: RecordingSession | None = None
        self.review: Review | None = None
        self.written: WrittenTask | None = None
        self.proof: Proof | None = None
        self.verifying = False
        self._seen_version = -1
        self._lines_shown = 0

    # -- layout ---------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="author-stage")
        with ContentSwitcher(initial="author-start", id="author-stages"):
            with VerticalScroll(id="author-start"):
                yield Label("App (the app opened on the asset files)")
                yield Select(
                    [(a, a) for a in AUTHOR_APPS], value="gimp", allow_blank=False, id="author-app"
                )
                yield Label("Asset files (paths, separated by spaces)")
                yield Input(placeholder="~/photos/photo.png", id="author-assets")
                yield Label("Or start from a task (its setup and files; the app is its own)")
                yield Select([], prompt="no task: the app on the asset files", id="author-from")
                yield Label("Task id (lowercase words joined by '-')")
                yield Input(placeholder="photo-l3", id="author-id")
                with Horizontal(classes="author-buttons"):
                    yield Button("Record", id="author-record", variant="primary")
                yield Label("Or review a recording made before (its folder)")
                with Horizontal(classes="author-row"):
                    yield Input(placeholder="sessions/recordings/...", id="author-folder")
                    yield Button("Review", id="author-open")
                yield Static("", id="author-start-error", markup=False)
            with Horizontal(id="author-record-pane"):
                with Vertical(id="author-rec-left"):
                    yield Static("", id="author-rec-status")
                    yield make_frame_view(self.lab.graphics, id="author-frame")
                yield RichLog(id="author-events", wrap=True, markup=False)
            yield ReviewPane(id="author-review")
            with Vertical(id="author-verify-pane"):
                yield Static("", id="author-verdict")
                yield DataTable(id="author-proof", cursor_type="row")
                yield RichLog(id="author-progress", wrap=True, markup=False)
        yield LabFooter()

    def on_mount(self) -> None:
        self.query_one("#author-proof", DataTable).add_columns("run", "", "episode", "reason")
        self.fill_tasks()
        self.set_interval(POLL_SECONDS, self.poll)
        self.show_stage("start")

    def on_screen_resume(self) -> None:
        self.fill_tasks()
        self._feed_if_recording()

    def on_screen_suspend(self) -> None:
        self.workers.cancel_group(self, "author-feed")

    def fill_tasks(self) -> None:
        select: Select[str] = self.query_one("#author-from", Select)
        value = select.value
        ids = sorted(t.id for t in self.lab.tasks)
        select.set_options([(i, i) for i in ids])
        if isinstance(value, str) and value in ids:
            select.value = value

    def show_stage(self, stage: Stage) -> None:
        self.stage = stage
        self.query_one(ContentSwitcher).current = PANES[stage]
        steps = []
        for name in PANES:
            steps.append(f"[b reverse] {name} [/]" if name == stage else f" {name} ")
        self.query_one("#author-stage", Static).update(" → ".join(steps))
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Each stage's keys show (and work) in their stage only.
        stage = STAGE_KEYS.get(action)
        if stage == "record" and self.stage == "record":
            return self.session is not None and self.session.state == "recording"
        return stage is None or stage == self.stage

    # -- start ----------------------------------------------------------------------

    def _request(self) -> StartRequest:
        app = self.query_one("#author-app", Select).value
        chosen = self.query_one("#author-from", Select).value
        from_task = next((t for t in self.lab.tasks if t.id == chosen), None)
        task_id = self.query_one("#author-id", Input).value.strip()
        if not task_id and from_task is not None:
            task_id = f"{from_task.id}-demo"
        return StartRequest(
            task_id=task_id,
            app=app if isinstance(app, str) else None,
            from_task=from_task,
            assets=parse_assets(self.query_one("#author-assets", Input).value),
        )

    @on(Button.Pressed, "#author-record")
    @on(Input.Submitted, "#author-id, #author-assets")
    def start_recording(self) -> None:
        error = self.query_one("#author-start-error", Static)
        try:
            request = self._request()
        except ValueError as exc:
            error.update(Text(str(exc), "red"))
            return
        problems = request.problems()
        if problems:
            error.update(Text("\n".join(problems), "red"))
            return
        error.update("")
        folder = recording_folder(self.lab.db_path.parent / "recordings", request.task_id)
        session = RecordingSession(request, self.lab.pool, folder)
        self.session = self.lab.recording = session
        self.review, self.written, self.proof = None, None, None
        self._seen_version, self._lines_shown = -1, 0
        self.query_one("#author-events", RichLog).clear()
        self.query_one("#author-frame", FrameView).clear()
        self.show_stage("record")
        self.lab.run_worker(
            session.run(),
            group="authoring",
            description=f"recording {request.task_id}",
            exit_on_error=False,
        )
        self._feed_if_recording()

    @on(Button.Pressed, "#author-open")
    @on(Input.Submitted, "#author-folder")
    def open_recording(self) -> None:
        text = self.query_one("#author-folder", Input).value.strip()
        if text:
            self.session = None
            self.load(Path(text).expanduser())

    # -- record ---------------------------------------------------------------------

    def _feed_if_recording(self) -> None:
        if self.session is not None and not self.session.ended:
            self.feed()

    @work(group="author-feed", exclusive=True, exit_on_error=False, description="live view")
    async def feed(self) -> None:
        """The desktop live, with the Live screen's widget and frame feed."""
        session = self.session
        if session is None or LiveScreen.fps <= 0:
            return
        view = self.query_one("#author-frame", FrameView)
        async for _at, pixels in frame_feed(session.endpoint, fps=LiveScreen.fps):
            view.show(pixels)

    def poll(self) -> None:
        """Show the recording's news (called on a timer: the recorder only counts)."""
        session = self.session
        if session is None or session.version == self._seen_version:
            return
        self._seen_version = session.version
        log = self.query_one("#author-events", RichLog)
        # The session keeps its latest lines only: write those not shown yet.
        new = min(session.lines_total - self._lines_shown, len(session.log))
        for line in session.log[len(session.log) - new :]:
            log.write(line)
        self._lines_shown = session.lines_total
        self.query_one("#author-rec-status", Static).update(self._status_text(session))
        self.refresh_bindings()  # the record keys work while it records only
        if session.state == "ended" and self.stage == "record" and self.review is None:
            self.workers.cancel_group(self, "author-feed")
            self.notify(f"Recording ended: {session.end_reason}", timeout=4)
            self.load(session.folder)
        elif session.state == "failed":
            self.workers.cancel_group(self, "author-feed")

    def _status_text(self, session: RecordingSession) -> Group:
        """Three lines, each cut to the width: the viewer's address first."""
        first = Text(f"{session.request.task_id} ", "bold")
        if session.address is not None:
            a = session.address
            first.append("· viewer ")
            first.append(f"{a.host}:{a.port}", "bold cyan")
            first.append(" password ")
            first.append(a.password, "bold cyan")
        counts = session.counts
        color = {"failed": "red", "ended": "green"}.get(session.state, "yellow")
        second = Text(session.status, color)
        second.append(
            f" · {len(session.marks)} boundaries · {counts['key']} keys, "
            f"{counts['pointer']} pointer events, {counts['frame']} frames"
        )
        third = Text(str(session.folder), "dim")
        for line in (first, second, third):
            line.no_wrap, line.overflow = True, "ellipsis"
        return Group(first, second, third)

    def action_mark(self) -> None:
        session = self.session
        if session is None or session.state != "recording":
            self.notify("Not recording.", severity="warning")
            return

        def marked(note: str | None) -> None:
            if note is None:
                return
            try:
                session.mark(note)
            except ValueError as exc:
                self.notify(str(exc), severity="warning")
                return
            self.notify(f"Boundary {len(session.marks)} marked.", timeout=3)

        n = len(session.marks) + 1
        self.app.push_screen(
            PromptScreen(
                f"Boundary {n}",
                "A note for it: what the person says next (the next phase's message). "
                "It may be empty.",
                "Now export it as a JPEG.",
            ),
            marked,
        )

    def action_end(self) -> None:
        if self.session is None or self.session.ended:
            self.notify("Not recording.", severity="warning")
            return
        self.session.end("ended in the TUI")
        self.notify("Ending the recording…", timeout=3)

    def action_viewer(self) -> None:
        session = self.session
        if session is None or session.address is None or session.ended:
            self.notify("No recording to view yet.", severity="warning")
            return
        a = session.address
        try:
            open_viewer(VncEndpoint(a.host, a.port, a.password))
        except DeskLoopError as exc:
            self.app.push_screen(ErrorScreen("No VNC viewer", str(exc)))

    # -- review ---------------------------------------------------------------------

    @work(group="author-load", exclusive=True, exit_on_error=False, description="compiling")
    async def load(self, folder: Path) -> None:
        review = await asyncio.to_thread(load_review, folder)
        proposed = await asyncio.to_thread(proposals, folder, review.start.task.id)
        self.review = review
        self.query_one(ReviewPane).fill(review, [CheckItem.proposed(p) for p in proposed])
        self.show_stage("review")

    def action_new_check(self) -> None:
        self.query_one(ReviewPane).new_check()

    def action_toggle_check(self) -> None:
        self.query_one(ReviewPane).toggle_check()

    def action_drop_check(self) -> None:
        self.query_one(ReviewPane).drop_check()

    @on(Button.Pressed, "#author-write")
    def action_write(self) -> None:
        if self.review is None:
            return
        self.write(self.review, self.query_one(ReviewPane).form(self.review))

    @work(group="author-write", exclusive=True, exit_on_error=False, description="writing")
    async def write(self, review: Review, form: DraftForm) -> None:
        result = self.query_one("#author-result", Static)
        result.update("writing…")
        try:
            written = await asyncio.to_thread(write_task, review, form, self.lab.tasks_dir)
        except DeskLoopError as exc:
            # In the pane, beside what was typed (which stays as it was).
            result.update(Text(f"not written:\n{exc}", "red"))
            self.written = None
            return
        self.written = written
        await asyncio.to_thread(self.lab.reload_tasks)
        result.update(
            Text(
                f"wrote {written.task}\nwrote {written.reference}\n"
                f"({len(written.written)} files) · F6 verifies it",
                "green",
            )
        )
        self.notify(f"Wrote {written.task}", timeout=4)

    # -- verify ---------------------------------------------------------------------

    @on(Button.Pressed, "#author-verify")
    def action_verify(self) -> None:
        if self.written is None:
            self.notify("Write the task first (F5).", severity="warning")
            return
        if self.verifying:
            self.show_stage("verify")
            return
        repeats = self.query_one(ReviewPane).repeats()
        self.query_one("#author-progress", RichLog).clear()
        self.query_one("#author-proof", DataTable).clear()
        self.proof = None
        self.show_stage("verify")
        self.verify(self.written.task, repeats)

    @work(group="author-verify", exclusive=True, exit_on_error=False, description="verifying")
    async def verify(self, task_file: Path, repeats: int) -> None:
        verdict = self.query_one("#author-verdict", Static)
        verdict.update(Text(f"verifying {task_file} ({repeats} reference replays)…", "yellow"))
        self.verifying = True
        try:
            # prove_task runs on this loop, so its progress lines arrive here in order.
            proof = await verify_task(
                task_file,
                self.lab.store,
                self.lab.backend,
                repeats=repeats,
                progress=self._progress,
            )
        except BaseException:
            verdict.update(Text("verification failed to run (see the error)", "red"))
            raise
        finally:
            self.verifying = False
        self.proof = proof
        table = self.query_one("#author-proof", DataTable)
        for what, ok, episode, reason in proof_rows(proof):
            mark = Text("ok", "green") if ok else Text("FAILED", "bold red")
            table.add_row(what, mark, episode, reason)
        text = Text(
            f"{proof.task.id}: {'proven' if proof.ok else 'NOT proven'}",
            "bold green" if proof.ok else "bold red",
        )
        if proof.weak_checks:
            text.append("\nchecks that still passed with a sub-goal skipped (too weak):\n")
            text.append("\n".join(f"  {c}" for c in proof.weak_checks), "yellow")
        verdict.update(text)

    def _progress(self, line: str) -> None:
        self.query_one("#author-progress", RichLog).write(line)

    def action_back(self) -> None:
        if self.review is not None:
            self.show_stage("review")

    def action_new(self) -> None:
        if self.session is not None and not self.session.ended:
            self.notify("A recording is running: end it first (x).", severity="warning")
            return
        if self.verifying:
            self.notify("A verification is running.", severity="warning")
            return
        self.show_stage("start")

    def action_unfocus(self) -> None:
        self.set_focus(None)
