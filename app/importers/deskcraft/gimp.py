"""DeskCraft's GIMP evaluators → DeskLoop checks (app/importers/deskcraft/checks.py).

Most of DeskCraft's GIMP functions are one-off "complete" checkers whose thresholds live
in their code, not in the task file, so they are not mapped. The few here say what they
check in their name, and their task file names the output as the `expected` file: they
are mapped with `OUTPUT_IS_EXPECTED` (the checked path is the expected getter's).
"""

from __future__ import annotations

import re
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from app.importers.deskcraft.rules import Leaf, Rules, take

GIMP_CONFIG = "~/.config/GIMP/2.10"
"""Where GIMP 2.10 keeps gimprc and sessionrc (DeskCraft's `gimp_config_file` getter)."""


def config_value(path: str, rules: Rules) -> list[Leaf]:
    take(rules, {"key": "", "value": ""})
    # gimprc holds each setting as an S-expression on its own line: the Preferences dialog
    # writes (max-recent-files 15), gimp-gimprc-set writes (max-recent-files "15").
    key, value = re.escape(str(rules["key"])), re.escape(str(rules["value"]))
    return [{"check": "text_file", "path": path, "matches": [rf'^\({key} "?{value}"?\)$']}]


def resize_1920x1080(path: str, rules: Rules) -> list[Leaf]:
    take(rules, {})
    return [{"check": "image_size", "path": path, "width": 1920, "height": 1080}]


def white_to_alpha(path: str, rules: Rules) -> list[Leaf]:
    take(rules, {})
    # The white background became transparent: some pixels must be, not just an alpha channel.
    return [{"check": "image_has_alpha", "path": path, "min_transparent": 0.05}]


def has_icc_profile(path: Path) -> bool:
    """Whether an image file embeds an ICC profile. GIMP 2.10 opens such a file with a
    "Convert to RGB Working Space?" dialog first (measured on DeskCraft's photos)."""
    try:
        with Image.open(path) as image:
            return bool(image.info.get("icc_profile"))
    except (OSError, UnidentifiedImageError):
        return False
