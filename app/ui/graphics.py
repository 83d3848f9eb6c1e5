"""Desktop frames with the terminal's own graphics: kitty's protocol or sixel.

`choose_graphics` picks how the Live screen draws frames: `--graphics` or
$DESKLOOP_GRAPHICS when given, else what the terminal answers to textual-image's
queries (sixel first, then kitty's protocol, as textual-image orders them: terminals
that answer both draw sixel reliably). It must run before Textual starts, because
Textual's input thread would swallow the terminal's answers. Anything that is not a
terminal, and tmux or screen (they pass neither kind of image), gets half blocks.

Both views draw in-band: the escape sequences travel inside the strips Textual
writes, so they reach the terminal in order with the text around them.

- `KittyView` sends each frame as a PNG with a new image id and a virtual placement,
  and fills its cells with kitty's Unicode placeholders (U+10EEEE, the image id as
  the foreground colour, row and column as combining marks). The image is text to
  Textual, so dialogs and other screens cover it correctly. The image before the
  previous one is deleted with each new frame: the previous one stays until the
  placeholders that replace it have been written.
- `SixelView` writes blank cells, then the sixel image over them at the end of the
  last line (after Textual has drawn the lines it covers).

Encoding (PNG, sixel: 20-100 ms for a screen-sized frame) runs in a thread; while
one frame is encoded, newer frames replace each other and only the latest is drawn.
"""

from __future__ import annotations

import asyncio
import base64
import fcntl
import io
import itertools
import math
import os
import struct
import sys
import termios
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Generic, Literal, TypedDict, TypeVar, Unpack

import numpy as np
import numpy.typing as npt
from PIL import Image as PILImage
from rich.color import Color
from rich.control import Control
from rich.segment import ControlType, Segment
from rich.style import Style
from textual.geometry import Region
from textual.strip import Strip

from app.core.settings import read_settings
from app.ui.halfblock import FrameView

# textual-image's sixel encoder (numpy, fast); a private name, so pyproject.toml pins
# textual-image to a minor series and tests/ui/test_graphics.py exercises it.
from textual_image._sixel import image_to_sixels  # isort: skip

Pixels = npt.NDArray[np.uint8]
Mode = Literal["kitty", "sixel", "halfblock"]
GRAPHICS_ENV = "DESKLOOP_GRAPHICS"
DEFAULT_CELL = (10, 20)
"""Cell size in pixels when the terminal does not say (a VT340's, as textual-image)."""

LABELS: dict[str, str] = {
    "kitty": "kitty graphics",
    "sixel": "sixel graphics",
    "halfblock": "half blocks",
}


@dataclass(frozen=True)
class Graphics:
    """How the Live screen draws frames, and why."""

    mode: Mode = "halfblock"
    reason: str = "the default"
    cell: tuple[int, int] = DEFAULT_CELL
    """A terminal cell's (width, height) in pixels."""

    @property
    def label(self) -> str:
        return LABELS[self.mode]


def probe_terminal() -> Mode | None:
    """What textual-image's detection found ('sixel', 'kitty' or None); it queries
    the terminal when its renderable module is first imported."""
    import textual_image.renderable as renderable
    from textual_image.renderable.sixel import Image as SixelImage
    from textual_image.renderable.tgp import Image as TGPImage

    if renderable.Image is SixelImage:
        return "sixel"
    if renderable.Image is TGPImage:
        return "kitty"
    return None


