"""Replay one episode: scrub frames with each step's action drawn on them, the
messages in place on the timeline, and the checks with their evidence."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.timer import Timer
from textual.widgets import DataTable, Header, Static

from app.core.conversation import describe_origin, message_step
from app.core.integrity import IntegrityFlag
from app.core.outcomes import CheckOutcome
from app.store import EpisodeRecord, MessageRecord, StepRecord
from app.ui.describe import flow
from app.ui.halfblock import HalfBlockView, Pixels, mark_point
from app.ui.screens.base import LabFooter, LabScreen

POINT_KINDS = ("click", "move", "scroll", "drag")
SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
"""Playback speeds: steps a second (one step a second at 1×)."""


def timeline(
    steps: list[StepRecord], messages: list[MessageRecord]
) -> list[tuple[str, StepRecord | MessageRecord | None]]:
    """Steps and messages in order: a message recorded at step count s arrived after
    step s-1 and before step s. ('final', None) closes the list."""
    rows: list[tuple[str, StepRecord | MessageRecord | None]] = []
    pending = sorted(messages, key=lambda m: m.idx)
    for step in steps:
        while pending and pending[0].step <= step.idx:
            message = pending.pop(0)
            rows.append((f"m{message.id}", message))
        rows.append((f"s{step.idx}", step))
    rows += [(f"m{m.id}", m) for m in pending]
    rows.append(("final", None))
    return rows


def action_point(action: dict[str, Any]) -> tuple[int, int] | None:
    kind = action.get("kind")
    if kind in ("click", "move", "scroll"):
        return int(action["x"]), int(action["y"])
    if kind == "drag":
        return int(action["x1"]), int(action["y1"])
    return None


def action_caption(step: StepRecord) -> str:
    action = step.action
    kind = action.get("kind")
    if kind == "type":
        return f"types: {action.get('text', '')!r}"
    if kind == "key":
        return f"presses: {action.get('combo', '')}"
    if kind == "drag":
        return f"drags ({action['x1']}, {action['y1']}) → ({action['x2']}, {action['y2']})"
    point = action_point(action)
    if point is not None:
        return f"{kind} at {point} (red cross)"
    return step.description


def load_frame(path: str) -> Pixels:
    from PIL import Image

    with Image.open(path) as image:
        return np.asarray(image.convert("RGB"))


class ReplayScreen(LabScreen):
    TITLE = "Replay"
    HELP = """\
One recorded episode.

- The timeline (right) lists the steps and, in place, every message: the
  instruction, phases, the agent's questions, your answers, clarifications,
  interruptions and feedback, each at the step it arrived.
- **↑/↓** or **←/→** scrub: the left pane shows the screen the agent saw before
  that step, with its action drawn on it (a red cross where it clicks, scrolls
  or starts a drag; typed text and keys in the caption).
