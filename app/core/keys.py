"""Key names and combos → X11 keysyms (what RFB KeyEvent messages carry).

Names are validated here, when an action is parsed, so a typo in a reference
solution ("escape" vs "esc" is accepted, "escpe" is not) fails with the name and
the list of known names before anything is sent to a desktop.
"""

from __future__ import annotations

from app.core.errors import ActionError

MODIFIERS: dict[str, int] = {
    "ctrl": 0xFFE3,
    "control": 0xFFE3,
    "shift": 0xFFE1,
    "alt": 0xFFE9,
    "meta": 0xFFE7,
    "super": 0xFFEB,
    "win": 0xFFEB,
}

NAMED_KEYS: dict[str, int] = {
    "enter": 0xFF0D,
    "return": 0xFF0D,
    "esc": 0xFF1B,
    "escape": 0xFF1B,
    "tab": 0xFF09,
    "backspace": 0xFF08,
    "bsp": 0xFF08,
    "delete": 0xFFFF,
    "del": 0xFFFF,
    "insert": 0xFF63,
    "ins": 0xFF63,
    "space": 0x0020,
    "home": 0xFF50,
    "end": 0xFF57,
    "pageup": 0xFF55,
    "pgup": 0xFF55,
    "pagedown": 0xFF56,
    "pgdn": 0xFF56,
    "left": 0xFF51,
    "up": 0xFF52,
    "right": 0xFF53,
    "down": 0xFF54,
    "menu": 0xFF67,
    "print": 0xFF61,
    "minus": 0x002D,
    "plus": 0x002B,
    "comma": 0x002C,
    "period": 0x002E,
    "slash": 0x002F,
    **{f"f{n}": 0xFFBD + n for n in range(1, 13)},
}


def char_keysym(char: str) -> int:
    """The keysym that types one character (Latin-1 directly, else Unicode)."""
    if len(char) != 1:
        raise ActionError(f"expected one character, got {char!r}")
    if char == "\n":
        return NAMED_KEYS["enter"]
    if char == "\t":
        return NAMED_KEYS["tab"]
    code = ord(char)
    if code < 0x20 or code == 0x7F:
        raise ActionError(f"cannot type control character {char!r}")
    if code <= 0xFF:
        return code
    return 0x01000000 + code


# Characters a US keyboard types with Shift held. Servers that turn keysyms into
# scancodes (QEMU's VNC) need the Shift sent with them; see VNCClient.explicit_shift.
_US_SHIFTED = frozenset('ABCDEFGHIJKLMNOPQRSTUVWXYZ~!@#$%^&*()_+{}|:"<>?')


def needs_shift(char: str) -> bool:
    """Whether a US keyboard types `char` with Shift held."""
    return char in _US_SHIFTED


def key_keysym(name: str) -> int:
    """The keysym of one non-modifier key name ('a', 'F5', 'enter', '+')."""
    lowered = name.lower()
    if lowered in NAMED_KEYS:
        return NAMED_KEYS[lowered]
    if len(name) == 1:
        # A combo names keys, not characters: 'ctrl+S' means ctrl+s.
        return char_keysym(name.lower() if name.isalpha() else name)
    known = ", ".join(sorted(NAMED_KEYS))
    raise ActionError(f"unknown key name {name!r}; known names: {known}, or one character")


def parse_combo(combo: str) -> list[int]:
    """'ctrl+shift+e' → [Control_L, Shift_L, e]: modifiers first, then one key.

    A lone '+' and combos ending in '+' ('ctrl++') name the plus key.
    """
    text = combo.strip()
    if not text:
        raise ActionError("empty key combo")
    if text == "+":
        parts = ["+"]
    elif text.endswith("++"):
        parts = [*text[:-2].split("+"), "+"]
    else:
        parts = text.split("+")
    if any(part == "" for part in parts):
        raise ActionError(f"malformed key combo {combo!r} (empty part between '+')")
    *mods, last = parts
    keysyms: list[int] = []
    for mod in mods:
        sym = MODIFIERS.get(mod.lower())
        if sym is None:
            raise ActionError(
                f"unknown modifier {mod!r} in key combo {combo!r}; "
                f"known: {', '.join(sorted(MODIFIERS))}"
            )
        keysyms.append(sym)
    lowered = last.lower()
    keysyms.append(MODIFIERS[lowered] if lowered in MODIFIERS else key_keysym(last))
    return keysyms
