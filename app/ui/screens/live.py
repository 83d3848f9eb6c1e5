"""Live session: the desktop as it changes, the episode's state, and the chat pane."""

from __future__ import annotations

import time
from collections import deque
from typing import ClassVar

from rich.console import Group
from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import DataTable, Header, RichLog, Select, Static, TextArea

from app.core.conversation import Message as ChatMessage
from app.core.conversation import message_step
from app.core.vocabulary import UserKind
from app.episode.events import (
    EndedEvent,
    EpisodeResult,
    MessageEvent,
    PhaseEvent,
    RunnerEvent,
    StatusEvent,
    StepEvent,
    WaitingEvent,
)
from app.rfb.client import VncEndpoint
from app.ui.chat_box import ChatBox, message_text
from app.ui.describe import describe_end, flow
from app.ui.graphics import make_frame_view
from app.ui.halfblock import FrameView
from app.ui.modals import ConfirmScreen
from app.ui.screens.base import LabFooter, LabScreen
from app.ui.screens.live_text import chat_prompt, phase_lines, status_lines
from app.ui.services.episode import EpisodeSession, StepLine
from app.ui.services.frame_feed import frame_feed
from app.ui.takeover import PASSTHROUGH_KEY, TakeOver
from app.users.person import PhaseDue

FEED_FPS = 12.0
"""Redraw cap: FIELD_NOTES measured 17 fps full-frame half-block redraws; 10-15 fps
leaves the loop free for the runner and the rest of the UI."""

TIMING_WIDTH = 38
"""The step log's columns other than the action (step, agent, act, settle and their
gaps): the action is cut to what is left, so the timings stay in view."""

INJECT_KINDS: list[tuple[str, UserKind]] = [
    ("clarification", "clarification"),
    ("interruption", "interruption"),
]