- **home/end** first step / final state.
- **space** plays the steps one after another (from the first again once at
  the final state) and pauses; **]** / **[** faster / slower (¼× to 8×, one
  step a second at 1×); ←/→ still step while it plays.
- Below the timeline: the checks that scored the episode, with their evidence.
- **n** the episode's note and tags (shown under its head).
- **esc** back to the episode list.
"""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("left", "scrub(-1)", "Prev step", priority=True),
        Binding("right", "scrub(1)", "Next step", priority=True),
        Binding("home", "jump(0)", "First", show=False, priority=True),
        Binding("end", "jump(-1)", "Final", show=False, priority=True),
        Binding("n", "notes", "Note", show=False),
        Binding("space", "play", "Play/pause", show=False, priority=True),
        Binding("right_square_bracket", "speed(1)", "Faster", show=False),
        Binding("left_square_bracket", "speed(-1)", "Slower", show=False),
    ]

    def __init__(self, episode_id: int) -> None:
        super().__init__()
        self.episode_id = episode_id
        self.flags: tuple[IntegrityFlag, ...] = ()
        self.episode: EpisodeRecord | None = None
        self.rows: list[tuple[str, StepRecord | MessageRecord | None]] = []
        self.checks: list[CheckOutcome] = []
        self.shown_key: str | None = None
        self.speed = SPEEDS.index(1.0)
        """Index in SPEEDS."""
        self.player: Timer | None = None
        """The playback's timer while it plays."""

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal():
            with Vertical(id="replay-left"):
                yield Static("", id="replay-head")
                yield HalfBlockView(id="replay-frame")
                # Scrolls: a long message is shown whole, never cut.
                with VerticalScroll(id="replay-caption-box"):
                    yield Static("", id="replay-caption")
            with Vertical(id="replay-right"):
                yield DataTable(id="replay-timeline", cursor_type="row")
                yield DataTable(id="replay-checks", cursor_type="row")
        yield LabFooter()

    def on_mount(self) -> None:
        self.query_one("#replay-caption", Static).update("reading the episode…")
        self._read()

    @work(thread=True, exclusive=True, group="replay-read", exit_on_error=False,
          description="reading the episode")  # fmt: skip
    def _read(self) -> None:
        """Read the episode in a thread: the store is never read on the UI's loop."""
        store = self.lab.store
        episode = store.get_episode(self.episode_id)
        rows = timeline(store.steps(self.episode_id), store.messages(self.episode_id))
        checks = store.checks(self.episode_id)
        flags, _ = store.flags(self.episode_id)
        self.app.call_from_thread(self._fill, episode, rows, checks, flags)

    def _fill(
        self,
        episode: EpisodeRecord,
        rows: list[tuple[str, StepRecord | MessageRecord | None]],
        checks_: list[CheckOutcome],
        flags: Sequence[IntegrityFlag] = (),
    ) -> None:
        self.episode, self.rows, self.checks = episode, rows, checks_
        self.flags = tuple(flags)
        self.show_head(episode)
        self.fill_tables()

    def show_head(self, e: EpisodeRecord) -> None:
        score = "unscored" if e.score is None else f"score {e.score:.2f}"
        verdict = "" if e.passed is None else (" · passed" if e.passed else " · not passed")
        head = Text.from_markup(
            f"[b]episode {e.id}[/b] · {e.task_id} · agent {e.agent} · user {e.user_mode} · "
            f"{e.status} ({e.end_reason or '—'}) · {score}{verdict}"
        )
        if e.error:
            head.append(f"\n{e.error}", "red")
        if e.final_windows is not None:
            # One line: the head grows to six lines, then scrolls.
            windows = "; ".join(w.describe() for w in e.final_windows.windows) or "none"
            head.append(f"\nwindows open at the end: {windows}", "dim")
        if self.flags:
            # Integrity flags: beside the score, never changing it.
            head.append("\nflagged: " + "; ".join(f.summary for f in self.flags), "yellow")
        if e.tags or e.note:
            tags = " ".join(f"#{t}" for t in e.tags)
            head.append(f"\n{tags}{' · ' if tags and e.note else ''}{flow(e.note)}", "italic")
        self.query_one("#replay-head", Static).update(head)

    def fill_tables(self) -> None:
        table = self.query_one("#replay-timeline", DataTable)
        self.show_playback()
        table.add_columns("step", "s", "what")
        for key, item in self.rows:
            if isinstance(item, StepRecord):
                total = item.agent_seconds + item.act_seconds + item.settle_seconds
                what = Text(item.description)
                if item.actor == "person":
                    # A take-over: the person acted, not the agent (steps.actor).
                    what = Text("person: ", "bold green") + what
                if item.error:
                    what.append(f" — {item.error}", "red")
                table.add_row(str(item.idx), f"{total:.1f}", what, key=key)
            elif isinstance(item, MessageRecord):
                who = "agent" if item.role == "agent" else item.source
                color = {"agent": "cyan", "person": "green", "phase": "magenta"}.get(who, "white")
                text = Text(f"{who} {item.kind}: ", f"bold {color}")
                text.append(flow(item.text))
                table.add_row(Text("✉", color), "", text, key=key)
            else:
                table.add_row("end", "", Text("final state", "bold"), key=key)
        checks = self.query_one("#replay-checks", DataTable)
        checks.border_title = "checks"
        checks.add_columns("", "score", "check", "evidence")
        for c in self.checks:
            mark = Text("PASS", "green") if c.passed else Text("FAIL", "red")
            name = c.name if c.phase is None else f"{c.name} (phase {c.phase + 1})"
            checks.add_row(mark, f"{c.score:.2f}", name, c.evidence)
        if not self.checks:
            checks.add_row("", "", Text("not scored", "dim"), "")
        table.focus()
        self.show_row(0)

    @on(DataTable.RowHighlighted, "#replay-checks")
    def check_highlighted(self, event: DataTable.RowHighlighted) -> None:
        # Only a check the person moved to: filling the table highlights its first
        # row too, which must not replace the timeline's caption.
        if event.data_table.has_focus and 0 <= event.cursor_row < len(self.checks):
            c = self.checks[event.cursor_row]
            verdict = "passed" if c.passed else "failed"
            self.query_one("#replay-caption", Static).update(
                Text(f"{c.name} ({c.path}) {verdict}, score {c.score:.2f}: {c.evidence}")
            )
            self.shown_key = None

    @on(DataTable.RowHighlighted, "#replay-timeline")
    def highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.show_row(event.cursor_row)

    def show_row(self, index: int) -> None:
        if not self.rows:
            return
        index = max(0, min(index, len(self.rows) - 1))
        key, item = self.rows[index]
        if key == self.shown_key:
            return
        self.shown_key = key
        caption = self.query_one("#replay-caption", Static)
        step = self._step_for(index)
        assert self.episode is not None
        if isinstance(item, MessageRecord):
            who = "agent" if item.role == "agent" else item.source
            where = message_step(item.step, item.role)
            text = Text(f"{who} {item.kind} ({where}): {flow(item.text)}")
            if item.origin is not None:
                text.append(f"\n{describe_origin(item.origin, item.scripted)}", "dim")
            caption.update(text)
        elif item is None:
            caption.update("final state of the desktop (what the checks scored)")
        if step is not None and item is step:
            by = "the person (take-over)" if step.actor == "person" else "the agent"
            caption.update(Text(f"step {step.idx}, by {by}: {action_caption(step)}"))
        frame = step.frame if step is not None else self.episode.final_frame
        point = action_point(step.action) if step is not None and item is step else None
        if frame is None:
            self.query_one(HalfBlockView).clear()
            return
        view = self.query_one(HalfBlockView)
        self.load(frame, point, max(1, view.size.width))

    def _step_for(self, index: int) -> StepRecord | None:
        """The step at `index`, or for a message the next step after it (None: final)."""
        for _key, item in self.rows[index:]:
            if isinstance(item, StepRecord):
                return item
            if item is None:
                return None
        return None

    @work(
        exclusive=True,
        group="replay-frame",
        thread=True,
        exit_on_error=False,
        description="loading a frame",
    )
    def load(self, frame: str, point: tuple[int, int] | None, columns: int) -> None:
        pixels = load_frame(str(self.lab.store.frame_path(frame)))
        if point is not None:
            # Pixels per terminal column: the cross must stay visible after sampling.
            scale = max(1, -(-pixels.shape[1] // columns))
            pixels = mark_point(pixels, point[0], point[1], radius=4 * scale, thick=scale)
        self.app.call_from_thread(self.query_one(HalfBlockView).show, pixels)

    def action_scrub(self, delta: int) -> None:
        table = self.query_one("#replay-timeline", DataTable)
        row = table.cursor_row + delta
        while 0 <= row < len(self.rows) and isinstance(self.rows[row][1], MessageRecord):
            row += delta
        table.move_cursor(row=max(0, min(row, len(self.rows) - 1)))

    def action_notes(self) -> None:
        from app.ui.screens.notes import edit_notes

        if self.episode is None:
            return

        def saved(stored: EpisodeRecord) -> None:
            self.episode = stored
            self.show_head(stored)

        edit_notes(self, self.episode, saved)

    @property
    def playing(self) -> bool:
        return self.player is not None

    def show_playback(self) -> None:
        table = self.query_one("#replay-timeline", DataTable)
        speed = f"{SPEEDS[self.speed]:g}×"
        table.border_title = f"timeline · ▶ {speed}" if self.playing else "timeline"
        if not self.playing and self.speed != SPEEDS.index(1.0):
            table.border_title += f" · {speed}"

    def action_play(self) -> None:
        if self.player is not None:
            self.pause()
            return
        if not self.rows:
            return
        table = self.query_one("#replay-timeline", DataTable)
        if table.cursor_row >= len(self.rows) - 1:
            table.move_cursor(row=0)  # played to the end before: from the start again
        self.player = self.set_interval(1.0 / SPEEDS[self.speed], self._tick)
        self.show_playback()

    def pause(self) -> None:
        if self.player is not None:
            self.player.stop()
            self.player = None
        self.show_playback()

    def _tick(self) -> None:
        table = self.query_one("#replay-timeline", DataTable)
        self.action_scrub(1)
        if table.cursor_row >= len(self.rows) - 1:
            self.pause()  # the final state: stop there

    def action_speed(self, delta: int) -> None:
        self.speed = max(0, min(len(SPEEDS) - 1, self.speed + delta))
        if self.player is not None:  # the new pace at once
            self.player.stop()
            self.player = self.set_interval(1.0 / SPEEDS[self.speed], self._tick)
        self.show_playback()

    def action_jump(self, where: int) -> None:
        table = self.query_one("#replay-timeline", DataTable)
        table.move_cursor(row=0 if where == 0 else len(self.rows) - 1)
