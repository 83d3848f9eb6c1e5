"""The screenshot the model sees, and the way back from its pixels to the screen's."""

from __future__ import annotations

from dataclasses import dataclass

from app.core.actions import Action, Click, Drag, Move, Scroll
from app.core.errors import ActionError


def fit_size(width: int, height: int, max_width: int, max_height: int) -> tuple[int, int]:
    """The largest size within the box with the screen's aspect; never larger than it."""
    scale = min(1.0, max_width / width, max_height / height)
    return max(1, round(width * scale)), max(1, round(height * scale))


@dataclass(frozen=True)
class Scaler:
    """Maps points of the screenshot sent to points of the real screen."""

    sent: tuple[int, int]
    screen: tuple[int, int]

    def point(self, x: int, y: int, what: str) -> tuple[int, int]:
        sent_w, sent_h = self.sent
        if not (0 <= x < sent_w and 0 <= y < sent_h):
            raise ActionError(f"{what} ({x}, {y}) is outside the {sent_w}x{sent_h} screenshot")
        screen_w, screen_h = self.screen
        real_x = min(screen_w - 1, int((x + 0.5) * screen_w / sent_w))
        real_y = min(screen_h - 1, int((y + 0.5) * screen_h / sent_h))
        return real_x, real_y

    def action(self, action: Action) -> Action:
        match action:
            case Click(x, y, button, count):
                return Click(*self.point(x, y, "click"), button, count)
            case Move(x, y):
                return Move(*self.point(x, y, "move"))
            case Scroll(x, y, dy):
                return Scroll(*self.point(x, y, "scroll"), dy)
            case Drag(x1, y1, x2, y2, button):
                return Drag(
                    *self.point(x1, y1, "drag start"), *self.point(x2, y2, "drag end"), button
                )
        return action
