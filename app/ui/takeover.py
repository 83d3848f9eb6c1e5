"""Taking over from the live view: the terminal's keys as GUI actions for the desktop.

The mouse is mapped by the frame view itself (`FrameView.Pointer`, in desktop pixels);
this module turns a Textual key event into the protocol's `Type` or `Key` action while
key passthrough is on. Both go to the desktop through the episode's recording proxy
(`EpisodeSession.person_input`, app.rfb.person), in the order they were made, and are
recorded there as the person's steps: typed keys merge into one `type` step, as a
viewer's do.
"""

from __future__ import annotations

from collections.abc import Callable

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


class TakeOver:
    """The live screen's take-over: the person's mouse on the frame view and, with
    passthrough on, their keys, sent to the running episode's desktop as their steps;
    zoom and pan of the view. The screen owns one and hands it its pointer events,
    keys and the actions its bindings name; `view` and `session` give the current
    frame view and episode, `changed` redraws the status line."""

    def __init__(
        self,
        screen: Screen[None],
        view: Callable[[], FrameView],
        session: Callable[[], EpisodeSession | None],
        changed: Callable[[], None],
    ) -> None:
        self._screen = screen
        self._view = view
        self._session = session
        self._changed = changed
        self.passthrough = False
        """Key passthrough (F6): every key but F6 goes to the desktop as the person's."""

    def act(self, action: GuiAction) -> bool:
        """Send one of the person's actions to the episode's desktop; whether it went."""
        session = self._session()
        if session is None or session.ended:
            self._screen.notify("No episode runs: nothing to take over.", severity="warning")
            return False
        person_input = session.person_input
        if person_input is not None and person_input.on_error is None:
            person_input.on_error = self._input_failed
        try:
            session.take_over(action)
        except AgentError as exc:
            self._screen.notify(str(exc), severity="warning")
            return False
        return True

    def _input_failed(self, error: str) -> None:
        self._screen.notify(f"Not sent to the desktop: {error}", severity="error")

    def toggle_passthrough(self) -> None:
        self.passthrough = not self.passthrough
        if self.passthrough:
            # Keys must reach the screen, not the chat box.
            self._screen.set_focus(None)
        self._screen.set_class(self.passthrough, "-passthrough")
        self._changed()

    def key(self, event: events.Key) -> bool:
        """Take `event` for the desktop while passthrough is on; whether it was taken
        (the screen then stops it)."""
        if not self.passthrough or event.key == PASSTHROUGH_KEY:
            return False
        action = key_action(event)
        if action is None:
            self._screen.notify(f"{event.key} has no name on the desktop's side: not sent.")
        else:
            self.act(action)
        return True

    def zoom(self, steps: int) -> None:
        self._view().zoom_by(steps)
        self._changed()

    def pan(self, dx: float, dy: float) -> None:
        self._view().pan(dx, dy)
