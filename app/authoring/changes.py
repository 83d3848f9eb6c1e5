"""A fact that changed between two snapshots, and the comparisons every kind's
differ shares (`app.authoring.diff` and the per-app differs)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

EPSILON = 1e-4
"""Numbers closer than this are the same (dumps round to 6 decimals)."""


@dataclass(frozen=True)
class Change:
    """One fact that changed: `what` happened to `subject`, from `before` to `after`."""

    what: str
    """object_added, object_moved, modifier_added, material_changed, render_changed,
    clips_changed, effect_added, composition_added, guides_changed, layer_added,
    layer_changed, canvas_resized, image_resized, media_changed, ... (see docs/authoring.md)."""
    subject: str
    """What it happened to: an object, material, track, layer or setting name."""
    before: Any = None
    after: Any = None
    key: tuple[str, ...] = ()
    """Where it happened, for proposals: (object, modifier type, modifier name) for a
    modifier, (object, setting) for a light or camera, (target, track, clip, effect)
    for an effect, (track, property) for a track, (layer,) for a layer; else empty."""

    def words(self) -> str:
        text = f"{self.what.replace('_', ' ')} {self.subject}"
        if self.before is not None and self.after is not None:
            return f"{text}: {short_value(self.before)} → {short_value(self.after)}"
        if self.after is not None:
            return f"{text}: {short_value(self.after)}"
        if self.before is not None:
            return f"{text} (was {short_value(self.before)})"
        return text


def short_value(value: Any) -> str:
    if isinstance(value, list | tuple | dict) and not value:
        return "none"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list | tuple) and all(isinstance(v, int | float) for v in value):
        return "(" + ", ".join(short_value(v) for v in value) + ")"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(short_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {short_value(v)}" for k, v in value.items()) + "}"
    return repr(value) if isinstance(value, str) else str(value)


def differs(a: Any, b: Any) -> bool:
    """Whether two JSON values differ, numbers by more than EPSILON."""
    if isinstance(a, bool) or isinstance(b, bool):
        return bool(a != b)
    if isinstance(a, int | float) and isinstance(b, int | float):
        return not math.isclose(float(a), float(b), abs_tol=EPSILON)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) != len(b) or any(differs(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() != b.keys() or any(differs(a[k], b[k]) for k in a)
    return bool(a != b)


def by_name(items: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    return {str(item.get("name")): item for item in items if isinstance(item, Mapping)}


def changed_keys(
    old: Mapping[str, Any], new: Mapping[str, Any], keys: Iterable[str]
) -> dict[str, tuple[Any, Any]]:
    return {k: (old.get(k), new.get(k)) for k in keys if differs(old.get(k), new.get(k))}
