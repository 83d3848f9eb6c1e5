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


# -- Other agents' key names → DeskLoop's ------------------------------------------------
#
# Model families name keys in their own vocabularies: pyautogui ('enter', 'pgdn',
# 'ctrlleft', 'command'), X keysyms as xdotool and Anthropic's computer tool write them
# ('Return', 'Page_Down', 'Control_L', 'KP_Enter'), OpenAI's computer use ('ENTER',
# 'ARROWLEFT', 'CMD'). One table maps them all (matched without case) to the names above;
# docs/agents.md prints it. A name in none of them stays an error naming it.

KEY_ALIASES: dict[str, str] = {
    # Modifiers and their left/right variants.
    "ctrlleft": "ctrl",
    "ctrlright": "ctrl",
    "control_l": "ctrl",
    "control_r": "ctrl",
    "shiftleft": "shift",
    "shiftright": "shift",
    "shift_l": "shift",
    "shift_r": "shift",
    "altleft": "alt",
    "altright": "alt",
    "alt_l": "alt",
    "alt_r": "alt",
    "option": "alt",
    "optionleft": "alt",
    "optionright": "alt",
    "cmd": "super",
    "command": "super",
    "winleft": "super",
    "winright": "super",
    "super_l": "super",
    "super_r": "super",
    "meta_l": "meta",
    "meta_r": "meta",
    # Named keys (DeskLoop's own long names too, so one key has one name).
    "return": "enter",
    "escape": "esc",
    "control": "ctrl",
    "win": "super",
    "kp_enter": "enter",
    "linefeed": "enter",
    "back_space": "backspace",
    "page_up": "pageup",
    "prior": "pageup",
    "page_down": "pagedown",
    "next": "pagedown",
    "pgdown": "pagedown",
    "arrowleft": "left",
    "arrowright": "right",
    "arrowup": "up",
    "arrowdown": "down",
    "left_arrow": "left",
    "right_arrow": "right",
    "up_arrow": "up",
    "down_arrow": "down",
    "printscreen": "print",
    "prtsc": "print",
    "prtscr": "print",
    "prntscrn": "print",
    "apps": "menu",
    "spacebar": "space",
    # X keysym names of punctuation (xdotool accepts them; models write some).
    "equal": "=",
    "semicolon": ";",
    "apostrophe": "'",
    "quotedbl": '"',
    "grave": "`",
    "asciitilde": "~",
    "backslash": "\\",
    "bracketleft": "[",
    "bracketright": "]",
    "braceleft": "{",
    "braceright": "}",
    "parenleft": "(",
    "parenright": ")",
    "less": "<",
    "greater": ">",
    "question": "?",
    "exclam": "!",
    "at": "@",
    "numbersign": "#",
    "dollar": "$",
    "percent": "%",
    "asciicircum": "^",
    "ampersand": "&",
    "asterisk": "*",
    "underscore": "_",
    "bar": "|",
    "colon": ":",
    **{f"kp_{n}": str(n) for n in range(10)},
    "kp_add": "plus",
    "kp_subtract": "minus",
    "kp_multiply": "*",
    "kp_divide": "slash",
    "kp_decimal": "period",
}


def normalize_key(name: str) -> str:
    """One key of another vocabulary (pyautogui, X keysym, OpenAI) as DeskLoop names it:
    'Return' → 'enter', 'ARROWLEFT' → 'left', 'ctrlleft' → 'ctrl', 'a' → 'a'.

    Raises:
        ActionError: a name no vocabulary here knows (it is named in the message).
    """
    text = name.strip()
    if len(text) == 1:
        return text  # one character names itself ('A' in a combo means the a key)
    lowered = text.lower()
    lowered = KEY_ALIASES.get(lowered, lowered)
    if lowered in MODIFIERS or lowered in NAMED_KEYS or len(lowered) == 1:
        return lowered
    raise ActionError(
        f"unknown key name {name!r}: not a DeskLoop, pyautogui, X keysym or OpenAI key name"
    )


def combo_of(keys: list[str]) -> str:
    """Keys pressed together (['CTRL', 'Shift_L', 'e'], pyautogui.hotkey's arguments)
    as one DeskLoop combo ('ctrl+shift+e'): modifiers first, one other key last.

    Raises:
        ActionError: no keys, an unknown name, or more than one key that is not a
            modifier (DeskLoop's combos hold modifiers and one key).
    """
    if not keys:
        raise ActionError("no keys to press")
    # A model may write a whole combo as one key (["CTRL+S"]); '+' alone is the key.
    split = [part for key in keys for part in (key.split("+") if len(key) > 1 else [key])]
    if any(part == "" for part in split):
        raise ActionError(f"malformed keys {keys!r} (an empty part around '+')")
    names = [normalize_key(key) for key in split]
    mods = [n for n in names if n in MODIFIERS]
    others = [n for n in names if n not in MODIFIERS]
    if len(others) > 1:
        raise ActionError(
            f"keys {keys!r} press {len(others)} keys that are not modifiers at once; "
            "a combo holds modifiers and one key"
        )
    # A modifier pressed alone ('shift') is a combo of its own.
    ordered = list(dict.fromkeys(mods)) + others
    combo = "+".join(ordered)
    parse_combo(combo)
    return combo


def xdotool_combos(text: str) -> list[str]:
    """xdotool `key` syntax (Anthropic's computer tool): combos joined by '+', several
    separated by spaces, pressed one after the other: 'ctrl+shift+t', 'Return Return'.

    Raises:
        ActionError: empty text or an unknown key name.
    """
    parts = text.split()
    if not parts:
        raise ActionError("no keys to press")
    combos = []
    for part in parts:
        if part == "+":
            keys = ["+"]
        elif part.endswith("++"):
            keys = [*part[:-2].split("+"), "+"]
        else:
            keys = part.split("+")
        if any(key == "" for key in keys):
            raise ActionError(f"malformed key combo {part!r} (empty part between '+')")
        combos.append(combo_of(keys))
    return combos