def terminal_cell_size(fd: int | None = None) -> tuple[int, int]:
    """The terminal's cell size in pixels from the tty's window size (TIOCGWINSZ on
    `fd`, default stdout), or DEFAULT_CELL when it does not report pixels."""
    try:
        if fd is None:
            stream = sys.__stdout__
            if stream is None:
                return DEFAULT_CELL
            fd = stream.fileno()
        if not os.isatty(fd):
            return DEFAULT_CELL
        packed = fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8)
    except (OSError, ValueError):
        return DEFAULT_CELL
    rows, cols, width, height = struct.unpack("HHHH", packed)
    if rows and cols and width and height:
        return max(1, width // cols), max(1, height // rows)
    return DEFAULT_CELL


def choose_graphics(
    requested: str | None = None,
    *,
    environ: Mapping[str, str] = os.environ,
    is_tty: bool | None = None,
    probe: Callable[[], Mode | None] = probe_terminal,
    cell_size: Callable[[], tuple[int, int]] = terminal_cell_size,
) -> Graphics:
    """The graphics for this terminal: `requested` (the --graphics option), else
    $DESKLOOP_GRAPHICS, else 'auto', which asks the terminal.

    Raises:
        SettingError: $DESKLOOP_GRAPHICS is not one of GRAPHICS_CHOICES.
    """
    how = requested
    source = "--graphics"
    if how is None:
        given = read_settings(environ).graphics
        if given is not None:
            how, source = given, GRAPHICS_ENV
    how = how or "auto"
    if how == "halfblock":
        return Graphics("halfblock", f"chosen with {source}")
    if how == "kitty":
        diacritics()  # before Textual starts (see there)
        why = f"chosen with {source}"
        if not truecolor(environ):
            why += "; COLORTERM does not say truecolor, so the image may not show"
        return Graphics("kitty", why, cell_size())
    if how == "sixel":
        return Graphics("sixel", f"chosen with {source}", cell_size())
    if is_tty is None:
        stdout = sys.__stdout__
        is_tty = bool(stdout is not None and stdout.isatty())
    if not is_tty:
        return Graphics("halfblock", "not a terminal")
    if environ.get("TMUX") or environ.get("TERM", "").startswith(("screen", "tmux")):
        return Graphics("halfblock", "inside tmux or screen, which pass no images through")
    found = probe()
    if found is None:
        return Graphics("halfblock", "the terminal answered neither the sixel nor the kitty query")
    if found == "kitty" and not truecolor(environ):
        return Graphics(
            "halfblock",
            "the terminal has kitty graphics, but without COLORTERM=truecolor Textual "
            "would change the colours that name the image",
        )
    return Graphics(found, "detected", cell_size())


def truecolor(environ: Mapping[str, str]) -> bool:
    """Whether Textual will write 24-bit colours (kitty's placeholders carry the image
    id in the foreground colour; a 256-colour approximation names another image)."""
    forced = environ.get("TEXTUAL_COLOR_SYSTEM", "auto")
    if forced != "auto":
        return forced == "truecolor"
    return environ.get("COLORTERM", "").lower() in ("truecolor", "24bit")


def fit_cells(
    width: int, height: int, cols: int, rows: int, cell: tuple[int, int]
) -> tuple[int, int]:
    """The largest cols × rows block of cells showing a width × height frame at its
    aspect ratio (cells are `cell` pixels)."""
    if width <= 0 or height <= 0 or cols <= 0 or rows <= 0:
        return 0, 0
    scale = min(cols * cell[0] / width, rows * cell[1] / height)
    return (
        max(1, min(cols, math.floor(width * scale / cell[0] + 0.5))),
        max(1, min(rows, math.floor(height * scale / cell[1] + 0.5))),
    )


def scaled(pixels: Pixels, size: tuple[int, int]) -> PILImage.Image:
    """The RGB frame resized to `size` (width, height) pixels."""
    image = PILImage.fromarray(np.ascontiguousarray(pixels[:, :, :3]), "RGB")
    if image.size == size:
        return image
    return image.resize(size, PILImage.Resampling.BILINEAR, reducing_gap=2.0)


EncodedT = TypeVar("EncodedT")
"""What a view encodes a frame to (KittyFrame, SixelFrame)."""


class _ViewOptions(TypedDict, total=False):
    """`_GraphicsView`'s keyword arguments, for a view that adds state of its own."""

    cell: tuple[int, int]
    name: str | None
    id: str | None


class _GraphicsView(FrameView, Generic[EncodedT]):
    """Shared by the kitty and sixel views: the latest frame, encoded in a thread."""

    def __init__(
        self,
        *,
        cell: tuple[int, int] = DEFAULT_CELL,
        name: str | None = None,
        id: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id)
        self.cell = cell
        self._encoding = False
        self._drawn_from: tuple[int, int, int] | None = None
        """(id of the pixels, cols, rows) of what is drawn, to skip repeats."""
        self._frame: EncodedT | None = None
        """The encoded frame on show."""

    def show(self, pixels: Pixels) -> int:
        self._pixels = pixels
        if not self._encoding:
            self._encoding = True
            self.run_worker(self._encode_latest(), group="encode", exit_on_error=False)
        return self.size.height

    def on_resize(self) -> None:
        if self._pixels is not None:
            self.show(self._pixels)

    async def _encode_latest(self) -> None:
        try:
            while self._pixels is not None:
                pixels, size = self._pixels, self.size
                key = (id(pixels), size.width, size.height)
                if key == self._drawn_from or size.width == 0 or size.height == 0:
                    return
                encoded = await asyncio.to_thread(self._encode, pixels, size.width, size.height)
                self._install(encoded)
                self._drawn_from = key
                self.frames_shown += 1
                self.rows_painted += size.height
                self.refresh()
        finally:
            self._encoding = False

    def clear(self) -> None:
        self._pixels = None
        self._frame = None
        self._drawn_from = None
        self.refresh()

    def _encode(self, pixels: Pixels, cols: int, rows: int) -> EncodedT:
        """The frame scaled to the most of cols × rows cells it fits, encoded (in a
        worker thread)."""
        height, width = pixels.shape[:2]
        used_cols, used_rows = fit_cells(width, height, cols, rows, self.cell)
        image = scaled(pixels, (used_cols * self.cell[0], used_rows * self.cell[1]))
        return self._encode_image(image, used_cols, used_rows)

    def _encode_image(self, image: PILImage.Image, cols: int, rows: int) -> EncodedT:
        raise NotImplementedError

    def _install(self, frame: EncodedT) -> None:
        """Show `frame` (on the event loop)."""
        self._frame = frame


# -- kitty --------------------------------------------------------------------------

APC, ST = "\x1b_G", "\x1b\\"
PLACEHOLDER = "\U0010eeee"


def diacritics() -> list[str]:
    """Kitty's row/column diacritics (its rowcolumn-diacritics table), from
    textual-image.

    Imported only when needed: importing textual_image.renderable queries the
    terminal, which must happen before Textual owns it (choose_graphics imports it
    for the kitty mode; elsewhere stdout is no terminal and nothing is asked).
    """
    from textual_image.renderable.tgp import _NUMBER_TO_DIACRITIC

    return [chr(code) for code in _NUMBER_TO_DIACRITIC]


CHUNK = 4096


def kitty_command(payload: str = "", **keys: int | str) -> str:
    """One kitty graphics command (APC G keys;payload ST)."""
    control = ",".join(f"{k}={v}" for k, v in keys.items())
    return f"{APC}{control};{payload}{ST}" if payload else f"{APC}{control}{ST}"


def kitty_transmit(image_id: int, png: bytes, cols: int, rows: int) -> str:
    """Transmit `png` as image `image_id` and place it virtually on cols × rows cells
    (shown wherever placeholders name the image). q=2: the terminal answers nothing,
    since Textual owns stdin."""
    data = base64.standard_b64encode(png).decode("ascii")
    chunks = [data[i : i + CHUNK] for i in range(0, len(data), CHUNK)] or [""]
    parts = []
    for n, chunk in enumerate(chunks):
        more = 1 if n < len(chunks) - 1 else 0
        if n == 0:
            parts.append(kitty_command(chunk, a="t", f=100, i=image_id, q=2, m=more))
        else:
            parts.append(kitty_command(chunk, m=more))
    parts.append(kitty_command(a="p", U=1, i=image_id, c=cols, r=rows, q=2))
    return "".join(parts)


def kitty_delete(image_id: int) -> str:
    """Delete image `image_id`, its placements and its data."""
    return kitty_command(a="d", d="I", i=image_id, q=2)


def placeholder_row(row: int, cols: int, marks: list[str]) -> str:
    """A row of placeholder cells: the first names its row and column, the rest
    follow on (kitty infers the column from the cell to the left)."""
    return PLACEHOLDER + marks[row] + marks[0] + PLACEHOLDER * (cols - 1)


@dataclass(frozen=True)
class KittyFrame:
    image_id: int
    cols: int
    rows: int
    png: bytes


class KittyView(_GraphicsView[KittyFrame]):
    """Frames as kitty graphics (kitty ≥ 0.28, Ghostty: Unicode placeholders)."""

    # Ids fit in 24 bits (the foreground colour); a random start keeps two DeskLoop
    # windows in one terminal from sharing ids.
    _ids = itertools.count(1 + int.from_bytes(os.urandom(2), "big") * 128)

    def __init__(self, **options: Unpack[_ViewOptions]) -> None:
        super().__init__(**options)
        self._live: list[int] = []
        """Image ids in the terminal, oldest first."""
        self._pending = ""
        """Commands to send with the next rendering of the view."""
        self._strips: list[Strip] = []
        self._marks = diacritics()

    def _encode_image(self, image: PILImage.Image, cols: int, rows: int) -> KittyFrame:
        out = io.BytesIO()
        # Level 1: PNG's filters do most of the work on desktop screens, at a
        # fraction of the default level's time.
        image.save(out, "PNG", compress_level=1)
        return KittyFrame(next(self._ids) % 0xFFFFFF or 1, cols, rows, out.getvalue())

    def _install(self, frame: KittyFrame) -> None:
        super()._install(frame)
        commands = [kitty_transmit(frame.image_id, frame.png, frame.cols, frame.rows)]
        self._live.append(frame.image_id)
        while len(self._live) > 2:
            commands.append(kitty_delete(self._live.pop(0)))
        self._pending += "".join(commands)
        width = self.size.width
        pad = (width - frame.cols) // 2
        style = Style(
            color=Color.from_rgb(
                (frame.image_id >> 16) & 0xFF, (frame.image_id >> 8) & 0xFF, frame.image_id & 0xFF
            )
        )
        self._strips = [
            Strip(
                [
                    Segment(" " * pad, self.rich_style),
                    Segment(placeholder_row(row, frame.cols, self._marks), style),
                    Segment(" " * (width - pad - frame.cols), self.rich_style),
                ],
                width,
            )
            for row in range(frame.rows)
        ]

    def clear(self) -> None:
        self._pending += "".join(kitty_delete(i) for i in self._live)
        self._live = []
        self._strips = []
        super().clear()

    def render_lines(self, crop: Region) -> list[Strip]:
        lines = self._rows(self._strips, crop)
        if self._pending and lines:
            # At the end of the first line: zero cells wide, after its placeholders.
            first = lines[0]
            control = Segment(self._pending, None, [(ControlType.CURSOR_FORWARD, 0)])
            lines[0] = Strip([*first, control], first.cell_length)
            self._pending = ""
        return lines


# -- sixel --------------------------------------------------------------------------


SIXEL_AT_CURSOR = "\x1b[?80l\x1b[?8452h"
"""Sixel scrolling on (DECSDM off: xterm otherwise draws every image at the screen's
top left) and the cursor left beside the image, not below it (xterm's 8452), so an
image that ends on the last row does not scroll the screen."""


@dataclass(frozen=True)
class SixelFrame:
    cols: int
    rows: int
    image: PILImage.Image
    sixel: str
    """The whole image, for renderings of the whole view."""
    crops: dict[Region, str] = field(default_factory=dict, compare=False)
    """Sixels of the last part of the image drawn alone, by its area."""


class SixelView(_GraphicsView[SixelFrame]):
    """Frames as sixel images (xterm -ti vt340, foot, WezTerm, mlterm, ...)."""

    def _encode_image(self, image: PILImage.Image, cols: int, rows: int) -> SixelFrame:
        return SixelFrame(cols, rows, image, image_to_sixels(image))

    def _sixel_for(self, area: Region) -> str:
        """Sixel data of the part of the image on `area` (cells, image-relative)."""
        frame = self._frame
        assert frame is not None
        if area == Region(0, 0, frame.cols, frame.rows):
            return frame.sixel
        cached = frame.crops.get(area)
        if cached is None:
            # A part of the view (another widget covered the rest): rare, so in line.
            cw, ch = self.cell
            box = (area.x * cw, area.y * ch, area.right * cw, area.bottom * ch)
            cached = image_to_sixels(frame.image.crop(box))
            frame.crops.clear()
            frame.crops[area] = cached
        return cached

    def render_lines(self, crop: Region) -> list[Strip]:
        lines = [Strip.blank(crop.width, self.rich_style)] * crop.height
        frame = self._frame
        if frame is None or not lines or not self.screen.is_active:
            # A screen in the background (under a dialog) shows no image: sixels
            # would be drawn over the dialog.
            return lines
        pad = (self.size.width - frame.cols) // 2
        shown = crop.intersection(Region(pad, 0, frame.cols, frame.rows))
        if shown.area == 0:
            return lines
        sixel = self._sixel_for(Region(shown.x - pad, shown.y, shown.width, shown.height))
        origin = self.region.offset
        segments = [
            Segment(" " * crop.width, self.rich_style),
            Control.move_to(origin.x + shown.x, origin.y + shown.y).segment,
            Segment(SIXEL_AT_CURSOR + sixel, None, [(ControlType.CURSOR_FORWARD, 0)]),
        ]
        # Drawn at the end of the last line: the lines it covers are written by then.
        lines[-1] = Strip(segments, crop.width)
        return lines


def make_frame_view(graphics: Graphics, *, id: str | None = None) -> FrameView:
    """The Live screen's frame widget for `graphics`."""
    from app.ui.halfblock import HalfBlockView

    if graphics.mode == "kitty":
        return KittyView(cell=graphics.cell, id=id)
    if graphics.mode == "sixel":
        return SixelView(cell=graphics.cell, id=id)
    return HalfBlockView(id=id)
