"""A reader for GIMP's .xcf project files: the canvas and its layers, not the pixels.

Enough of the format (GNOME/gimp `devel-docs/xcf.txt`) to answer what a task asks
about a saved project: layer names, order, sizes, offsets, visibility, opacity,
blend mode, groups and the text of text layers. Pixel tiles are never decoded.
Every number is big-endian; offsets ("pointers") are 32-bit before XCF v011 and
64-bit from v011 (GIMP 2.10 writes v011 by default). Layers come top to bottom,
a group's children right after the group.

Anything malformed raises `XcfError` with the byte offset, so a check can fail with
the reason; nothing here guesses.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

from app.core.errors import DeskLoopError

MAGIC = b"gimp xcf "

# Property ids used here (xcf.txt, "PROPERTY TYPES").
PROP_END = 0
PROP_OPACITY = 6
PROP_MODE = 7
PROP_VISIBLE = 8
PROP_OFFSETS = 15
PROP_PARASITES = 21
PROP_TEXT_LAYER_FLAGS = 26
PROP_GROUP_ITEM = 29
PROP_ITEM_PATH = 30
PROP_FLOAT_OPACITY = 33

# GIMP 2.10 layer modes (GimpLayerMode): the current codes and the legacy (2.8) ones.
MODES: dict[int, str] = {
    28: "normal",
    1: "dissolve",
    29: "behind",
    30: "multiply",
    31: "screen",
    23: "overlay",
    32: "difference",
    33: "addition",
    34: "subtract",
    35: "darken-only",
    36: "lighten-only",
    37: "hsv-hue",
    38: "hsv-saturation",
    39: "hsl-color",
    40: "hsv-value",
    41: "divide",
    42: "dodge",
    43: "burn",
    44: "hardlight",
    45: "softlight",
    46: "grain-extract",
    47: "grain-merge",
    48: "vivid-light",
    49: "pin-light",
    50: "linear-light",
    51: "hard-mix",
    52: "exclusion",
    53: "linear-burn",
    54: "luma-darken-only",
    55: "luma-lighten-only",
    56: "luminance",
    57: "color-erase",
    58: "erase",
    59: "merge",
    60: "split",
    61: "pass-through",
}
LEGACY_MODES: dict[int, str] = {
    0: "normal",
    2: "behind",
    3: "multiply",
    4: "screen",
    5: "overlay",
    6: "difference",
    7: "addition",
    8: "subtract",
    9: "darken-only",
    10: "lighten-only",
    11: "hsv-hue",
    12: "hsv-saturation",
    13: "hsl-color",
    14: "hsv-value",
    15: "divide",
    16: "dodge",
    17: "burn",
    18: "hardlight",
    19: "softlight",
    20: "grain-extract",
    21: "grain-merge",
    22: "color-erase",
}
MODE_NAMES = frozenset(MODES.values())


def mode_name(code: int) -> str:
    """'multiply' for 30, 'multiply (legacy)' for 3, 'mode 99' for an unknown code."""
    if code in MODES:
        return MODES[code]
    if code in LEGACY_MODES:
        return f"{LEGACY_MODES[code]} (legacy)"
    return f"mode {code}"


class XcfError(DeskLoopError):
    """The bytes are not a readable XCF file; the message says where and why."""

    title = "XCF error"
    kind = "check"


@dataclass(frozen=True)
class XcfLayer:
    name: str
    width: int
    height: int
    x: int
    y: int
    visible: bool
    opacity: float
    """0-100, as GIMP's Layers dialog shows it."""
    mode: int
    is_group: bool
    depth: int
    """0 for a top-level layer, 1 for a child of a top-level group, ..."""
    text: str | None
    """The text of a text layer (markup stripped), None for other layers."""

    @property
    def mode_name(self) -> str:
        return mode_name(self.mode)


@dataclass(frozen=True)
class XcfImage:
    version: int
    width: int
    height: int
    base_type: int
    """0 RGB, 1 grayscale, 2 indexed."""
    layers: list[XcfLayer] = field(default_factory=list)
    """Every layer, top to bottom, group children after their group."""


class _Reader:
    def __init__(self, data: bytes, version: int) -> None:
        self.data = data
        self.version = version

    def unpack(self, fmt: str, offset: int) -> tuple[int | float, ...]:
        size = struct.calcsize(fmt)
        if offset < 0 or offset + size > len(self.data):
            raise XcfError(
                f"truncated: needs {size} bytes at offset {offset}, file has {len(self.data)}"
            )
        return struct.unpack_from(fmt, self.data, offset)

    def u32(self, offset: int) -> int:
        return int(self.unpack(">I", offset)[0])

    def pointer(self, offset: int) -> tuple[int, int]:
        if self.version >= 11:
            return int(self.unpack(">Q", offset)[0]), offset + 8
        return self.u32(offset), offset + 4

    def string(self, offset: int) -> tuple[str, int]:
        length = self.u32(offset)
        start = offset + 4
        if length == 0:
            return "", start
        end = start + length
        if end > len(self.data):
            raise XcfError(f"truncated: a string of {length} bytes at offset {offset}")
        raw = self.data[start : end - 1]  # stored with its terminating NUL
        try:
            return raw.decode("utf-8"), end
        except UnicodeDecodeError as exc:
            raise XcfError(f"string at offset {offset} is not UTF-8: {exc}") from None

    def properties(self, offset: int) -> tuple[dict[int, bytes], int]:
        props: dict[int, bytes] = {}
        for _ in range(100_000):  # far more than any real file; bounds a corrupt loop
            kind = self.u32(offset)
            length = self.u32(offset + 4)
            start = offset + 8
            if kind == PROP_END:
                return props, start
            if start + length > len(self.data):
                raise XcfError(f"truncated: property {kind} of {length} bytes at offset {offset}")
            props[kind] = self.data[start : start + length]
            offset = start + length
        raise XcfError(f"no end of the property list starting near offset {offset}")