class LiveScreen(LabScreen):
    TITLE = "Live"
    HELP = """\
The running episode (or a desktop chosen with **v** in Desktops).

- Left: the desktop's screen, redrawn as it changes (at most 12 redraws a
  second), with kitty or sixel graphics where the terminal has them, else half
  blocks (two pixels per character cell); the header says which.
- Right: the **active instruction** (the latest user message), the **phase
  timeline** (✓ delivered, ▶ pending and what will trigger it, · later), and the
  **step log** (action, seconds the agent took to decide, to act, to settle).
- Bottom: the **chat pane**. Type and press **enter** (**ctrl+j**: a new line);
  sending takes the cursor out of the box (**c** puts it back):
  - when the agent asked (ASK), your text is the **answer**;
  - after the agent's DONE, your text is **feedback** and the episode goes on
    with it as the active instruction; **F3** accepts the result instead (not
    while a phase is due: send its message, the DONE delivers it);
  - at any other time your text is injected as the kind chosen on the left
    (clarification or interruption) before the agent's next step.
- With user **person** you are the user: when a phase is due, its scripted
  message is put in the chat box (marked as the script's). Send it as it is
  (**c**, then **enter**), edit it, or clear it and write your own; the
  episode waits for you, and its time budget stops while it waits.
- **F2** pause / resume (between steps; the time budget stops while paused),
  **F4** abort the episode (asks first: **y** aborts).
- **c** puts the cursor in the chat box, **esc** takes it out (then the screen
  keys d t l e r ? q work again).
- **Take over**: click, drag or scroll on the desktop's picture (half blocks) and
  it happens on the desktop; **F6** sends every key to the desktop until F6
  again. Your actions are recorded as your steps, not the agent's; pause (**F2**)
  first so the agent does not act under you. **+**/**-** zoom, **shift+arrows** pan.

Every message is recorded with its kind and the step at which it arrived.
"""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f2", "pause", "Pause", priority=True),
        Binding("f3", "accept", "Accept", priority=True),
        Binding("f4", "abort", "Abort", priority=True),
        Binding("c", "chat", "Chat"),
        Binding("escape", "unfocus", "Leave chat", show=False),
        Binding(PASSTHROUGH_KEY, "passthrough", "Take keys", priority=True),
        Binding("plus,equals_sign", "zoom(1)", "Zoom", show=False),
        Binding("minus", "zoom(-1)", "Zoom out", show=False),
        Binding("shift+left", "pan(-0.25, 0)", "Pan", show=False),
        Binding("shift+right", "pan(0.25, 0)", "Pan", show=False),
        Binding("shift+up", "pan(0, -0.25)", "Pan", show=False),
        Binding("shift+down", "pan(0, 0.25)", "Pan", show=False),
    ]

    fps: ClassVar[float] = FEED_FPS
    """Live view redraw cap; 0 turns the live view off (bench/bench_tui.py's baseline)."""

    class RunnerUpdate(Message):
        """A runner event, re-posted so widgets change in the screen's own handler."""

        def __init__(self, event: RunnerEvent) -> None:
            super().__init__()
            self.event = event

    class FrameReady(Message):
        def __init__(self, pixels: object, at: float) -> None:
            super().__init__()
            self.pixels = pixels
            self.at = at

    def __init__(self) -> None:
        super().__init__()
        self.session: EpisodeSession | None = None
        self.frames_received = 0
        self.feed_started: float | None = None
        self.frame_times: deque[float] = deque(maxlen=10_000)
        """When each frame arrived (monotonic), for bench/bench_tui.py's rate."""
        self.draft: str | None = None
        """The script's message put in the chat box (person mode), while it is there."""
        self.from_draft = False
        """Whether the text in the chat box started from `draft` (never emptied since)."""
        self.takeover = TakeOver(
            self, lambda: self.frame_view, lambda: self.session, self.update_status
        )

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="live-main"):
            with Vertical(id="live-left"):
                yield Static("", id="live-status")
                yield make_frame_view(self.lab.graphics, id="live-frame")
            with Vertical(id="live-right"):
                yield Static("", id="live-instruction")
                yield Static("", id="live-phases")
                yield DataTable(id="live-steps", cursor_type="row", zebra_stripes=True)
        with Vertical(id="live-chat"):
            yield RichLog(id="live-log", wrap=True, markup=False)
            with Horizontal(id="chat-row"):
                yield Select(INJECT_KINDS, value="clarification", allow_blank=False, id="chat-kind")
                # A text area, not a one-line input: a phase's message may have several
                # lines. Nothing is selected on focus: `c` puts the cursor after the
                # script's draft, ready to edit it; a first letter typed never wipes it.
                yield ChatBox(id="chat-input")
        yield LabFooter()

    @property
    def frame_view(self) -> FrameView:
        return self.query_one("#live-frame", FrameView)

    # -- take-over (app.ui.takeover): the bindings and events it needs ------------------

    @property
    def passthrough(self) -> bool:
        return self.takeover.passthrough

    def on_frame_view_pointer(self, event: FrameView.Pointer) -> None:
        self.takeover.act(event.action)

    def on_key(self, event: events.Key) -> None:
        if self.takeover.key(event):
            event.stop()
            event.prevent_default()

    def action_passthrough(self) -> None:
        self.takeover.toggle_passthrough()

    def action_zoom(self, steps: int) -> None:
        self.takeover.zoom(steps)

    def action_pan(self, dx: float, dy: float) -> None:
        self.takeover.pan(dx, dy)

    def help_note(self) -> str:
        graphics = self.lab.graphics
        return (
            f"This terminal: the desktop is drawn with **{graphics.label}** "
            f"({graphics.reason}). `deskloop tui --graphics auto|kitty|sixel|halfblock` "
            "(or $DESKLOOP_GRAPHICS) chooses; auto asks the terminal at start."
        )

    def on_mount(self) -> None:
        # The header says how frames are drawn, so a fallback to half blocks is seen.
        self.sub_title = f"{self.lab.sub_title} · view: {self.lab.graphics.label}"
        table = self.query_one("#live-steps", DataTable)
        # Seconds the agent took to decide, to act, and for the screen to settle.
        table.add_columns("step", "action", "agent", "act", "settle", "note")
        self.set_interval(1.0, self.update_status)
        self.attach()

    def on_screen_resume(self) -> None:
        self.attach()

    def on_resize(self) -> None:
        # Below 40 rows the chat and the boxes on the right give up rows first.
        self.set_class(self.size.height < 40, "-short")
        # A RichLog keeps lines wrapped at the width they were written at: write the
        # conversation again at the new width, after the layout has settled; the step
        # log's actions are cut to the new width too.
        self.call_after_refresh(self._rewrite_log)
        self.call_after_refresh(self._rewrite_steps)

    def _rewrite_steps(self) -> None:
        table = self.query_one("#live-steps", DataTable)
        table.clear()
        if self.session is not None:
            for step in self.session.steps:
                self._add_step(step)

    def _rewrite_log(self) -> None:
        log = self.query_one("#live-log", RichLog)
        log.clear()
        if self.session is not None:
            for message in self.session.messages:
                self._log_message(message)
            if self.session.result is not None:
                self._log_end(self.session.result)

    def on_screen_suspend(self) -> None:
        self.workers.cancel_group(self, "feed")

    # -- what is shown ------------------------------------------------------------

    def attach(self) -> None:
        """Show the app's current session (or watched desktop) from its full state."""
        app = self.lab
        session = app.session
        changed = session is not self.session
        if changed:
            if self.session is not None and self._listen in self.session.listeners:
                self.session.listeners.remove(self._listen)
            self.session = session
            if session is not None:
                session.listeners.append(self._listen)
            self.frame_view.clear()
        self._rewrite_steps()
        self._rewrite_log()
        if changed or session is None or session.ended:
            # Text typed while no episode ran is not the next episode's message.
            self._set_draft(None)
            self.query_one("#chat-input", ChatBox).value = ""
            if session is not None and session.waiting is not None:
                # The runner asked before this screen listened (a quick start): the
                # due phase's draft is offered all the same.
                self._set_draft(session.waiting.draft)
        self.update_all()
        self.workers.cancel_group(self, "feed")
        live = self.lab.live_desktop is not None or (session is not None and not session.ended)
        if live and self.fps > 0:
            self.feed()

    def _listen(self, event: RunnerEvent) -> None:
        self.post_message(self.RunnerUpdate(event))

    def _endpoint(self) -> VncEndpoint | None:
        app = self.lab
        if self.session is not None and not self.session.ended:
            return self.session.desktop.info().vnc
        if app.live_desktop is not None and app.live_desktop in app.pool.entries:
            return app.pool.entries[app.live_desktop].info().vnc
        if app.live_desktop is not None:
            # A VM made elsewhere: its address from the latest listing (a restore
            # moves it to a new port; the listing follows, see update_status).
            vm = app.vms.get(app.live_desktop)
            return vm.vnc if vm is not None else None
        return None

    @work(group="feed", exclusive=True, exit_on_error=False, description="live view")
    async def feed(self) -> None:
        """Redraw the desktop as it changes (cancelled while the screen is hidden)."""
        self.feed_started = time.monotonic()
        self.frames_received = 0
        view = self.frame_view
        async for at, pixels in frame_feed(self._endpoint, fps=self.fps):
            self.frames_received += 1
            self.frame_times.append(at)
            view.show(pixels)

    def update_all(self) -> None:
        self.update_status()
        self.update_instruction()
        self.update_phases()
        self.update_chat_prompt()

    def update_status(self) -> None:
        session = self.session
        status = self.query_one("#live-status", Static)
        app = self.lab
        if session is None:
            if app.live_desktop is not None and app.live_desktop not in app.pool.entries:
                app.refresh_vms()
                vm = app.vms.get(app.live_desktop)
                state = vm.state if vm is not None else "gone"
                status.update(f"watching libvirt desktop {app.live_desktop} ({state}, no episode)")
            elif app.live_desktop is not None:
                status.update(f"watching desktop {app.live_desktop} (no episode)")
            else:
                status.update("No episode is running. Start one from Tasks (t, then s).")
            return
        lines = status_lines(session, self.passthrough, self.frame_view.zoom)
        status.update(Group(*lines))

    def update_instruction(self) -> None:
        session = self.session
        text = session.active_instruction if session else ""
        widget = self.query_one("#live-instruction", Static)
        widget.border_title = "active instruction"
        widget.update(Text(flow(text)))

    def update_phases(self) -> None:
        session = self.session
        widget = self.query_one("#live-phases", Static)
        widget.border_title = "phases"
        if session is None or not session.phases:
            widget.update("no phases (a standard task)" if session else "")
            return
        lines = phase_lines(session)
        widget.update(Group(*lines))

    def update_chat_prompt(self) -> None:
        session = self.session
        chat = self.query_one("#live-chat")
        entry = self.query_one("#chat-input", ChatBox)
        waiting = session.waiting if session and session.person else None
        chat.border_title, entry.placeholder = chat_prompt(session, self.draft is not None)
        chat.set_class(waiting is not None, "waiting")
        entry.set_class(self.draft is not None and self.from_draft, "-draft")
        entry.border_title = "script's draft" if self.draft is not None and self.from_draft else ""

    def _set_draft(self, draft: str | None) -> None:
        """Offer the script's message (person mode) in the chat box; text the person
        has typed already is never replaced."""
        entry = self.query_one("#chat-input", ChatBox)
        if draft is not None and entry.value.strip():
            draft = None
        self.draft, self.from_draft = draft, draft is not None
        if draft is not None:
            # Its lines as written; a final newline is no line to show (sent as it
            # is in the script all the same: `message_text`).
            entry.value = draft.rstrip("\n")

    @on(TextArea.Changed, "#chat-input")
    def _chat_changed(self, event: TextArea.Changed) -> None:
        # Emptied: what comes next is the person's own words, not an edit of the draft.
        if not event.text_area.text:
            self.from_draft = False
            self.update_chat_prompt()

    def _add_step(self, step: StepLine) -> None:
        table = self.query_one("#live-steps", DataTable)
        note = (
            Text(step.error, "red") if step.error else ("person" if step.actor == "person" else "")
        )
        # Long actions (typed text) are cut, so the timing columns stay in view.
        description = step.description
        width = max(12, (table.size.width or 70) - TIMING_WIDTH)
        if len(description) > width:
            description = description[: width - 1] + "…"
        table.add_row(
            str(step.idx),
            description,
            f"{step.agent_seconds:.2f}",
            f"{step.act_seconds:.2f}",
            f"{step.settle_seconds:.2f}",
            note,
        )
        table.move_cursor(row=table.row_count - 1)

    def _log_message(self, message: ChatMessage) -> None:
        who = "agent" if message.role == "agent" else message.source
        color = {"agent": "cyan", "person": "green", "phase": "magenta"}.get(who, "white")
        line = Text(f"[{message_step(message.step, message.role)}] ", "dim")
        line.append(f"{who} {message.kind}: ", f"bold {color}")
        line.append(flow(message.text))
        self.query_one("#live-log", RichLog).write(line)

    def _log_end(self, result: EpisodeResult) -> None:
        """The episode's end in the conversation, where a long reason wraps."""
        line = Text(f"episode {result.episode_id} ended: ", "bold")
        if result.error:
            line.append(f"error: {result.error}", "red")
        else:
            line.append(
                describe_end(result.end_reason, result.passed, result.score),
                "green" if result.passed else "",
            )
        self.query_one("#live-log", RichLog).write(line)

    # -- runner events --------------------------------------------------------------

    def on_live_screen_runner_update(self, update: RunnerUpdate) -> None:
        event = update.event
        match event:
            case StepEvent(idx=idx):
                assert self.session is not None
                # This event's step, not the latest: steps may come faster than shown.
                self._add_step(next(s for s in reversed(self.session.steps) if s.idx == idx))
            case MessageEvent(message):
                self._log_message(message)
                self.update_instruction()
            case PhaseEvent():
                self.update_phases()
            case WaitingEvent():
                # The focus stays where it is: a key meant for the screen (`c`) must
                # never be typed into the answer. `c` puts the cursor in the box.
                self._set_draft(event.draft)
                what = event.what
                if what == "review" and event.phase is not None:
                    what = "phase"  # the DONE delivers the phase: nothing to accept yet
                self.notify(
                    {
                        "answer": "The agent asks a question: c to answer.",
                        "review": "The agent says DONE: accept (F3), or c and feedback.",
                        "phase": "A phase is due: c, then send, edit or replace its message.",
                    }[what],
                    timeout=4,
                )
            case EndedEvent(result):
                if self.draft is not None and self.from_draft:
                    # The script's draft was for this episode only.
                    self.query_one("#chat-input", ChatBox).value = ""
                self._set_draft(None)
                self._log_end(result)
                self.notify(
                    f"Episode {result.episode_id} ended.",
                    severity="error" if result.error else "information",
                    timeout=5,
                )
            case StatusEvent():
                pass
        self.update_status()
        self.update_chat_prompt()
        if isinstance(event, WaitingEvent | EndedEvent):
            self.update_phases()  # a phase due for the person is marked while it waits

    # -- the person's actions -------------------------------------------------------

    @on(ChatBox.Submitted, "#chat-input")
    def send(self, event: ChatBox.Submitted) -> None:
        session = self.session
        waiting = session.waiting if session is not None else None
        text = message_text(event.value, waiting.draft if waiting is not None else None)
        if not text:
            return
        if session is None or session.ended:
            # Not kept for the next episode: it was written for none.
            event.chat_box.value = ""
            self.notify("No episode is running: nothing was sent.", severity="warning")
            return
        kind = self.query_one("#chat-kind", Select).value
        try:
            said = session.send(
                text,
                kind if isinstance(kind, str) else "clarification",  # type: ignore[arg-type]
                from_draft=self.from_draft,
            )
        except ValueError as exc:
            self.notify(str(exc), severity="error")
            return
        event.chat_box.value = ""
        self._set_draft(None)
        # The cursor leaves the box with the message: the `c` the border asks for
        # next is the screen's key, never a letter typed into the next answer.
        self.action_unfocus()
        self.notify(said, timeout=3)
        self.update_chat_prompt()
        self.update_phases()

    def action_accept(self) -> None:
        session = self.session
        if session is None:
            return
        try:
            session.accept()
        except PhaseDue:
            # Said plainly, with the keys: F3 at a DONE with a phase due used to end
            # the episode with the phase never delivered, without a word.
            due = session.waiting.phase if session.waiting is not None else None
            number = f"Phase {due + 1}" if due is not None else "A phase"
            where = "is in the chat box" if self.draft is not None else "is in the phases box"
            self.notify(
                f"{number} is due, so the result is not accepted: the agent's DONE "
                f"delivers it. Its message {where}: c, then enter sends it (or edit it, "
                "or write your own); F4 aborts the episode.",
                severity="warning",
                timeout=8,
            )
            return
        except ValueError as exc:
            self.notify(str(exc), severity="warning")
            return
        self.notify("Result accepted: scoring.", timeout=3)
        self.update_chat_prompt()

    def action_pause(self) -> None:
        if self.session is None or self.session.ended:
            return
        paused = self.session.toggle_pause()
        self.notify("Paused after the current step." if paused else "Resumed.", timeout=3)
        self.update_status()

    def action_abort(self) -> None:
        session = self.session
        if session is None or session.ended or isinstance(self.app.screen, ConfirmScreen):
            return

        def answered(yes: bool | None) -> None:
            if yes and not session.ended:
                session.control.abort()
                self.notify("Aborting the episode…", severity="warning", timeout=3)

        self.app.push_screen(
            ConfirmScreen(
                "Abort the episode?",
                f"The episode of {session.task.id} ends now, recorded as aborted and not scored.",
                "Abort",
            ),
            answered,
        )

    def action_chat(self) -> None:
        entry = self.query_one("#chat-input", ChatBox)
        entry.focus()
        entry.move_cursor(entry.document.end)

    def action_unfocus(self) -> None:
        self.query_one("#live-steps", DataTable).focus()
