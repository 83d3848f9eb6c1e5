"""Questionnaire instruments: the built-in ones a study names (raw NASA-TLX, SUS, the
Jian, Bisantz & Drury trust scale) and the items a study writes itself, each with its
scoring.

An instrument is a list of items and a scoring rule. A participant's answers are kept
as given (`Answer`: the item's id and its value, or None for an item left empty) and
scored here, the same way for the report and the export. The scoring of each built-in
instrument is the published one, written out in `docs/studies.md#questionnaires`:

- **NASA-TLX, raw** (Hart, 2006: "NASA-TLX 20 years later"): six subscales, each
  0–100 in steps of 5 (performance: 0 perfect, 100 failure). The score is their mean
  (raw TLX, no pairwise weighting); each subscale is a score of its own.
- **SUS** (Brooke, 1996): ten items, 1 (strongly disagree) to 5 (strongly agree).
  Odd items count value − 1, even items 5 − value; the sum times 2.5 is 0–100.
- **Trust in automation** (Jian, Bisantz & Drury, 2000): twelve items, 1 (not at
  all) to 7 (extremely). Items 1–5 are worded as distrust: they are reversed (8 −
  value) for the score, the mean of all twelve (1–7); `distrust` (the mean of items
  1–5 as given) and `trust` (the mean of items 6–12) are its subscales.

An instrument is scored only when every item of it was answered: a partial score
would not be comparable to a whole one. Custom items score themselves (a Likert item
its point, reversed when asked; a number its value); choices and text have no score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

ItemKind = Literal["scale", "likert", "choice", "multiple", "number", "text"]
AnswerValue = int | float | str | list[str] | None
"""What a participant gave: a point or number, a choice, choices, text, or nothing."""


@dataclass(frozen=True)
class Item:
    """One question. `scale` and `likert` items take a whole number from `low` to
    `high` in steps of `step`; `number` items any number in [low, high]; `choice`
    one of `options`, `multiple` any of them; `text` free text."""

    id: str
    kind: ItemKind
    prompt: str
    low: float = 0
    high: float = 0
    step: float = 1
    anchors: tuple[str, ...] = ()
    """Labels of the scale: two (its ends) or one per point."""
    options: tuple[str, ...] = ()
    reverse: bool = False
    """A Likert item worded against the construct: scored high + low − value."""
    unit: str = ""
    required: bool = True

    def problem(self, value: AnswerValue) -> str | None:
        """Why `value` is no answer to this item, or None when it is one."""
        if value is None:
            return "an answer is required" if self.required else None
        match self.kind:
            case "scale" | "likert" | "number":
                if isinstance(value, bool) or not isinstance(value, int | float):
                    return f"expected a number from {self.low:g} to {self.high:g}"
                if not self.low <= value <= self.high:
                    return f"{value:g} is outside {self.low:g}–{self.high:g}"
                if self.kind != "number" and (value - self.low) % self.step:
                    return f"{value:g} is not one of the scale's points (every {self.step:g})"
                return None
            case "choice":
                if value not in self.options:
                    return f"expected one of: {', '.join(self.options)}"
                return None
            case "multiple":
                if not isinstance(value, list) or not all(v in self.options for v in value):
                    return f"expected a list of: {', '.join(self.options)}"
                if len(set(value)) != len(value):
                    return "an option is chosen twice"
                return None
            case "text":
                return None if isinstance(value, str) else "expected text"

    def score(self, value: AnswerValue) -> float | None:
        """The item's own score: a point (reversed for a `reverse` item) or a number;
        None for choices, text, and no answer."""
        if self.kind in ("choice", "multiple", "text") or value is None:
            return None
        assert isinstance(value, int | float) and not isinstance(value, bool)
        return self.high + self.low - value if self.reverse else float(value)


@dataclass(frozen=True)
class Instrument:
    """A questionnaire: its items and how they score. `builtin` names a published
    instrument (scored by `score_instrument`); a study's own items are `custom`."""

    id: str
    title: str
    items: tuple[Item, ...]
    builtin: Literal["nasa_tlx", "sus", "trust", "custom"] = "custom"
    citation: str = ""

    def item(self, item_id: str) -> Item | None:
        return next((item for item in self.items if item.id == item_id), None)


