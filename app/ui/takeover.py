"""Taking over from the live view: the terminal's keys as GUI actions for the desktop.

The mouse is mapped by the frame view itself (`FrameView.Pointer`, in desktop pixels);
this module turns a Textual key event into the protocol's `Type` or `Key` action while
key passthrough is on. Both go to the desktop through the episode's recording proxy
(`EpisodeSession.person_input`, app.rfb.person), in the order they were made, and are
recorded there as the person's steps: typed keys merge into one `type` step, as a
viewer's do.
"""

from __future__ import annotations

from textual import events
from textual.screen import Screen

from app.core.actions import GuiAction, Key, Type
from app.core.errors import ActionError, AgentError
from app.core.keys import parse_combo
from app.core.vocabulary import StepActor
from app.ui.halfblock import FrameView
from app.ui.services.episode import EpisodeSession

PASSTHROUGH_KEY = "f6"
"""Toggles key passthrough; the one key that passthrough never sends."""

# Textual's names where the protocol's differ.
_NAMES = {"page_up": "pageup", "page_down": "pagedown"}


def key_action(event: events.Key) -> GuiAction | None:
    """The action that sends `event` to the desktop, or None for a key the protocol
    cannot name (it is then dropped, and said so by the caller)."""
    modified = event.key.startswith(("ctrl+", "alt+", "meta+", "super+"))
    if event.is_printable and event.character and not modified:
        return Type(event.character)
    combo = "+".join(_NAMES.get(part, part) for part in event.key.split("+"))
    try:
        parse_combo(combo)
    except ActionError:
        return None
    return Key(combo)


def step_note(actor: StepActor) -> str:
    """The step log's note for a step no error marks: who acted, when not the agent."""
    return "person" if actor == "person" else ""


class TakeOverMixin(Screen[None]):
    """The live screen's take-over: the person's mouse on the frame view and, with
    passthrough on, their keys, sent to the running episode's desktop as their steps;
    zoom and pan of the view. The screen provides `session`, `frame_view` and
    `update_status`; its bindings name the actions here."""

    session: EpisodeSession | None
    passthrough: bool = False
    """Key passthrough (F6): every key but F6 goes to the desktop as the person's."""

    @property
    def frame_view(self) -> FrameView:
        raise NotImplementedError

    def update_status(self) -> None:
        raise NotImplementedError

    def _take_over(self, action: GuiAction) -> bool:
        session = self.session
        if session is None or session.ended:
            self.notify("No episode runs: nothing to take over.", severity="warning")
            return False
        person_input = session.person_input
        if person_input is not None and person_input.on_error is None:
            person_input.on_error = self._input_failed
        try:
            session.take_over(action)
        except AgentError as exc:
            self.notify(str(exc), severity="warning")
            return False
        return True

    def _input_failed(self, error: str) -> None:
        self.notify(f"Not sent to the desktop: {error}", severity="error")

    def on_frame_view_pointer(self, event: FrameView.Pointer) -> None:
        self._take_over(event.action)

    def action_passthrough(self) -> None:
        self.passthrough = not self.passthrough
        if self.passthrough:
            # Keys must reach the screen, not the chat box.
            self.set_focus(None)
        self.set_class(self.passthrough, "-passthrough")
        self.update_status()

    def on_key(self, event: events.Key) -> None:
        if not self.passthrough or event.key == PASSTHROUGH_KEY:
            return
        event.stop()
        event.prevent_default()
        action = key_action(event)
        if action is None:
            self.notify(f"{event.key} has no name on the desktop's side: not sent.")
            return
        self._take_over(action)

    def action_zoom(self, steps: int) -> None:
        self.frame_view.zoom_by(steps)
        self.update_status()

    def action_pan(self, dx: float, dy: float) -> None:
        self.frame_view.pan(dx, dy)