def parse_xcf(data: bytes) -> XcfImage:
    """Read an .xcf file's canvas and layers (no pixels). Raises XcfError."""
    if not data.startswith(MAGIC):
        raise XcfError(f"not an XCF file (starts with {data[:14]!r}, expected {MAGIC!r}...)")
    tag = data[9:13]
    if tag == b"file":
        version = 0
    elif re.fullmatch(rb"v\d{3}", tag):
        version = int(tag[1:])
    else:
        raise XcfError(f"unknown XCF version tag {tag!r}")
    if data[13:14] != b"\0":
        raise XcfError("the XCF version tag is not NUL-terminated")
    reader = _Reader(data, version)
    width, height, base_type = (reader.u32(14 + 4 * i) for i in range(3))
    offset = 26
    if version >= 4:
        offset += 4  # precision
    _, offset = reader.properties(offset)
    pointers: list[int] = []
    while True:
        pointer, offset = reader.pointer(offset)
        if pointer == 0:
            break
        pointers.append(pointer)
        if len(pointers) > 100_000:
            raise XcfError("implausibly many layers: the layer list has no end")
    layers = [_layer(reader, pointer) for pointer in pointers]
    return XcfImage(version, width, height, base_type, layers)


def _layer(reader: _Reader, offset: int) -> XcfLayer:
    width, height = reader.u32(offset), reader.u32(offset + 4)
    name, after = reader.string(offset + 12)
    props, _ = reader.properties(after)
    where = f"layer {name!r} at offset {offset}"

    def value(kind: str, prop: int, fmt: str) -> tuple[int | float, ...] | None:
        raw = props.get(prop)
        if raw is None:
            return None
        if len(raw) < struct.calcsize(fmt):
            raise XcfError(f"{where}: property {kind} is {len(raw)} bytes, too short")
        return struct.unpack_from(fmt, raw)

    opacity = 100.0
    float_opacity = value("float opacity", PROP_FLOAT_OPACITY, ">f")
    int_opacity = value("opacity", PROP_OPACITY, ">I")
    if float_opacity is not None:
        opacity = float(float_opacity[0]) * 100.0
    elif int_opacity is not None:
        opacity = int(int_opacity[0]) * 100.0 / 255.0
    visible = value("visible", PROP_VISIBLE, ">I")
    mode = value("mode", PROP_MODE, ">I")
    offsets = value("offsets", PROP_OFFSETS, ">ii")
    path_raw = props.get(PROP_ITEM_PATH, b"")
    parasites = _parasites(props.get(PROP_PARASITES, b""), where)
    text_parasite = parasites.get("gimp-text-layer")
    return XcfLayer(
        name=name,
        width=width,
        height=height,
        x=int(offsets[0]) if offsets else 0,
        y=int(offsets[1]) if offsets else 0,
        visible=bool(visible[0]) if visible else True,
        opacity=round(opacity, 3),
        mode=int(mode[0]) if mode else 0,
        is_group=PROP_GROUP_ITEM in props,
        depth=max(0, len(path_raw) // 4 - 1),
        text=None if text_parasite is None else text_layer_text(text_parasite, where),
    )


def _parasites(raw: bytes, where: str) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    reader = _Reader(raw, 0)
    offset = 0
    while offset < len(raw):
        try:
            name, offset = reader.string(offset)
            size = reader.u32(offset + 4)  # after the flags
        except XcfError as exc:
            raise XcfError(f"{where}: parasite list: {exc}") from None
        start = offset + 8
        if start + size > len(raw):
            raise XcfError(f"{where}: parasite {name!r} is truncated")
        found[name] = raw[start : start + size]
        offset = start + size
    return found


_SEXP_STRING = r'"((?:[^"\\]|\\.)*)"'
_TAG = re.compile(r"<[^>]*>")


def text_layer_text(parasite: bytes, where: str = "text layer") -> str:
    """The text of a `gimp-text-layer` parasite: `(text "...")`, or `(markup "...")`
    with its tags removed."""
    source = parasite.rstrip(b"\0").decode("utf-8", "replace")
    for key in ("text", "markup"):
        match = re.search(rf"\({key}\s+{_SEXP_STRING}\)", source, re.DOTALL)
        if match is not None:
            text = re.sub(r"\\(.)", r"\1", match.group(1), flags=re.DOTALL)
            if key == "markup":
                text = _TAG.sub("", text)
                for entity, char in (("&lt;", "<"), ("&gt;", ">"), ("&quot;", '"'), ("&amp;", "&")):
                    text = text.replace(entity, char)
            return text
    raise XcfError(f"{where}: its gimp-text-layer parasite has neither (text ...) nor (markup ...)")
