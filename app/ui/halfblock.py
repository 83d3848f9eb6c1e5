"""Desktop frames drawn with half blocks: each terminal cell shows two pixels.

'▀' with the foreground colour as the upper pixel and the background colour as the
lower one works in every true-colour terminal, tmux included (kitty and sixel do
not pass through tmux; FIELD_NOTES). Speed comes from three things: the frame is
sampled down to the widget's size with numpy before anything else, runs of equal
cells become one segment, and only the rows that changed since the last frame are
rebuilt and repainted.
"""

from __future__ import annotations

import itertools

import numpy as np
import numpy.typing as npt
from rich.color import Color
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.geometry import Region, Size
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from app.core.actions import Button, Click, Drag, GuiAction, Scroll

Pixels = npt.NDArray[np.uint8]
UPPER_HALF = "▀"


def fit(width: int, height: int, cols: int, rows: int) -> tuple[int, int]:
    """The largest cols × (2·rows) pixel grid with the frame's aspect ratio."""
    if width <= 0 or height <= 0 or cols <= 0 or rows <= 0:
        return 0, 0
    scale = min(cols / width, (2 * rows) / height)
    out_w = max(1, min(cols, round(width * scale)))
    out_h = max(2, min(2 * rows, round(height * scale)))
    return out_w, out_h + (out_h % 2)