_LOW_HIGH = ("Very low", "Very high")
_TLX_ITEMS = (
    ("mental", "Mental demand: how mentally demanding was the task?", _LOW_HIGH),
    ("physical", "Physical demand: how physically demanding was the task?", _LOW_HIGH),
    ("temporal", "Temporal demand: how hurried or rushed was the pace of the task?", _LOW_HIGH),
    (
        "performance",
        "Performance: how successful were you in accomplishing what you were asked to do?",
        ("Perfect", "Failure"),
    ),
    (
        "effort",
        "Effort: how hard did you have to work to accomplish your level of performance?",
        _LOW_HIGH,
    ),
    (
        "frustration",
        "Frustration: how insecure, discouraged, irritated, stressed and annoyed were you?",
        _LOW_HIGH,
    ),
)
NASA_TLX = Instrument(
    "nasa_tlx",
    "NASA Task Load Index (raw)",
    tuple(Item(key, "scale", text, 0, 100, 5, anchors) for key, text, anchors in _TLX_ITEMS),
    "nasa_tlx",
    "Hart & Staveland (1988); raw TLX as in Hart (2006)",
)

_SUS_ITEMS = (
    "I think that I would like to use this system frequently.",
    "I found the system unnecessarily complex.",
    "I thought the system was easy to use.",
    "I think that I would need the support of a technical person to be able to use this system.",
    "I found the various functions in this system were well integrated.",
    "I thought there was too much inconsistency in this system.",
    "I would imagine that most people would learn to use this system very quickly.",
    "I found the system very cumbersome to use.",
    "I felt very confident using the system.",
    "I needed to learn a lot of things before I could get going with this system.",
)


def _likert_items(
    texts: tuple[str, ...], points: int, anchors: tuple[str, str]
) -> tuple[Item, ...]:
    """Items q1, q2, ... of a published Likert scale, 1 to `points`."""
    return tuple(
        Item(f"q{n}", "likert", text, 1, points, 1, anchors) for n, text in enumerate(texts, 1)
    )


SUS = Instrument(
    "sus",
    "System Usability Scale",
    _likert_items(_SUS_ITEMS, 5, ("Strongly disagree", "Strongly agree")),
    "sus",
    "Brooke (1996)",
)

_TRUST_ITEMS = (
    "The system is deceptive.",
    "The system behaves in an underhanded manner.",
    "I am suspicious of the system's intent, action, or outputs.",
    "I am wary of the system.",
    "The system's actions will have a harmful or injurious outcome.",
    "I am confident in the system.",
    "The system provides security.",
    "The system has integrity.",
    "The system is dependable.",
    "The system is reliable.",
    "I can trust the system.",
    "I am familiar with the system.",
)
TRUST_DISTRUST_ITEMS = 5
"""Items 1–5 of the trust scale are worded as distrust."""
TRUST = Instrument(
    "trust",
    "Trust in automated systems",
    _likert_items(_TRUST_ITEMS, 7, ("Not at all", "Extremely")),
    "trust",
    "Jian, Bisantz & Drury (2000)",
)

BUILTINS: dict[str, Instrument] = {i.id: i for i in (NASA_TLX, SUS, TRUST)}


def answer_problems(instrument: Instrument, answers: Mapping[str, AnswerValue]) -> list[str]:
    """`ITEM: why` for each answer that is none to its item, each item left empty that
    needs one, and each answer to an item the instrument does not have."""
    problems = [
        f"{item.id}: {why}"
        for item in instrument.items
        if (why := item.problem(answers.get(item.id))) is not None
    ]
    known = {item.id for item in instrument.items}
    problems += [f"{key}: not an item of {instrument.id}" for key in answers if key not in known]
    return problems


def score_instrument(
    instrument: Instrument, answers: Mapping[str, AnswerValue]
) -> dict[str, float]:
    """The instrument's scores for one participant's answers: `score` (the whole
    instrument) and its subscales by name; a custom instrument's items each score by
    their id. Empty when a built-in instrument is not fully answered."""
    values = {item.id: answers.get(item.id) for item in instrument.items}
    if instrument.builtin == "custom":
        scored = {item.id: item.score(values[item.id]) for item in instrument.items}
        return {key: value for key, value in scored.items() if value is not None}
    if any(not isinstance(v, int | float) or isinstance(v, bool) for v in values.values()):
        return {}
    points = [float(v) for v in values.values()]  # type: ignore[arg-type]
    match instrument.builtin:
        case "nasa_tlx":
            return {"score": _mean(points), **dict(zip(values, points, strict=True))}
        case "sus":
            total = sum(p - 1 if n % 2 else 5 - p for n, p in enumerate(points, 1))
            return {"score": total * 2.5}
        case "trust":
            distrust = points[:TRUST_DISTRUST_ITEMS]
            trusting = points[TRUST_DISTRUST_ITEMS:]
            reversed_ = [8 - p for p in distrust]
            return {
                "score": _mean([*reversed_, *trusting]),
                "distrust": _mean(distrust),
                "trust": _mean(trusting),
            }
    raise AssertionError(instrument.builtin)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)
