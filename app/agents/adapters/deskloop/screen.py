"""The way back from the pixels of the screenshot the model saw to the screen's: the
`pixels` coordinate contract (`app.agents.adapters.coords`), the one every family
that writes pixels uses."""

from __future__ import annotations

from app.agents.adapters.coords import CoordinateContract
from app.core.actions import Action, Click, Drag, Move, Scroll


def pixels_contract(screen: tuple[int, int], box: tuple[int, int]) -> CoordinateContract:
    """The screenshot fitted to `box` (aspect kept, never enlarged), and its pixels."""
    return CoordinateContract.make("pixels", screen, box)


def on_screen(contract: CoordinateContract, action: Action) -> Action:
    """`action` with its points moved from the screenshot's pixels to the screen's.

    Raises:
        ActionError: a point outside the screenshot.
    """
    match action:
        case Click(x, y, button, count):
            return Click(*contract.to_screen(x, y, "click"), button, count)
        case Move(x, y):
            return Move(*contract.to_screen(x, y, "move"))
        case Scroll(x, y, dy):
            return Scroll(*contract.to_screen(x, y, "scroll"), dy)
        case Drag(x1, y1, x2, y2, button):
            start = contract.to_screen(x1, y1, "drag start")
            return Drag(*start, *contract.to_screen(x2, y2, "drag end"), button)
    return action