def sample(pixels: Pixels, out_w: int, out_h: int) -> Pixels:
    """Nearest-neighbour sample of an H×W×3 frame to out_h × out_w × 3."""
    height, width = pixels.shape[:2]
    ys = (np.arange(out_h) * height // out_h).clip(0, height - 1)
    xs = (np.arange(out_w) * width // out_w).clip(0, width - 1)
    result: Pixels = pixels[ys[:, None], xs[None, :], :3]
    return result


def cell_codes(small: Pixels) -> npt.NDArray[np.int64]:
    """One int per cell: upper pixel's RGB in the high 24 bits, lower's in the low 24."""
    rgb = small.astype(np.int64)
    packed = (rgb[:, :, 0] << 16) | (rgb[:, :, 1] << 8) | rgb[:, :, 2]
    codes: npt.NDArray[np.int64] = (packed[0::2] << 24) | packed[1::2]
    return codes


ZOOMS = (1, 2, 4, 8)
"""The live view's magnifications: at 8 a 1280-wide desktop's GIMP text is legible in
half blocks on a 160-column terminal (each cell two desktop pixels wide or fewer)."""

BUTTONS: dict[int, Button] = {1: "left", 2: "middle", 3: "right"}


class FrameView(Widget):
    """A widget showing desktop frames: half blocks here, kitty or sixel graphics in
    app.ui.graphics. `show()` the latest frame, `clear()` to show none.

    A view that can map its cells to desktop pixels (`desktop_point`) turns the
    terminal's mouse into GUI actions on the desktop: a press and release on one cell
    is a click, on another a drag, the wheel a scroll; each is posted as `Pointer` for
    the screen to send (take-over). Zoom and pan (`zoom_by`, `pan`) show part of the
    desktop magnified.
    """

    class Pointer(Message):
        """The person's mouse, as a GUI action in desktop pixels."""

        def __init__(self, action: GuiAction) -> None:
            super().__init__()
            self.action = action

    DEFAULT_CSS = """
    FrameView { width: 1fr; height: 1fr; }
    """

    def __init__(self, *, name: str | None = None, id: str | None = None) -> None:
        super().__init__(name=name, id=id)
        self._pixels: Pixels | None = None
        """The latest frame given to `show()`, until `clear()`."""
        self.frames_shown = 0
        """Frames drawn (for the benchmark)."""
        self.rows_painted = 0
        """Terminal rows redrawn for them, in all."""
        self.zoom = 1
        """Magnification (one of ZOOMS); 1 shows the whole desktop."""
        self.centre = (0.5, 0.5)
        """The shown part's centre, as fractions of the desktop's width and height."""
        self._pressed: tuple[int, int, Button] | None = None

    @property
    def has_frame(self) -> bool:
        return self._pixels is not None

    def show(self, pixels: Pixels) -> int:
        """Display `pixels` (H×W×3 RGB); returns how many terminal rows will change."""
        raise NotImplementedError

    def clear(self) -> None:
        raise NotImplementedError

    def desktop_point(self, col: int, row: int) -> tuple[int, int] | None:
        """The desktop pixel under cell (col, row) of the view; None off the picture
        or where this view cannot tell (graphics protocols)."""
        return None

    def shown_part(self) -> tuple[Pixels, int, int] | None:
        """The part of the latest frame shown at this zoom, and its top-left pixel."""
        pixels = self._pixels
        if pixels is None:
            return None
        height, width = pixels.shape[:2]
        if self.zoom <= 1:
            return pixels, 0, 0
        w, h = max(1, width // self.zoom), max(1, height // self.zoom)
        cx, cy = self.centre
        x0 = int(min(max(0, round(cx * width - w / 2)), width - w))
        y0 = int(min(max(0, round(cy * height - h / 2)), height - h))
        return pixels[y0 : y0 + h, x0 : x0 + w], x0, y0

    def zoom_by(self, steps: int, at: tuple[int, int] | None = None) -> None:
        """Zoom in (steps > 0) or out through ZOOMS; centred on desktop pixel `at`
        when given, else where it is."""
        index = ZOOMS.index(self.zoom) if self.zoom in ZOOMS else 0
        self.zoom = ZOOMS[max(0, min(len(ZOOMS) - 1, index + steps))]
        if at is not None and self._pixels is not None:
            height, width = self._pixels.shape[:2]
            self.centre = (at[0] / width, at[1] / height)
        if self.zoom == 1:
            self.centre = (0.5, 0.5)
        self._redraw()

    def pan(self, dx: float, dy: float) -> None:
        """Move the shown part by fractions of its own width and height."""
        if self.zoom == 1:
            return
        cx, cy = self.centre
        half = 0.5 / self.zoom
        self.centre = (
            min(1 - half, max(half, cx + dx / self.zoom)),
            min(1 - half, max(half, cy + dy / self.zoom)),
        )
        self._redraw()

    def _redraw(self) -> None:
        """Draw the latest frame again (after a zoom or pan)."""

    def on_mouse_down(self, event: events.MouseDown) -> None:
        point = self.desktop_point(event.x, event.y)
        button = BUTTONS.get(event.button)
        if point is None or button is None:
            return
        self._pressed = (point[0], point[1], button)
        self.capture_mouse()
        event.stop()

    def on_mouse_up(self, event: events.MouseUp) -> None:
        pressed, self._pressed = self._pressed, None
        if pressed is None:
            return
        self.release_mouse()
        event.stop()
        x1, y1, button = pressed
        point = self.desktop_point(event.x, event.y) or (x1, y1)
        action: GuiAction
        if point == (x1, y1):
            action = Click(x1, y1, button)
        else:
            action = Drag(x1, y1, point[0], point[1], button)
        self.post_message(self.Pointer(action))

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        self._wheel(event, 1)

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        self._wheel(event, -1)

    def _wheel(self, event: events.MouseScrollDown | events.MouseScrollUp, dy: int) -> None:
        point = self.desktop_point(event.x, event.y)
        if point is not None:
            event.stop()
            self.post_message(self.Pointer(Scroll(point[0], point[1], dy)))

    def _rows(self, strips: list[Strip], crop: Region) -> list[Strip]:
        """The rows in `crop` of `strips` (one per row of the view, from the top),
        blank below the last."""
        blank = Strip.blank(self.size.width, self.rich_style)
        return [
            (strips[y] if y < len(strips) else blank).crop(crop.x, crop.right)
            for y in range(crop.y, crop.bottom)
        ]


class HalfBlockView(FrameView):
    """Shows the latest frame given to `show()`, scaled to fit and centred."""

    def __init__(self, *, name: str | None = None, id: str | None = None) -> None:
        super().__init__(name=name, id=id)
        self._codes: npt.NDArray[np.int64] | None = None
        self._strips: list[Strip] = []
        self._pad = 0
        self._styles: dict[int, Style] = {}
        self._shown: tuple[int, int, int, int, int, int] | None = None
        """What the cells show: (x0, y0, width, height) of the desktop part, and the
        sampled grid's (out_w, out_h)."""

    def show(self, pixels: Pixels) -> int:
        """Display `pixels`; returns how many terminal rows changed."""
        self._pixels = pixels
        return self._rebuild(force=False)

    def clear(self) -> None:
        self._pixels = self._codes = None
        self._shown = None
        self._strips = []
        self.refresh()

    def on_resize(self) -> None:
        self._rebuild(force=True)

    def _redraw(self) -> None:
        self._rebuild(force=True)

    def desktop_point(self, col: int, row: int) -> tuple[int, int] | None:
        if self._shown is None:
            return None
        x0, y0, width, height, out_w, out_h = self._shown
        col -= self._pad
        if not (0 <= col < out_w and 0 <= row < out_h // 2):
            return None
        # The cell's centre: its column's middle, the line between its two half pixels.
        x = x0 + min(width - 1, int((col + 0.5) * width / out_w))
        y = y0 + min(height - 1, int((2 * row + 1) * height / out_h))
        return x, y

    def _rebuild(self, *, force: bool) -> int:
        size = self.size
        shown = self.shown_part()
        if shown is None or size.width == 0 or size.height == 0:
            return 0
        pixels, x0, y0 = shown
        height, width = pixels.shape[:2]
        out_w, out_h = fit(width, height, size.width, size.height)
        self._shown = (x0, y0, width, height, out_w, out_h)
        codes = cell_codes(sample(pixels, out_w, out_h))
        old = self._codes
        if force or old is None or old.shape != codes.shape:
            changed = list(range(codes.shape[0]))
            self._strips = [Strip.blank(0)] * codes.shape[0]
        else:
            changed = np.flatnonzero((old != codes).any(axis=1)).tolist()
        self._codes = codes
        self._pad = (size.width - out_w) // 2
        blank = self.rich_style
        for row in changed:
            self._strips[row] = self._strip(codes[row], blank, size.width)
        if changed:
            self.frames_shown += 1
            self.rows_painted += len(changed)
            if force:
                self.refresh()
            else:
                self.refresh(*_regions(changed, size))
        return len(changed)

    def _strip(self, row: npt.NDArray[np.int64], blank: Style, width: int) -> Strip:
        """One terminal row, `width` cells (the view's: Textual need not pad it)."""
        starts = np.flatnonzero(np.diff(row)) + 1
        bounds = [0, *starts.tolist(), len(row)]
        codes = row[bounds[:-1]].tolist()
        # The cache looked up in line: a method call per run was a tenth of a redraw.
        known, make = self._styles.get, self._style
        pad = self._pad
        segments = [Segment(" " * pad, blank)] if pad else []
        segments += [
            Segment(UPPER_HALF * (end - start), known(code) or make(code))
            for (start, end), code in zip(itertools.pairwise(bounds), codes, strict=True)
        ]
        rest = width - pad - len(row)
        if rest > 0:
            segments.append(Segment(" " * rest, blank))
        # The length given: Textual would otherwise measure every segment again.
        return Strip(segments, max(width, pad + len(row)))

    def _style(self, code: int) -> Style:
        style = self._styles.get(code)
        if style is None:
            if len(self._styles) > 65_536:  # a photo-like frame: do not grow forever
                self._styles.clear()
            upper, lower = code >> 24, code & 0xFFFFFF
            style = Style(
                color=Color.from_rgb(upper >> 16, (upper >> 8) & 0xFF, upper & 0xFF),
                bgcolor=Color.from_rgb(lower >> 16, (lower >> 8) & 0xFF, lower & 0xFF),
            )
            self._styles[code] = style
        return style

    def render_line(self, y: int) -> Strip:
        if 0 <= y < len(self._strips):
            return self._strips[y]
        return Strip.blank(self.size.width, self.rich_style)

    def render_lines(self, crop: Region) -> list[Strip]:
        """The rows in `crop` as built, past Textual's styles cache: the view has no
        border, padding or text styles, and the cache's per-line styling was half the
        cost of a redraw (bench/bench_tui.py)."""
        return self._rows(self._strips, crop)


def _regions(rows: list[int], size: Size) -> list[Region]:
    """Consecutive changed rows as one region each."""
    regions: list[Region] = []
    start = prev = rows[0]
    for row in rows[1:]:
        if row != prev + 1:
            regions.append(Region(0, start, size.width, prev - start + 1))
            start = row
        prev = row
    regions.append(Region(0, start, size.width, prev - start + 1))
    return regions


def mark_point(pixels: Pixels, x: int, y: int, radius: int, thick: int = 1) -> Pixels:
    """A copy of `pixels` with a red cross-hair at (x, y): arms `radius` pixels long,
    `thick` pixels wide on each side of the centre line."""
    out = pixels.copy()
    height, width = out.shape[:2]
    if not (0 <= x < width and 0 <= y < height):
        return out
    x0, x1 = max(0, x - radius), min(width, x + radius + 1)
    y0, y1 = max(0, y - radius), min(height, y + radius + 1)
    out[max(0, y - thick) : y + thick + 1, x0:x1] = (255, 40, 40)
    out[y0:y1, max(0, x - thick) : x + thick + 1] = (255, 40, 40)
    return out
